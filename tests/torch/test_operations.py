"""Every operation the "mccl_mcast" backend adds beyond the common
collectives, against gloo (or, where gloo has no such call, against what
each rank can compute itself): reduce, gather, scatter, all_to_all(_single)
even and uneven, send/recv chains, batch_isend_irecv, recv from any
source, the coalesced forms, AVG and PREMUL_SUM, uneven all_gather and
reduce_scatter lists, monitored_barrier, sub-groups, async works; then a
hand-written sharded training loop (sharded.py).

Run as `test_operations.py SIZE [DEADLINE_S]`: CTest runs 4 and 3 ranks.
"""
import inspect
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import harness
import sharded

TORCH2 = int(torch.__version__.split(".")[0]) >= 2
COUNTS = [0, 1, 1001, 70000]
FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
INTS = [torch.int32, torch.int64, torch.uint8]
# What moves as bytes: every dtype, bool and complex included.
MOVED = FLOATS + INTS + [torch.int8, torch.int16, torch.bool, torch.complex64]
OPS = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]


def sample(rank, count, dtype, salt=0):
    """Deterministic per (rank, salt): any rank can compute another's."""
    g = torch.Generator().manual_seed(1000 * rank + salt)
    if dtype.is_floating_point:
        return (torch.rand(count, generator=g, dtype=torch.float64) + 0.5).to(dtype)
    if dtype.is_complex:
        return torch.complex(torch.rand(count, generator=g, dtype=torch.float64),
                             torch.rand(count, generator=g, dtype=torch.float64)).to(dtype)
    return torch.randint(0, 4, (count,), generator=g).to(dtype)


def same(got, want, what):
    if got.dtype.is_floating_point or got.dtype.is_complex:
        # bfloat16 keeps 8 bits: a scaled sum of 4 rounds up to ~2% apart.
        tol = {torch.bfloat16: 3e-2, torch.float16: 1e-2}.get(got.dtype, 1e-5)
        ok = torch.allclose(got.to(torch.complex128), want.to(torch.complex128), rtol=tol,
                            atol=tol)
    else:
        ok = torch.equal(got, want)
    assert ok, f"{what}: mccl {got[:6].tolist()} != expected {want[:6].tolist()}"


def reference_sum(tensors_by_rank, op):
    """The reduction of every rank's tensor, computed locally in float64."""
    acc = None
    for t in tensors_by_rank:
        x = t.to(torch.complex128 if t.dtype.is_complex else torch.float64)
        if acc is None:
            acc = x.clone()
        elif op == dist.ReduceOp.SUM:
            acc += x
        elif op == dist.ReduceOp.PRODUCT:
            acc *= x
        elif op == dist.ReduceOp.MIN:
            acc = torch.minimum(acc, x)
        else:
            acc = torch.maximum(acc, x)
    return acc


def check_reduce(rank, size, gloo):
    cases = [(d, op) for d in FLOATS + INTS for op in OPS]
    cases += [(torch.int8, dist.ReduceOp.SUM), (torch.int8, dist.ReduceOp.PRODUCT)]
    for dtype, op in cases:
        for i, count in enumerate(COUNTS):
            root = i % size
            t = sample(rank, count, dtype)
            dist.reduce(t, dst=root, op=op)
            inputs = [sample(r, count, dtype) for r in range(size)]
            if dtype in (torch.bfloat16, torch.float16):  # gloo cannot: computed here
                want = reference_sum(inputs, op).to(dtype)
            else:
                want = sample(rank, count, dtype)
                if count:  # gloo divides by zero on empty tensors
                    dist.reduce(want, dst=root, op=op, group=gloo)
            if rank != root:
                assert torch.equal(t, sample(rank, count, dtype)), f"reduce changed rank {rank}"
                continue
            same(t, want, f"reduce {dtype} x{count} {op} root {root}")
    # Reductions gloo's Python path sends as complex tensors (reduce) work too.
    t = sample(rank, 1001, torch.complex64)
    dist.reduce(t, dst=0)
    if rank == 0:
        same(t, reference_sum([sample(r, 1001, torch.complex64) for r in range(size)],
                              dist.ReduceOp.SUM).to(torch.complex64), "reduce complex64")


