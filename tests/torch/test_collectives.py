"""Every collective of the "mccl" backend against the same call through gloo.

4 processes on loopback; each process imports torch once and runs every
check, so the test costs few interpreter starts. Reductions over floats may
differ from gloo's in the last bits (another order of the sums), so floats
are compared with a tolerance and integers exactly.
"""
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import harness

SIZE = 4
DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int32, torch.int64,
          torch.uint8]
# 0 and 1 element, an odd count, and more than one datagram.
COUNTS = [0, 1, 1001, 70000]
OPS = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]


def sample(rank, count, dtype, salt=0):
    """Deterministic per rank; small values so products stay finite."""
    g = torch.Generator().manual_seed(1000 * rank + salt)
    if dtype.is_floating_point:
        return (torch.rand(count, generator=g, dtype=torch.float64) + 0.5).to(dtype)
    return torch.randint(0, 4, (count,), generator=g).to(dtype)


def same(got, want, what):
    if got.dtype.is_floating_point:
        tol = 1e-2 if got.dtype in (torch.bfloat16, torch.float16) else 1e-5
        ok = torch.allclose(got.double(), want.double(), rtol=tol, atol=tol)
    else:
        ok = torch.equal(got, want)
    assert ok, f"{what}: mccl {got[:8].tolist()} != gloo {want[:8].tolist()}"


CPU = torch.device("cpu")


def check_reductions(rank, gloo, dev=CPU):
    """mccl on tensors on `dev` (test_cuda.py passes a GPU), gloo on CPU copies."""
    for dtype in DTYPES:
        for count in COUNTS:
            for op in OPS:
                what = f"all_reduce {dtype} x{count} {op} on {dev}"
                want = sample(rank, count, dtype)
                t = want.to(dev, copy=True)
                dist.all_reduce(t, op=op)
                if dtype == torch.bfloat16:  # gloo cannot: reduce the float32 copy
                    want = want.float()
                dist.all_reduce(want, op=op, group=gloo)
                same(t.cpu(), want.to(dtype), what)
            # reduce_scatter(_tensor): gloo has neither, so all_reduce + slice.
            inp = sample(rank, SIZE * count, dtype, salt=1)
            full = inp.double() if dtype == torch.bfloat16 else inp.clone()
            dist.all_reduce(full, group=gloo)
            mine = full[rank * count:(rank + 1) * count].to(dtype)
            out = torch.empty(count, dtype=dtype, device=dev)
            dist.reduce_scatter_tensor(out, inp.to(dev))
            same(out.cpu(), mine, f"reduce_scatter_tensor {dtype} x{count} on {dev}")
            out2 = torch.empty(count, dtype=dtype, device=dev)
            dist.reduce_scatter(out2, list(inp.to(dev).chunk(SIZE)) if count else
                                [torch.empty(0, dtype=dtype, device=dev)] * SIZE)
            same(out2.cpu(), mine, f"reduce_scatter {dtype} x{count} on {dev}")
    # AVG: gloo has none; the sum through gloo, divided.
    want = sample(rank, 1001, torch.float32)
    t = want.to(dev, copy=True)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    dist.all_reduce(want, group=gloo)
    same(t.cpu(), want / SIZE, f"all_reduce AVG on {dev}")


def check_data_movement(rank, gloo, dev=CPU):
    """mccl on tensors on `dev`, gloo on CPU copies."""
    for dtype in (torch.float32, torch.uint8, torch.int64, torch.int8):
        for count in COUNTS:
            for root in (0, SIZE - 1):
                want = sample(rank, count, torch.uint8).to(dtype)
                t = want.to(dev, copy=True)
                dist.broadcast(t, src=root)
                dist.broadcast(want, src=root, group=gloo)
                assert torch.equal(t.cpu(), want), f"broadcast {dtype} x{count} root {root} on {dev}"
            mine = sample(rank, count, torch.uint8).to(dtype)
            t = mine.to(dev, copy=True)
            outs = [torch.empty_like(t) for _ in range(SIZE)]
            wants = [torch.empty_like(mine) for _ in range(SIZE)]
            dist.all_gather(outs, t)
            if count:  # gloo divides by zero on empty tensors (SIGFPE)
                dist.all_gather(wants, mine, group=gloo)
            for r in range(SIZE):
                assert torch.equal(outs[r].cpu(), wants[r]), \
                    f"all_gather {dtype} x{count} block {r} on {dev}"
            flat = torch.empty(SIZE * count, dtype=dtype, device=dev)
            dist.all_gather_into_tensor(flat, t)
            assert torch.equal(flat.cpu(), torch.cat(wants)), \
                f"all_gather_into_tensor {dtype} x{count} on {dev}"
            # In place: this rank's block of the output is the input.
            flat2 = torch.zeros(SIZE * count, dtype=dtype, device=dev)
            block = flat2[rank * count:(rank + 1) * count]
            block.copy_(t)
            dist._all_gather_base(flat2, block)
            assert torch.equal(flat2.cpu(), torch.cat(wants)), \
                f"_all_gather_base in place x{count} on {dev}"
    # Bytes of any dtype move, bool included (which gloo cannot).
    t = (sample(rank, 999, torch.uint8) > 1).to(dev)
    dist.broadcast(t, src=1)
    assert torch.equal(t.cpu(), sample(1, 999, torch.uint8) > 1), f"broadcast bool on {dev}"


