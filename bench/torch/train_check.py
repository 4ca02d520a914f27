"""The training check of docs/compression.md: a small model trained with a
hand-written sharded data-parallel loop (the FSDP pattern: gradients
reduce-scattered, each rank updating its full-precision shard of the
parameters, the parameters all-gathered for the next step) through the "mccl" torch backend, once exact and
once with MCCL_COLL_COMPRESS=bound, N processes on this host (loopback).
Both runs start from the same weights and draw the same batches; the
compressed run's final loss must lie within --tolerance (1%) of the exact
run's.

    PYTHONPATH=build/src/torch /usr/bin/python3 bench/torch/train_check.py \\
        [--ranks 4] [--steps 300] [--bound 1e-4] [--tolerance 0.01] [--out FILE]
        [--save-tensors DIR]

The task: a multilayer perceptron (64 -> 256 -> 256 -> 10, 84,234
parameters) learns the labels a fixed random "teacher" network gives
Gaussian inputs; SGD with momentum, a batch of 64 per rank. The loss is the
cross-entropy of the final parameters on 4,096 held-out samples (every rank
holds the same parameters; rank 0 reports). `--bound` is absolute, for the
gradients' sums and the parameters alike (the environment's setting is one
per process group): the report gives the gradients' and the parameters'
standard deviations beside it. Prints one JSON line (also appended to
--out): both losses, their relative difference, the compression ratio and
the skipped calls from the backend's statistics, whether it passed.
--save-tensors writes the trained model's float32 parameters and one
step's gradients (params.f32, grads.f32: raw little-endian float32) for
the compression benchmarks' training-like data.

Exit status: 0 within the tolerance (and compressed: a ratio above 1.5, no
call run exact), 1 otherwise or when a rank failed.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "torch"))
import harness  # noqa: E402  (loopback settings, free port)

WIDTHS = [64, 256, 256, 10]
BATCH = 64
LR = 0.05
MOMENTUM = 0.9


def layers():
    """(weight shape, bias shape) per layer."""
    return [((o, i), (o,)) for i, o in zip(WIDTHS, WIDTHS[1:])]


def numel():
    return sum(w[0] * w[1] + b[0] for w, b in layers())


def unflatten(flat):
    """Views of the flat parameter vector, layer by layer."""
    out, at = [], 0
    for (o, i), (b,) in layers():
        w = flat[at:at + o * i].view(o, i)
        at += o * i
        out.append((w, flat[at:at + b]))
        at += b
    return out


def forward(params, x):
    for k, (w, b) in enumerate(params):
        x = x @ w.t() + b
        if k + 1 < len(params):
            x = torch.relu(x)
    return x


def teacher_labels(x):
    g = torch.Generator().manual_seed(7)
    t = [torch.randn(o, i, generator=g) / i ** 0.5 for (o, i), _ in layers()]
    h = x
    for k, w in enumerate(t):
        h = h @ w.t()
        if k + 1 < len(t):
            h = torch.relu(h)
    return h.argmax(dim=1)


def batch(step, rank, size):
    g = torch.Generator().manual_seed(1000003 * step + rank)
    x = torch.randn(BATCH, WIDTHS[0], generator=g)
    return x, teacher_labels(x)


def initial(padded):
    g = torch.Generator().manual_seed(1)
    flat = torch.zeros(padded)
    for (w, b) in unflatten(flat):
        w.copy_(torch.randn(w.shape, generator=g) * (2.0 / w.shape[1]) ** 0.5)
        b.zero_()
    return flat


def train(rank, size, port, args, mode, queue):
    if mode == "bound":
        os.environ["MCCL_COLL_COMPRESS"] = "bound"
        os.environ["MCCL_COLL_COMPRESS_BOUND"] = str(args.bound)
    else:
        os.environ["MCCL_COLL_COMPRESS"] = "off"
    import mccl_torch  # noqa: F401  (registers "mccl")
    dist.init_process_group("mccl", init_method="env://")
    torch.manual_seed(0)
    n = numel()
    padded = (n + size - 1) // size * size
    shard = padded // size
    flat = initial(padded)
    # The shard this rank owns stays in full precision (FSDP's and ZeRO's
    # master copy); the all-gathered parameters the model computes with
    # are the decoded ones, within the bound of it.
    master = flat[rank * shard:(rank + 1) * shard].clone()
    velocity = torch.zeros(shard)
    grad_shard = torch.empty(shard)
    grad_std = None
    started = time.perf_counter()
    for step in range(args.steps):
        p = flat.clone().requires_grad_(True)
        x, y = batch(step, rank, size)
        loss = torch.nn.functional.cross_entropy(forward(unflatten(p), x), y)
        loss.backward()
        grads = p.grad.detach()
        if step == 0:
            grad_std = grads[:n].std().item()
        dist.reduce_scatter_tensor(grad_shard, grads)  # sum
        grad_shard /= size
        velocity.mul_(MOMENTUM).add_(grad_shard)
        master -= LR * velocity
        dist.all_gather_into_tensor(flat, master)
        if args.save_tensors and mode == "off" and rank == 0 and step == args.steps - 1:
            os.makedirs(args.save_tensors, exist_ok=True)
            grads[:n].numpy().astype("<f4").tofile(os.path.join(args.save_tensors, "grads.f32"))
    seconds = time.perf_counter() - started
    pg = dist.distributed_c10d._get_default_group()
    if not hasattr(pg, "stats"):  # PyTorch 2.x: the group wraps the backend
        pg = pg._get_backend(torch.device("cpu"))
    stats = pg.stats()
    if rank == 0:
        g = torch.Generator().manual_seed(99)
        x = torch.randn(4096, WIDTHS[0], generator=g)
        with torch.no_grad():
            final = torch.nn.functional.cross_entropy(forward(unflatten(flat), x), teacher_labels(x))
        if args.save_tensors and mode == "off":
            flat[:n].numpy().astype("<f4").tofile(os.path.join(args.save_tensors, "params.f32"))
        queue.put({"mode": mode, "loss": final.item(), "seconds": seconds,
                   "grad_std": grad_std, "param_std": flat[:n].std().item(),
                   "stats": {k: stats.get(k, 0) for k in (
                       "compress_bytes_in", "compress_bytes_out", "compress_fast_link_skips",
                       "compress_raw_fallbacks")}})
    dist.barrier()
    dist.destroy_process_group()


def run_mode(args, mode):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = harness.free_port()
    procs = []
    for r in range(args.ranks):
        p = ctx.Process(target=_entry, args=(r, args.ranks, port, args, mode, queue))
        p.start()
        procs.append(p)
    deadline = time.time() + args.deadline
    result = None
    while result is None and time.time() < deadline:
        try:
            result = queue.get(timeout=1)
        except Exception:
            if all(not p.is_alive() for p in procs):
                break
    for p in procs:
        p.join(timeout=max(1, deadline - time.time()))
        if p.is_alive():
            p.kill()
    if result is None or any(p.exitcode != 0 for p in procs):
        raise SystemExit(f"train_check: the {mode} run failed (exit codes "
                         f"{[p.exitcode for p in procs]})")
    return result


def _entry(rank, size, port, args, mode, queue):
    harness.loopback_env(rank, size, port)
    train(rank, size, port, args, mode, queue)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--bound", type=float, default=1e-4)
    ap.add_argument("--tolerance", type=float, default=0.01)
    ap.add_argument("--deadline", type=float, default=300, help="seconds per run")
    ap.add_argument("--out", help="append the JSON line here")
    ap.add_argument("--save-tensors", help="folder for params.f32 and grads.f32")
    args = ap.parse_args()
    exact = run_mode(args, "off")
    lossy = run_mode(args, "bound")
    diff = abs(lossy["loss"] - exact["loss"]) / exact["loss"]
    s = lossy["stats"]
    ratio = s["compress_bytes_in"] / s["compress_bytes_out"] if s["compress_bytes_out"] else 1.0
    line = {"bench": "train_check", "ranks": args.ranks, "steps": args.steps, "bound": args.bound,
            "loss_exact": exact["loss"], "loss_compressed": lossy["loss"], "relative_diff": diff,
            "tolerance": args.tolerance,
            # Compressed for real: on loopback the link rate is unknown, so
            # nothing runs exact for a fast link.
            "passed": diff <= args.tolerance and ratio > 1.5 and not s["compress_fast_link_skips"],
            "compression_ratio": ratio, "compressed_stats_rank0": s,
            "grad_std_step0": exact["grad_std"], "param_std_final": exact["param_std"],
            "seconds_exact": exact["seconds"], "seconds_compressed": lossy["seconds"]}
    print(json.dumps(line))
    if args.out:
        with open(args.out, "a") as f:
            f.write(json.dumps(line) + "\n")
    return 0 if line["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