def check_avg_premul(rank, size):
    """AVG and PREMUL_SUM, which gloo lacks, against the sum computed here."""
    ops = [("AVG", dist.ReduceOp.AVG, 1.0 / size)]
    if TORCH2:
        ops.append(("PREMUL_SUM", dist._make_nccl_premul_sum(2.5), 2.5))
    for name, op, scale in ops:
        for dtype in FLOATS:
            for count in COUNTS:
                what = f"{name} {dtype} x{count}"
                inputs = [sample(r, count * size, dtype, salt=3) for r in range(size)]
                want = (reference_sum(inputs, dist.ReduceOp.SUM) * scale).to(dtype)
                t = inputs[rank].clone()
                dist.all_reduce(t, op=op)
                same(t, want, "all_reduce " + what)
                t = inputs[rank].clone()
                dist.reduce(t, dst=size - 1, op=op)
                if rank == size - 1:
                    same(t, want, "reduce " + what)
                assert rank == size - 1 or torch.equal(t, inputs[rank]), "reduce input changed"
                mine = want[rank * count:(rank + 1) * count]
                out = torch.empty(count, dtype=dtype)
                inp = inputs[rank].clone()
                dist.reduce_scatter_tensor(out, inp, op=op)
                same(out, mine, "reduce_scatter_tensor " + what)
                assert torch.equal(inp, inputs[rank]), "reduce_scatter_tensor changed its input"
                dist.reduce_scatter(out, list(inputs[rank].chunk(size)) if count else
                                    [torch.empty(0, dtype=dtype)] * size, op=op)
                same(out, mine, "reduce_scatter " + what)
    # Complex sums and averages (torch hands all_reduce their real view).
    t = sample(rank, 1001, torch.complex128)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    same(t, reference_sum([sample(r, 1001, torch.complex128) for r in range(size)],
                          dist.ReduceOp.SUM), "all_reduce complex128")


def check_gather_scatter(rank, size, gloo):
    for dtype in MOVED:
        for i, count in enumerate(COUNTS):
            root = (i + 1) % size
            what = f"{dtype} x{count} root {root}"
            mine = sample(rank, count, dtype)
            outs = [torch.empty_like(mine) for _ in range(size)] if rank == root else None
            dist.gather(mine, outs, dst=root)
            if rank == root:
                for r in range(size):
                    assert torch.equal(outs[r], sample(r, count, dtype)), f"gather {what} {r}"
            ins = [sample(root * 10 + r, count, dtype) for r in range(size)]
            out = torch.empty_like(mine)
            dist.scatter(out, ins if rank == root else None, src=root)
            assert torch.equal(out, sample(root * 10 + rank, count, dtype)), f"scatter {what}"
            if dtype == torch.float32 and count:  # and as gloo does it
                g = [torch.empty_like(mine) for _ in range(size)] if rank == root else None
                dist.gather(mine, g, dst=root, group=gloo)
                assert rank != root or all(torch.equal(a, b) for a, b in zip(g, outs))
                g_out = torch.empty_like(mine)
                dist.scatter(g_out, ins if rank == root else None, src=root, group=gloo)
                assert torch.equal(g_out, out), f"scatter vs gloo {what}"


def split_rows(src, dst, size):
    """Rows rank `src` sends rank `dst` in the uneven all_to_all: some 0."""
    return (src * 3 + dst * 5) % (size + 2)


