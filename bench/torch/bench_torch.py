"""all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single and
send/recv through torch.distributed: the "mccl" backend (registered as
mccl_mcast) against "gloo", N processes on this host (loopback), or one
process per host started by a launcher (--launched).

    PYTHONPATH=build/src/torch /usr/bin/python3 bench/torch/bench_torch.py \\
        [--ranks 4] [--sizes 1m,2m,4m,8m,16m,32m,64m] [--iters 10] [--warmup 2] [--out FILE]
        [--ops all_gather_into_tensor,reduce_scatter_tensor,all_to_all_single,send_recv]

--launched: this process is one rank of a job that tests/fabric/launch.sh
started (MCCL_RANK, MCCL_WORLD_SIZE, MCCL_BOOTSTRAP_ADDR=rank 0's address:port,
which becomes torch's MASTER_ADDR/MASTER_PORT; MCCL then bootstraps through
torch's store), and --iface names the interface whose tx_bytes count (each
rank its own; the figure is the busiest rank's). MCCL picks its interface
itself. Rank 0 prints the table.

SIZE is the full tensor: the output of the allgather, the input of the
reduce-scatter (float32; each rank's shard is SIZE / N), each rank's input
(and output) of all_to_all_single (SIZE / N to every rank), and the message
of send_recv, where every rank sends SIZE to its right neighbour and
receives SIZE from its left at once (isend and irecv, a ring shift: what a
pipeline stage does). Every iteration is
timed between barriers on every rank; the figure is the median over
iterations of the slowest rank. Bytes sent per rank: MCCL's own counters
(multicast payload, repairs served, point-to-point), and for both backends
the loopback interface's tx_bytes over the run divided by N (everything the
host sent on lo, so other traffic on lo counts too: run it on a quiet
machine). gloo in PyTorch 1.13 has neither call, so it runs the closest
equivalent (all_gather into the output's chunks; all_reduce of the input),
named in the "gloo_call" field. Prints a table, and one JSON line per row
(with the load average at the start and end of the row) to stdout and --out.
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

IFACE_TX = "/sys/class/net/{}/statistics/tx_bytes"
OPS = ("all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single", "send_recv")


def parse_size(s):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    s = s.strip().lower()
    return int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)


def iface_tx(iface):
    try:
        with open(IFACE_TX.format(iface)) as f:
            return int(f.read())
    except OSError:
        return -1


def mccl_bytes():
    """What this rank's MCCL communicator of the default group has sent."""
    pg = dist.distributed_c10d._get_default_group()
    if not hasattr(pg, "stats"):  # PyTorch 2.x: the group wraps the backend
        pg = pg._get_backend(torch.device("cpu"))
    s = pg.stats()
    return s["mcast_bytes_sent"] + s["repair_bytes_served"] + s["p2p_bytes_sent"]


def one_call(op, backend, out, inp, group, n):
    """Runs the call once; returns the name of what ran."""
    if op == "all_to_all_single":  # both backends have it
        dist.all_to_all_single(out, inp, group=group)
        return op
    if op == "send_recv":
        rank = dist.get_rank()
        works = [dist.irecv(out, src=(rank - 1) % n, group=group),
                 dist.isend(inp, dst=(rank + 1) % n, group=group)]
        for w in works:
            w.wait()
        return "isend+irecv"
    if op == "all_gather_into_tensor":
        if backend == "mccl":
            dist.all_gather_into_tensor(out, inp, group=group)
            return op
        dist.all_gather(list(out.chunk(n)), inp, group=group)
        return "all_gather"
    if backend == "mccl":
        dist.reduce_scatter_tensor(out, inp, group=group)
        return op
    dist.all_reduce(inp, group=group)
    return "all_reduce"


def measure(rank, n, op, backend, size, args, groups, ctl):
    group = groups[backend]
    elems = size // 4
    shard = elems // n
    if op == "all_gather_into_tensor":
        inp, out = torch.full((shard,), float(rank)), torch.empty(shard * n)
    elif op in ("all_to_all_single", "send_recv"):
        inp, out = torch.full((elems,), float(rank)), torch.empty(elems)
    else:
        inp, out = torch.ones(shard * n), torch.empty(shard)
    for _ in range(args.warmup):
        one_call(op, backend, out, inp, group, n)
    dist.barrier(group=ctl)
    load_start = os.getloadavg()
    tx0, mb0 = iface_tx(args.iface), mccl_bytes() if backend == "mccl" else 0
    times = []
    for _ in range(args.iters):
        dist.barrier(group=ctl)
        t0 = time.perf_counter()
        called = one_call(op, backend, out, inp, group, n)
        times.append(time.perf_counter() - t0)
    dist.barrier(group=ctl)
    tx1 = iface_tx(args.iface)
    mb1 = mccl_bytes() if backend == "mccl" else 0
    # The slowest rank per iteration, then the median over iterations.
    t = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=ctl)
    sent = torch.tensor([float(mb1 - mb0)], dtype=torch.float64)
    dist.all_reduce(sent, op=dist.ReduceOp.MAX, group=ctl)
    # lo is every rank's: its count shared out; a host's own link: the busiest.
    link = torch.tensor([float(tx1 - tx0) / (n if args.iface == "lo" else 1)],
                        dtype=torch.float64)
    dist.all_reduce(link, op=dist.ReduceOp.MAX, group=ctl)
    return {
        "op": op, "backend": backend, "call": called, "bytes": size, "ranks": n,
        "iters": args.iters, "median_max_us": statistics.median(t.tolist()) * 1e6,
        "min_max_us": min(t.tolist()) * 1e6,
        "iface": args.iface,
        "tx_bytes_per_rank_per_iter": link.item() / args.iters if tx0 >= 0 else None,
        "mccl_bytes_sent_max_rank_per_iter": sent.item() / args.iters if backend == "mccl"
        else None,
        "load_start": load_start, "load_end": os.getloadavg(),
    }


