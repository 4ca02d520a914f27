"""CUDA tensors through "mccl" (staged through pinned host memory), and FSDP.

4 processes share the one GPU of the machine (a process per GPU is the same
code with other device numbers): every collective of test_collectives.py
with CUDA tensors against gloo on CPU copies, DDP on the GPU against DDP
over gloo on the CPU, and test_fsdp.py's checks (FSDP1, FSDP2 and a
torch.compile'd step with functional collectives). Skipped, with the reason, where
torch.cuda.is_available() is false.
"""
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import harness
import test_collectives
import test_ddp
import test_fsdp

SIZE = 4


def check_collectives(rank, dev):
    t = torch.arange(1000, dtype=torch.float32, device=dev) * (rank + 1)
    dist.all_reduce(t)
    assert torch.equal(t.cpu(), torch.arange(1000, dtype=torch.float32) * 10), "all_reduce"
    b = torch.full((333,), float(rank), device=dev)
    dist.broadcast(b, src=2)
    assert torch.equal(b.cpu(), torch.full((333,), 2.0)), "broadcast"
    out = torch.empty(SIZE * 5, dtype=torch.bfloat16, device=dev)
    dist.all_gather_into_tensor(out, torch.full((5,), float(rank), dtype=torch.bfloat16,
                                                device=dev))
    want = torch.arange(SIZE, dtype=torch.bfloat16).repeat_interleave(5)
    assert torch.equal(out.cpu(), want), "all_gather_into_tensor"
    rs = torch.empty(7, device=dev)
    dist.reduce_scatter_tensor(rs, torch.ones(SIZE * 7, device=dev), op=dist.ReduceOp.AVG)
    assert torch.equal(rs.cpu(), torch.ones(7)), "reduce_scatter_tensor AVG"
    objs = [None] * SIZE
    dist.all_gather_object(objs, rank)
    assert objs == list(range(SIZE)), objs


def check_ddp(rank, gloo, dev):
    on_gpu = test_ddp.train(rank, None, dev)
    on_cpu = test_ddp.train(rank, gloo)
    everyone = [torch.empty_like(on_gpu) for _ in range(SIZE)]
    dist.all_gather(everyone, on_gpu, group=gloo)
    for r in range(SIZE):
        assert torch.equal(everyone[r], on_gpu), f"rank {r}'s parameters differ from rank {rank}'s"
    # The GPU's kernels sum in another order than the CPU's: a looser bound.
    diff = (on_gpu - on_cpu).abs().max().item()
    assert torch.allclose(on_gpu, on_cpu, rtol=1e-4, atol=1e-5), f"GPU vs CPU: {diff}"


def ranks(rank, size, port):
    import mccl_torch  # noqa: F401
    dist.init_process_group("mccl", init_method="env://", timeout=timedelta(seconds=60))
    dev = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    gloo = dist.new_group(backend="gloo")
    check_collectives(rank, dev)
    test_collectives.check_reductions(rank, gloo, dev)
    test_collectives.check_data_movement(rank, gloo, dev)
    check_ddp(rank, gloo, dev)
    test_fsdp.run_checks(rank, dev)  # FSDP1, FSDP2 and a compiled step
    dist.destroy_process_group()


if __name__ == "__main__":
    if not torch.cuda.is_available():
        print("SKIPPED: torch.cuda.is_available() is false (no GPU, or a CPU-only torch)")
        sys.exit(harness.SKIP)
    sys.exit(harness.run(ranks, SIZE, int(sys.argv[1]) if len(sys.argv) > 1 else 300))