def check_all_to_all(rank, size, gloo):
    for dtype in MOVED:
        for count in COUNTS:
            what = f"{dtype} x{count}"
            # Even: block r of my input goes to rank r.
            inp = sample(rank, count * size, dtype)
            out = torch.empty_like(inp)
            dist.all_to_all_single(out, inp)
            want = torch.cat([sample(r, count * size, dtype)[rank * count:(rank + 1) * count]
                              for r in range(size)])
            assert torch.equal(out, want), f"all_to_all_single even {what}"
            if dtype == torch.float32:
                g = torch.empty_like(inp)
                dist.all_to_all_single(g, inp, group=gloo)
                assert torch.equal(g, out), f"all_to_all_single vs gloo {what}"
        # Uneven rows of 3 columns, and the list form.
        cols = 3
        in_splits = [split_rows(rank, r, size) for r in range(size)]
        out_splits = [split_rows(r, rank, size) for r in range(size)]
        inp = sample(rank, sum(in_splits) * cols, dtype, salt=5).view(-1, cols)
        out = torch.empty(sum(out_splits), cols, dtype=dtype)
        dist.all_to_all_single(out, inp, out_splits, in_splits)
        pieces = []
        for r in range(size):
            theirs = sample(r, sum(split_rows(r, q, size) for q in range(size)) * cols, dtype,
                            salt=5).view(-1, cols)
            start = sum(split_rows(r, q, size) for q in range(rank))
            pieces.append(theirs[start:start + split_rows(r, rank, size)])
        assert torch.equal(out, torch.cat(pieces)), f"all_to_all_single uneven {dtype}"
        outs = [torch.empty(split_rows(r, rank, size), cols, dtype=dtype) for r in range(size)]
        dist.all_to_all(outs, list(inp.split(in_splits)))
        assert all(torch.equal(a, b) for a, b in zip(outs, pieces)), f"all_to_all {dtype}"


def check_moe(rank, size):
    """An MoE layer's dispatch and combine: tokens go to the rank of their
    expert, which scales them by (expert + 1), and come back in order."""
    g = torch.Generator().manual_seed(rank)
    tokens = torch.randn(257, 16, generator=g)
    expert = torch.randint(0, size, (257,), generator=g)
    order = torch.argsort(expert, stable=True)
    send_counts = torch.bincount(expert, minlength=size)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)
    dispatched = torch.empty(int(recv_counts.sum()), 16)
    dist.all_to_all_single(dispatched, tokens[order], recv_counts.tolist(), send_counts.tolist())
    processed = dispatched * (rank + 1)
    back = torch.empty(257, 16)
    dist.all_to_all_single(back, processed, send_counts.tolist(), recv_counts.tolist())
    combined = torch.empty_like(back)
    combined[order] = back
    same(combined, tokens * (expert + 1).unsqueeze(1).float(), "MoE exchange")


