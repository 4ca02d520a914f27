"""The "mccl" backend with MCCL_COLL_COMPRESS=bound (docs/compression.md):
float tensors of broadcast, all_gather_into_tensor and all_reduce (sum)
within the bound of the exact result and identical on every rank; integer
tensors and other ops exact; mccl_torch.set_compression per group (a
second group's own bound, "off", back to the environment's with None, bad
modes refused). 3 processes on loopback.
"""
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import harness

SIZE = 3
BOUND = 0.01


def gauss(rank, n, salt):
    return torch.randn(n, generator=torch.Generator().manual_seed(100 * rank + salt))


def same_everywhere(t, what):
    ref = t.clone()
    dist.broadcast(ref.view(torch.uint8), 0)  # as bytes: exact
    assert torch.equal(ref, t), f"{what}: ranks differ"


def ranks(rank, size, port):
    os.environ["MCCL_COLL_COMPRESS"] = "bound"
    os.environ["MCCL_COLL_COMPRESS_BOUND"] = str(BOUND)
    import mccl_torch  # noqa: F401  (registers "mccl")
    dist.init_process_group("mccl", init_method="env://", timeout=timedelta(seconds=30))
    n = 20000
    mine = gauss(rank, n, 1)
    out = torch.empty(n * size)
    dist.all_gather_into_tensor(out, mine)
    want = torch.cat([gauss(r, n, 1) for r in range(size)])
    err = (out.double() - want.double()).abs().max().item()
    assert 0 < err <= BOUND, f"all_gather_into_tensor: error {err}"
    same_everywhere(out, "all_gather_into_tensor")

    b = gauss(1, n, 2).double() if rank == 1 else torch.zeros(n, dtype=torch.float64)
    dist.broadcast(b, 1)
    err = (b - gauss(1, n, 2).double()).abs().max().item()
    assert 0 < err <= BOUND, f"broadcast: error {err}"

    s = mine.clone()
    dist.all_reduce(s)
    exact = sum(gauss(r, n, 1).double() for r in range(size))
    ulp = torch.nextafter(s.abs(), torch.tensor(float("inf"))) - s.abs()
    excess = ((s.double() - exact).abs() - ulp.double() / 2).max().item()
    assert excess <= BOUND, f"all_reduce: error past bound + ulp/2 by {excess - BOUND}"
    same_everywhere(s, "all_reduce")

    m = mine.clone()
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    assert torch.equal(m, torch.stack([gauss(r, n, 1) for r in range(size)]).max(0).values)
    ints = torch.arange(n, dtype=torch.int32) * (rank + 1)
    gathered = torch.empty(n * size, dtype=torch.int32)
    dist.all_gather_into_tensor(gathered, ints)
    assert torch.equal(gathered, torch.cat([torch.arange(n, dtype=torch.int32) * (r + 1)
                                            for r in range(size)]))
    per_group(rank, size, n)
    dist.destroy_process_group()


def gather_error(group, mine, want, n, size):
    out = torch.empty(n * size)
    dist.all_gather_into_tensor(out, mine, group=group)
    same_everywhere(out, "all_gather_into_tensor (per group)")
    return (out.double() - want.double()).abs().max().item()


def per_group(rank, size, n):
    import mccl_torch
    mine = gauss(rank, n, 3)
    want = torch.cat([gauss(r, n, 3) for r in range(size)])
    coarse = dist.new_group(backend="mccl")
    mccl_torch.set_compression("bound", coarse, bound=10 * BOUND)
    err = gather_error(coarse, mine, want, n, size)
    assert BOUND < err <= 10 * BOUND, f"the group's own bound: error {err}"
    err = gather_error(None, mine, want, n, size)
    assert 0 < err <= BOUND, f"the default group kept the environment's bound: error {err}"
    mccl_torch.set_compression("off")  # the default group
    assert gather_error(None, mine, want, n, size) == 0, "off: exact"
    mccl_torch.set_compression(None)
    err = gather_error(None, mine, want, n, size)
    assert 0 < err <= BOUND, f"None: the environment's bound again, error {err}"
    listed = [torch.empty(n) for _ in range(size)]
    dist.all_gather(listed, mine, group=coarse)  # the list form compresses too
    err = (torch.cat(listed).double() - want.double()).abs().max().item()
    assert BOUND < err <= 10 * BOUND, f"all_gather's list form: error {err}"
    for bad, kwargs in (("lz4", {}), ("bound", {"bound": 0.0})):
        try:
            mccl_torch.set_compression(bad, coarse, **kwargs)
        except ValueError as e:
            assert ("mode" if bad == "lz4" else "bound") in str(e), str(e)
        else:
            raise AssertionError(f"set_compression({bad!r}, {kwargs}) was accepted")
    try:
        mccl_torch.set_compression("off", dist.new_group(backend="gloo"))
    except ValueError as e:
        assert "not an MCCL group" in str(e), str(e)
    else:
        raise AssertionError("set_compression on a gloo group was accepted")


if __name__ == "__main__":
    sys.exit(harness.run(ranks, SIZE, int(sys.argv[1]) if len(sys.argv) > 1 else 120))
