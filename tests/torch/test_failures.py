"""A dead rank turns into an error on the survivors, never a hang.

4 processes joined through tcp:// (the other init method). After a first
all_reduce, rank 3 exits without a word; the next collective of the others
must raise MCCL's error (a peer failure or a timeout naming what was
awaited) within the group's timeout, from a plain call and from an async
work's wait(). The harness's deadline catches a hang. Before that, a
wait(timeout) on a collective a rank has not joined yet gives up.
"""
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import harness

SIZE = 4
DEAD = 3


def check_wait_timeout(rank, size, t):
    """Work.wait(timeout) gives up after its timeout, naming the call, while
    the collective stays in flight: rank DEAD joins only after the others'
    waits have given up (it learns so through the store), and a second wait
    then completes."""
    store = dist.distributed_c10d._get_default_store()
    if rank == DEAD:
        store.wait([f"gave_up_{r}" for r in range(size) if r != DEAD], timedelta(seconds=30))
        dist.all_reduce(t)
        return
    work = dist.all_reduce(t, async_op=True)
    try:
        work.wait(timeout=timedelta(milliseconds=200))
    except RuntimeError as e:
        assert "mccl all_reduce: not complete after 200 ms" in str(e), e
    else:
        raise AssertionError("wait(200 ms) returned before the last rank joined")
    store.set(f"gave_up_{rank}", "1")
    assert work.wait()


def ranks(rank, size, port):
    import mccl_torch  # noqa: F401
    dist.init_process_group("mccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=size, timeout=timedelta(seconds=10))
    t = torch.ones(100000)
    check_wait_timeout(rank, size, t)
    assert torch.equal(t, torch.full_like(t, float(size)))
    if rank == DEAD:
        os._exit(0)  # no goodbye: the sockets close as the process dies
    for call in ("all_reduce", "all_gather_into_tensor"):
        try:
            if call == "all_reduce":
                dist.all_reduce(t)
            else:
                work = dist.all_gather_into_tensor(torch.empty(size * t.numel()), t,
                                                   async_op=True)
                work.wait()
        except RuntimeError as e:
            msg = str(e)
            assert msg.startswith(f"mccl {call}:"), msg
            assert "peer failure" in msg or "timeout" in msg, msg
            print(f"rank {rank}: {call} raised: {msg}", file=sys.stderr, flush=True)
        else:
            raise AssertionError(f"rank {rank}: {call} with a dead rank returned")
    # Leave without destroy_process_group's collectives: the group is broken.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(harness.run(ranks, SIZE, int(sys.argv[1]) if len(sys.argv) > 1 else 120))