def check_point_to_point(rank, size):
    right, left = (rank + 1) % size, (rank - 1) % size
    for dtype in MOVED:
        for count in COUNTS:
            # A pipeline: rank 0 feeds stage 1, each stage adds its rank.
            what = f"{dtype} x{count}"
            if rank == 0:
                x = sample(0, count, dtype)
                dist.send(x, 1)
                back = torch.empty_like(x)
                dist.recv(back, size - 1)
                want = x
                for r in range(1, size):
                    want = want + torch.tensor(r).to(dtype) if dtype != torch.bool else want
                assert torch.equal(back, want), f"pipeline {what}"
            else:
                x = torch.empty(count, dtype=dtype)
                dist.recv(x, rank - 1)
                if dtype != torch.bool:
                    x = x + torch.tensor(rank).to(dtype)
                dist.send(x, right)
    # batch_isend_irecv around the ring both ways, receives posted first.
    a, b = torch.empty(70000), torch.empty(70000)
    ops = [dist.P2POp(dist.irecv, a, left), dist.P2POp(dist.irecv, b, right),
           dist.P2POp(dist.isend, sample(rank, 70000, torch.float32), right),
           dist.P2POp(dist.isend, sample(rank, 70000, torch.float32, 1), left)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    assert torch.equal(a, sample(left, 70000, torch.float32)), "batch_isend_irecv from left"
    assert torch.equal(b, sample(right, 70000, torch.float32, 1)), "batch_isend_irecv from right"
    # recv from any source, tags kept apart, async works and futures.
    if rank == 0:
        seen = set()
        for _ in range(size - 1):
            t = torch.empty(5, dtype=torch.int64)
            src = dist.recv(t, tag=7)
            assert t.tolist() == [src] * 5, (src, t)
            seen.add(src)
        assert seen == set(range(1, size)), seen
        t = torch.empty(3)
        w = dist.irecv(t, src=size - 1, tag=3)
        assert w.wait(timeout=timedelta(seconds=20)) and t.tolist() == [3.0] * 3
        fut = dist.irecv(t, src=1, tag=4).get_future()
        assert fut.wait()[0].tolist() == [4.0] * 3
    else:
        if rank == size - 1:
            dist.isend(torch.full((3,), 3.0), 0, tag=3).wait()  # before the tag-7 one
        dist.send(torch.full((5,), rank, dtype=torch.int64), 0, tag=7)
        if rank == 1:
            dist.send(torch.full((3,), 4.0), 0, tag=4)


def check_coalesced_and_uneven(rank, size):
    # all_reduce_coalesced / all_gather_coalesced (both versions).
    ts = [sample(rank, n, torch.float64) for n in (0, 1, 1001)]
    dist.all_reduce_coalesced(ts)
    for t, n in zip(ts, (0, 1, 1001)):
        same(t, reference_sum([sample(r, n, torch.float64) for r in range(size)],
                              dist.ReduceOp.SUM), "all_reduce_coalesced")
    if TORCH2:  # torch.compile's functional collectives
        import torch.distributed._functional_collectives as funcol
        w = dist.group.WORLD
        ins = [sample(rank, n, torch.float32) for n in (1, 1001, 70000)]
        gather = getattr(funcol, "all_gather_single_coalesced", None) or \
            funcol.all_gather_into_tensor_coalesced  # the older name
        scatter = getattr(funcol, "reduce_scatter_single_coalesced", None) or \
            funcol.reduce_scatter_tensor_coalesced
        outs = gather(ins, w)
        for o, n in zip(outs, (1, 1001, 70000)):
            same(funcol.wait_tensor(o), torch.cat([sample(r, n, torch.float32)
                                                   for r in range(size)]), "ag_coalesced")
        big = [sample(rank, n * size, torch.float32, 2) for n in (1, 1001)]
        outs = scatter(big, "sum", [0, 0], w)
        for o, n in zip(outs, (1, 1001)):
            full = reference_sum([sample(r, n * size, torch.float32, 2) for r in range(size)],
                                 dist.ReduceOp.SUM)
            same(funcol.wait_tensor(o), full[rank * n:(rank + 1) * n].float(), "rs_coalesced")
        outs = [funcol.wait_tensor(o)
                for o in funcol.all_reduce_coalesced([ins[0], ins[1]], "avg", w)]
        same(outs[1], (reference_sum(
            [sample(r, 1001, torch.float32) for r in range(size)], dist.ReduceOp.SUM) /
            size).float(), "all_reduce_coalesced avg")
    # Uneven lists: rank r's block has r + 2 elements.
    mine = sample(rank, rank + 2, torch.float32)
    outs = [torch.empty(r + 2) for r in range(size)]
    dist.all_gather(outs, mine)
    assert all(torch.equal(outs[r], sample(r, r + 2, torch.float32)) for r in range(size))
    ins = [sample(rank, r + 2, torch.float32, 9) for r in range(size)]
    out = torch.empty(rank + 2)
    dist.reduce_scatter(out, ins)
    want = sum(sample(q, rank + 2, torch.float32, 9).double() for q in range(size))
    same(out, want.float(), "reduce_scatter uneven")


def check_groups_and_barriers(rank, size):
    members = [0, 2] if size == 3 else [0, 2, 3]
    sub = dist.new_group(members)
    if rank in members:
        k = members.index(rank)
        root = members[-1]
        outs = [torch.empty(1001) for _ in members] if rank == root else None
        w = dist.gather(sample(rank, 1001, torch.float32), outs, dst=root, group=sub,
                        async_op=True)
        assert w.wait(timeout=timedelta(seconds=20))
        if rank == root:
            assert all(torch.equal(o, sample(m, 1001, torch.float32))
                       for o, m in zip(outs, members))
        inp = torch.arange(len(members) * 2, dtype=torch.int64) + 100 * k
        out = torch.empty_like(inp)
        dist.all_to_all_single(out, inp, group=sub, async_op=True).get_future().wait()
        want = torch.cat([torch.arange(k * 2, k * 2 + 2) + 100 * j for j in range(len(members))])
        assert torch.equal(out, want), (out, want)
        nxt = members[(k + 1) % len(members)]
        prv = members[(k - 1) % len(members)]
        t = torch.empty(4)
        reqs = [dist.isend(torch.full((4,), float(rank)), nxt, group=sub),
                dist.irecv(t, prv, group=sub)]
        for r in reqs:
            r.wait()
        assert t.tolist() == [float(prv)] * 4
    # torch's Python serves monitored_barrier on gloo alone up to some 2.x release
    # (1.13 and 2.11 refuse every other backend by name; 2.15 takes any CPU
    # backend): there the refusal is torch's, on every rank, before any message.
    if "only implemented for GLOO" in inspect.getsource(dist.monitored_barrier):
        try:
            dist.monitored_barrier(timeout=timedelta(seconds=5))
            raise AssertionError("torch's monitored_barrier served a backend other than gloo")
        except (RuntimeError, ValueError) as e:
            assert "GLOO" in str(e), e
        return
    dist.monitored_barrier(timeout=timedelta(seconds=20))
    mb = dist.new_group(list(range(size)))
    if rank != 1:  # rank 1 stays away: rank 0 names it
        try:
            dist.monitored_barrier(group=mb, timeout=timedelta(seconds=2))
            raise AssertionError("monitored_barrier passed without rank 1")
        except RuntimeError as e:
            assert ("rank(s) 1 did not" in str(e)) if rank == 0 else "rank 0" in str(e), e


def check_errors(rank, size):
    def expect(fn, *words):
        try:
            fn()
        except (RuntimeError, ValueError) as e:
            assert all(w in str(e) for w in words), f"{words} not in: {e}"
            return str(e)
        raise AssertionError(f"no error; expected one naming {words}")
    expect(lambda: dist.reduce(torch.ones(3, dtype=torch.int8), 0, op=dist.ReduceOp.MAX),
           "mccl reduce", "cannot reduce Char")
    expect(lambda: dist.all_to_all_single(torch.empty(5), torch.empty(5)),
           "mccl all_to_all_single", "do not split evenly")
    expect(lambda: dist.reduce(torch.ones(3), 0, op=dist.ReduceOp.BXOR), "mccl reduce", "BXOR")
    # A receive of the wrong size: the receiver's error names the sender.
    if rank == 0:
        dist.send(torch.ones(8), 1)
    elif rank == 1:
        expect(lambda: dist.recv(torch.empty(4), 0), "mccl recv", "16 bytes", "matched a message of 32 bytes")
    # Ranks that disagree on all_to_all sizes: the rank that receives too
    # little names the sender (the others may finish first); the group is
    # then broken on every rank.
    bad = dist.new_group(list(range(size)))
    rows = [2] * size
    mine = rows if rank != 1 else [1] + rows[1:]
    call = lambda: dist.all_to_all_single(torch.empty(sum(rows)), torch.empty(sum(mine)), rows,
                                          mine, group=bad)
    if rank == 0:
        expect(call, "mccl all_to_all_single", "expects 8 bytes from rank 1, which sends 4")
    else:
        try:
            call()
        except RuntimeError:
            pass
    expect(lambda: dist.all_reduce(torch.ones(2), group=bad), "mccl all_reduce")
    dist.barrier()  # the default group is still in step


def step(rank, what):
    print(f"rank {rank}: {what}", file=sys.stderr, flush=True)


def ranks(rank, size, port):
    import mccl_torch
    assert "mccl_mcast" in mccl_torch.BACKEND_NAMES
    dist.init_process_group("mccl_mcast", init_method="env://", timeout=timedelta(seconds=30))
    assert dist.get_backend() == "mccl_mcast"
    gloo = dist.new_group(backend="gloo")
    for name, check in [("reduce", lambda: check_reduce(rank, size, gloo)),
                        ("avg_premul", lambda: check_avg_premul(rank, size)),
                        ("gather_scatter", lambda: check_gather_scatter(rank, size, gloo)),
                        ("all_to_all", lambda: check_all_to_all(rank, size, gloo)),
                        ("moe", lambda: check_moe(rank, size)),
                        ("point_to_point", lambda: check_point_to_point(rank, size)),
                        ("coalesced_and_uneven", lambda: check_coalesced_and_uneven(rank, size)),
                        ("groups_and_barriers", lambda: check_groups_and_barriers(rank, size)),
                        ("sharded_training", lambda: sharded.check(rank, size, gloo)),
                        ("errors", lambda: check_errors(rank, size))]:
        step(rank, name)
        check()
    dist.destroy_process_group()


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    sys.exit(harness.run(ranks, n, int(sys.argv[2]) if len(sys.argv) > 2 else 300))
