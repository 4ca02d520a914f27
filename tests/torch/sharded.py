"""A hand-written sharded training loop (FSDP's pattern) for
test_operations.py: every rank owns 1/N of the flat parameters; each step
all-gathers them, computes the gradient of its own batch, reduce-scatters
the gradients (AVG) and updates its shard. Run over "mccl_mcast"
(all_gather_into_tensor, reduce_scatter_tensor) and over gloo (all_gather
and all_reduce, which both Debian's and PyPI's gloo serve), the parameters
must end bitwise equal on every rank and within 1e-5 of gloo's.
"""
import torch
import torch.distributed as dist

STEPS = 6
LR = 0.05


def model_params():
    torch.manual_seed(0)  # the same initial weights on every rank
    model = torch.nn.Sequential(torch.nn.Linear(16, 48), torch.nn.Tanh(),
                                torch.nn.Linear(48, 48), torch.nn.Tanh(),
                                torch.nn.Linear(48, 3))
    return model, list(model.parameters())


def train(rank, size, group, mccl):
    model, params = model_params()
    flat = torch.cat([p.detach().reshape(-1) for p in params])
    shard_len = -(-flat.numel() // size)  # padded so every rank's shard is equal
    flat = torch.nn.functional.pad(flat, (0, shard_len * size - flat.numel()))
    shard = flat[rank * shard_len:(rank + 1) * shard_len].clone()
    for step in range(STEPS):
        full = torch.empty(shard_len * size)
        if mccl:
            dist.all_gather_into_tensor(full, shard, group=group)
        else:
            parts = [torch.empty(shard_len) for _ in range(size)]
            dist.all_gather(parts, shard, group=group)
            full = torch.cat(parts)
        offset = 0
        for p in params:  # the gathered parameters into the model
            p.data.copy_(full[offset:offset + p.numel()].view_as(p))
            offset += p.numel()
        g = torch.Generator().manual_seed(100 * step + rank)
        x = torch.randn(32, 16, generator=g)
        y = torch.randn(32, 3, generator=g)
        model.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        grads = torch.cat([p.grad.reshape(-1) for p in params])
        grads = torch.nn.functional.pad(grads, (0, shard_len * size - grads.numel()))
        if mccl:
            mine = torch.empty(shard_len)
            dist.reduce_scatter_tensor(mine, grads, op=dist.ReduceOp.AVG, group=group)
        else:
            dist.all_reduce(grads, group=group)
            mine = grads[rank * shard_len:(rank + 1) * shard_len] / size
        shard -= LR * mine
    parts = [torch.empty(shard_len) for _ in range(size)]
    dist.all_gather(parts, shard, group=group)
    return torch.cat(parts)


def check(rank, size, gloo):
    ours = train(rank, size, None, mccl=True)
    theirs = train(rank, size, gloo, mccl=False)
    everyone = [torch.empty_like(ours) for _ in range(size)]
    dist.all_gather(everyone, ours, group=gloo)
    assert all(torch.equal(e, ours) for e in everyone), "parameters differ between ranks"
    diff = (ours - theirs).abs().max().item()
    assert diff <= 1e-5, f"sharded training: mccl and gloo differ by {diff}"
    assert not torch.equal(ours, model_start(size, ours.numel())), "training did not move"


def model_start(size, n):
    _, params = model_params()
    flat = torch.cat([p.detach().reshape(-1) for p in params])
    return torch.nn.functional.pad(flat, (0, n - flat.numel()))
