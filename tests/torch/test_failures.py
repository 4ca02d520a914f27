"""A dead rank turns into an error on the survivors, never a hang.

4 processes joined through tcp:// (the other init method). After a first
all_reduce, rank 3 exits without a word; the next collective of the others
must raise MCCL's error (a peer failure or a timeout naming what was
awaited) within the group's timeout, from a plain call and from an async
work's wait(). The harness's deadline catches a hang.
"""
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import harness

SIZE = 4
DEAD = 3


def ranks(rank, size, port):
    import mccl_torch  # noqa: F401
    dist.init_process_group("mccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=size, timeout=timedelta(seconds=10))
    t = torch.ones(100000)
    dist.all_reduce(t)
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
