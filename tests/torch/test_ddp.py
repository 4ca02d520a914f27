"""DistributedDataParallel over "mccl" against the same training over gloo.

4 processes train the same small model from the same initial weights on
their own data, once with DDP over the mccl group and once over a gloo
group. Afterwards the parameters must be bitwise identical on every rank
(MCCL's allreduce gives every rank the same bits) and agree with gloo's up
to the rounding of another summation order.
"""
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import harness

SIZE = 4
STEPS = 8


def train(rank, group, dev=torch.device("cpu")):
    """The parameters after STEPS steps of DDP over `group`, on `dev`
    (test_cuda.py trains on a GPU), returned on the CPU."""
    torch.manual_seed(0)  # same initial weights everywhere
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 4)).to(dev)
    # A small bucket cap: several buckets, so several allreduces in flight.
    ddp = DDP(model, process_group=group, bucket_cap_mb=0.01,
              device_ids=[dev] if dev.type == "cuda" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(100 + rank)  # each rank its own data
    for _ in range(STEPS):
        x = torch.randn(32, 16, generator=g).to(dev)
        y = torch.randn(32, 4, generator=g).to(dev)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    return torch.cat([p.detach().flatten().cpu() for p in model.parameters()])


def ranks(rank, size, port):
    import mccl_torch  # noqa: F401
    dist.init_process_group("mccl", init_method="env://", timeout=timedelta(seconds=30))
    gloo = dist.new_group(backend="gloo")
    with_mccl = train(rank, None)
    with_gloo = train(rank, gloo)
    everyone = [torch.empty_like(with_mccl) for _ in range(size)]
    dist.all_gather(everyone, with_mccl, group=gloo)  # compared through the other backend
    for r in range(size):
        assert torch.equal(everyone[r], with_mccl), f"rank {r}'s parameters differ from rank {rank}'s"
    diff = (with_mccl - with_gloo).abs().max().item()
    assert torch.allclose(with_mccl, with_gloo, rtol=1e-5, atol=1e-6), f"mccl vs gloo: {diff}"
    assert not torch.equal(with_mccl, train_start()), "training changed nothing"
    dist.destroy_process_group()


def train_start():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    return torch.cat([p.detach().flatten() for p in model.parameters()])


if __name__ == "__main__":
    sys.exit(harness.run(ranks, SIZE, int(sys.argv[1]) if len(sys.argv) > 1 else 180))
