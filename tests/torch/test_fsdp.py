"""FSDP1, FSDP2 (`fully_shard`) and a torch.compile'd step over "mccl".

4 processes train the same small model from the same initial weights on
their own batches. With the gradients averaged over the ranks that is one
model trained on every rank's batch at once, which each rank also computes
alone, without collectives (the reference). Afterwards the gathered
parameters must be bitwise equal on every rank and within 1e-5 of the
reference. The compiled step runs torch's functional collectives inside a
graph built by inductor and must equal the same step run eagerly.

Here the tensors are on the CPU; test_cuda.py runs the same checks on a GPU.
Debian's PyTorch 1.13 cannot import FSDP under Python 3.11: skipped there.
"""
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import harness

SIZE = 4
STEPS = 5
LR = 0.05


def new_model(dev):
    torch.manual_seed(0)  # the same initial weights on every rank
    return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 4)).to(dev)


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * rank + step)  # each rank its own data
    return torch.randn(32, 16, generator=g), torch.randn(32, 4, generator=g)


def reference():
    """The parameters after STEPS steps of SGD on the mean of every rank's
    loss gradient (what sharded data parallelism computes), on the CPU in
    float64 so that its own rounding does not count against the result."""
    model = new_model(torch.device("cpu")).double()
    for step in range(STEPS):
        grads = [torch.zeros_like(p) for p in model.parameters()]
        for r in range(SIZE):
            x, y = batch(r, step)
            model.zero_grad()
            torch.nn.functional.mse_loss(model(x.double()), y.double()).backward()
            for g, p in zip(grads, model.parameters()):
                g += p.grad / SIZE
        with torch.no_grad():
            for g, p in zip(grads, model.parameters()):
                p -= LR * g
    return torch.cat([p.detach().flatten() for p in model.parameters()]).float()


def train(rank, model, dev):
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(STEPS):
        x, y = batch(rank, step)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x.to(dev)), y.to(dev)).backward()
        opt.step()


def agree(rank, flat, what, dev):
    """Every rank holds `flat` bit for bit, and it is the reference's."""
    everyone = [None] * SIZE
    dist.all_gather_object(everyone, flat)
    for r in range(SIZE):
        assert torch.equal(everyone[r], flat), f"{what}: rank {r}'s parameters differ from rank {rank}'s"
    want = reference()
    diff = (flat - want).abs().max().item()
    # A GPU's kernels sum in another order than the CPU's: a looser bound there.
    tol = 1e-5 if dev.type == "cpu" else 1e-4
    assert torch.allclose(flat, want, rtol=tol, atol=tol), f"{what} against the reference: {diff}"
    assert not torch.equal(flat, torch.cat([p.detach().flatten() for p in
                                            new_model(torch.device("cpu")).parameters()])), \
        f"{what}: training changed nothing"


def check_fsdp1(rank, dev):
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    fsdp = FSDP(new_model(dev), device_id=dev, use_orig_params=True)
    train(rank, fsdp, dev)
    with FSDP.summon_full_params(fsdp):
        flat = torch.cat([p.detach().flatten().cpu() for p in fsdp.parameters()])
    agree(rank, flat, "FSDP1", dev)


def fully_shard_api():
    try:
        from torch.distributed.fsdp import fully_shard  # PyTorch >= 2.6
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard
    return fully_shard


def check_fsdp2(rank, dev):
    from torch.distributed.device_mesh import init_device_mesh
    fully_shard = fully_shard_api()
    mesh = init_device_mesh(dev.type, (SIZE,))
    model = new_model(dev)
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)  # one all-gather and reduce-scatter per layer
    fully_shard(model, mesh=mesh)
    train(rank, model, dev)
    flat = torch.cat([p.full_tensor().detach().flatten().cpu() for p in model.parameters()])
    agree(rank, flat, "FSDP2", dev)


def check_compiled_step(rank, dev):
    import torch.distributed._functional_collectives as funcol
    world = dist.group.WORLD

    def step(x):
        total = funcol.all_reduce(x * 2, "sum", world)
        gathered = funcol.all_gather_tensor(total + rank, 0, world)
        return funcol.reduce_scatter_tensor(gathered * gathered, "sum", 0, world)

    x = torch.arange(8, dtype=torch.float32, device=dev) + rank
    eager = step(x)
    compiled = torch.compile(step, fullgraph=True)(x)
    assert torch.equal(compiled.cpu(), eager.cpu()), f"compiled {compiled} != eager {eager}"
    total = 2 * (torch.arange(8.0) * SIZE + sum(range(SIZE)))
    want = SIZE * (total + rank) ** 2  # every rank's gathered block is the same
    assert torch.equal(eager.cpu(), want), f"step: {eager} != {want}"


def run_checks(rank, dev):
    check_fsdp1(rank, dev)
    check_fsdp2(rank, dev)
    check_compiled_step(rank, dev)


def ranks(rank, size, port):
    import mccl_torch  # noqa: F401
    dist.init_process_group("mccl", init_method="env://", timeout=timedelta(seconds=60))
    run_checks(rank, torch.device("cpu"))
    dist.destroy_process_group()


def main():
    if int(torch.__version__.split(".")[0]) < 2:
        print(f"SKIPPED: PyTorch {torch.__version__} cannot import FSDP under this Python "
              "(a dataclass error in torch.distributed._shard); PyTorch 2.x runs it")
        return harness.SKIP
    return harness.run(ranks, SIZE, int(sys.argv[1]) if len(sys.argv) > 1 else 300)


if __name__ == "__main__":
    sys.exit(main())