def rank_main(rank, n, port, args, master="127.0.0.1"):
    os.environ.update({"MASTER_ADDR": master, "MASTER_PORT": str(port), "RANK": str(rank),
                       "WORLD_SIZE": str(n)})
    if not args.launched:
        os.environ["MCCL_UDP_IFACE"] = "lo"
    import mccl_torch
    dist.init_process_group(mccl_torch.BACKEND, timeout=timedelta(seconds=120))
    ctl = dist.new_group(backend="gloo")  # barriers and the results
    groups = {"mccl": None, "gloo": dist.new_group(backend="gloo")}
    rows = []
    for size in args.sizes:
        for op in args.ops:
            for backend in ("mccl", "gloo"):  # in turn, so drift shows on both
                rows.append(measure(rank, n, op, backend, size, args, groups, ctl))
    if rank == 0:
        report(rows, args)
    dist.destroy_process_group()


def report(rows, args):
    where = "one per host" if args.launched else "on lo"
    print(f"# torch {torch.__version__}, {rows[0]['ranks']} ranks {where}, float32, "
          f"median over {args.iters} iterations of the slowest rank; tx bytes of {args.iface}")
    print(f"{'op':<24}{'backend':<8}{'size':>10}{'time_us':>12}{'GB/s':>8}"
          f"{'tx/rank':>14}{'mccl_sent':>12}  load1")
    lines = []
    for r in rows:
        gbs = r["bytes"] / r["median_max_us"] / 1e3
        lo = r["tx_bytes_per_rank_per_iter"]
        ms = r["mccl_bytes_sent_max_rank_per_iter"]
        print(f"{r['op']:<24}{r['backend']:<8}{r['bytes']:>10}{r['median_max_us']:>12.1f}"
              f"{gbs:>8.2f}{(f'{lo:.0f}' if lo is not None else '-'):>14}"
              f"{(f'{ms:.0f}' if ms is not None else '-'):>12}  {r['load_start'][0]:.2f}")
        lines.append(json.dumps({**r, "host": socket.gethostname(),
                                 "torch": torch.__version__}))
    print("\n".join(lines))
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n".join(lines) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--sizes", default="1m,2m,4m,8m,16m,32m,64m")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--out", help="append the JSON lines to this file")
    p.add_argument("--deadline", type=float, default=1800, help="seconds before giving up")
    p.add_argument("--launched", action="store_true",
                   help="one rank of a launch.sh job (MCCL_RANK, MCCL_WORLD_SIZE, ...)")
    p.add_argument("--iface", help="interface whose tx_bytes count (default: lo; veth0 "
                   "with --launched)")
    p.add_argument("--ops", default=",".join(OPS), help="comma-separated, of " + ", ".join(OPS))
    args = p.parse_args()
    args.ops = args.ops.split(",")
    for op in args.ops:
        if op not in OPS:
            p.error(f"unknown op {op}")
    args.iface = args.iface or ("veth0" if args.launched else "lo")
    if args.launched:
        args.ranks = int(os.environ["MCCL_WORLD_SIZE"])
    args.sizes = [parse_size(s) for s in args.sizes.split(",")]
    for s in args.sizes:
        if s % (4 * args.ranks):
            p.error(f"size {s} is not a multiple of 4 * ranks")
    if args.launched:
        # torch's store listens where MCCL's would have: rank 0's address.
        master, port = os.environ.pop("MCCL_BOOTSTRAP_ADDR").rsplit(":", 1)
        rank_main(int(os.environ["MCCL_RANK"]), args.ranks, int(port), args, master)
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.start_processes(rank_main, args=(args.ranks, port, args), nprocs=args.ranks,
                             join=False, start_method="spawn")
    end = time.monotonic() + args.deadline
    try:
        while not ctx.join(timeout=1):
            if time.monotonic() > end:
                sys.exit(f"bench_torch: not done after {args.deadline} s")
    finally:
        for proc in ctx.processes:
            if proc.is_alive():
                proc.kill()


if __name__ == "__main__":
    main()