def check_objects_and_groups(rank):
    objs = [None] * SIZE
    dist.all_gather_object(objs, {"rank": rank, "payload": "x" * (rank * 300)})
    assert [o["rank"] for o in objs] == list(range(SIZE)), objs
    lst = [f"from root {rank}", rank] if rank == 2 else [None, None]
    dist.broadcast_object_list(lst, src=2)
    assert lst == ["from root 2", 2], lst
    dist.barrier()
    # A sub-group: every rank calls new_group, its members use it.
    sub = dist.new_group([0, 2, 3])
    if rank in (0, 2, 3):
        t = torch.full((5,), float(rank))
        dist.all_reduce(t, group=sub)
        assert torch.equal(t, torch.full((5,), 5.0)), t
        g = [torch.empty(1) for _ in range(3)]
        dist.all_gather(g, torch.tensor([float(rank)]), group=sub)
        assert [x.item() for x in g] == [0.0, 2.0, 3.0], g
    # async_op: a work object whose wait() and future complete.
    t = torch.ones(3000)
    work = dist.all_reduce(t, async_op=True)
    assert work.wait(timeout=timedelta(seconds=20))
    assert work.is_completed() and work.is_success()
    assert torch.equal(t, torch.full((3000,), float(SIZE)))
    fut = dist.all_reduce(torch.ones(7), async_op=True).get_future()
    assert torch.equal(fut.wait()[0], torch.full((7,), float(SIZE)))


def expect_error(fn, *words):
    try:
        fn()
    except (RuntimeError, ValueError) as e:
        for w in words:
            assert w in str(e), f"'{w}' not in: {e}"
        return str(e)
    raise AssertionError(f"no error; expected one naming {words}")


def check_errors(rank):
    """Refusals raise on the caller's rank, naming the call; then ranks that
    disagree on a size raise MCCL's error on every rank."""
    t = torch.ones(8)
    expect_error(lambda: dist.all_reduce(t, op=dist.ReduceOp.BAND), "all_reduce", "BAND")
    expect_error(lambda: dist.all_reduce(torch.ones(8, dtype=torch.int32),
                                         op=dist.ReduceOp.AVG), "all_reduce", "AVG")
    expect_error(lambda: dist.all_reduce(torch.ones(4, 4).t()), "all_reduce", "contiguous")
    expect_error(lambda: dist.all_reduce(torch.ones(3, dtype=torch.bool)), "all_reduce", "Bool")
    expect_error(lambda: dist.all_gather_into_tensor(torch.empty(5), t),
                 "all_gather_into_tensor")
    expect_error(lambda: dist.reduce_scatter_tensor(torch.empty(3), t), "reduce_scatter_tensor")
    expect_error(lambda: dist.all_reduce(torch.ones(3, dtype=torch.int16)), "all_reduce", "Short")
    dist.all_reduce(t)  # the group is still in step after refusals
    assert torch.equal(t, torch.full((8,), float(SIZE)))
    # Sizes that differ between ranks: MCCL's mismatch, on a group of its
    # own (a mismatch breaks the communicator it happens on).
    bad = dist.new_group(list(range(SIZE)))
    msg = expect_error(lambda: dist.all_reduce(torch.ones(10 + rank), group=bad), "all_reduce")
    # Every rank learns of the disagreement (each names the two ranks that
    # differ), none merely times out.
    assert "mismatch between ranks" in msg and "disagrees with rank" in msg, msg
    expect_error(lambda: dist.all_reduce(torch.ones(4), group=bad), "all_reduce")
    dist.all_reduce(t)  # other groups are unaffected
    assert torch.equal(t, torch.full((8,), float(SIZE * SIZE)))


def step(rank, what):
    print(f"rank {rank}: {what}", file=sys.stderr, flush=True)


def ranks(rank, size, port):
    import mccl_torch  # noqa: F401  (registers "mccl")
    dist.init_process_group("mccl", init_method="env://", timeout=timedelta(seconds=30))
    assert dist.get_backend() == "mccl" and dist.get_world_size() == size
    gloo = dist.new_group(backend="gloo")
    step(rank, "check_reductions")
    check_reductions(rank, gloo)
    step(rank, "check_data_movement")
    check_data_movement(rank, gloo)
    step(rank, "check_objects_and_groups")
    check_objects_and_groups(rank)
    step(rank, "check_errors")
    check_errors(rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(harness.run(ranks, SIZE, int(sys.argv[1]) if len(sys.argv) > 1 else 240))
