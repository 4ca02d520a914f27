"""A rank dies and the training loop goes on: the survivors shrink the group,
then grow it back with a replacement.

4 processes; after a first all_reduce, rank 2 exits without a word. The
survivors' next all_reduce raises MCCL's peer failure; each then calls
ProcessGroupMCCL.shrink() on the group's MCCL backend (docs/elastic.md) and
gets the group of the three survivors (ranks in their old order) and the
ranks that died, [2] on every survivor. An all_reduce and an all_gather on
the new group are exact. A fifth process, never in the first group, then
joins: the survivors call grow() and it calls mccl_torch.join() on a
store of their own; it gets the state by one broadcast, and an all_reduce
of the four is exact.
"""
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import harness

SIZE = 4
DEAD = 2
JOINER = SIZE  # the harness's last process, not in the first group


def mccl_backend(group):
    """The MCCL process group under `group`: the group itself in torch 1.x,
    its CPU backend in 2.x."""
    import mccl_torch
    if isinstance(group, mccl_torch.ProcessGroupMCCL):
        return group
    return group._get_backend(torch.device("cpu"))


def grow_store(port):
    """Where the members and the joiner meet: keys of their own in the store that
    the first group's rank 0 serves (the launcher's address)."""
    return dist.PrefixStore("mccl-grow", dist.TCPStore("127.0.0.1", port, is_master=False,
                                                       timeout=timedelta(seconds=20)))


def check_grown(group, rank):
    """The state reaches the joiner by one broadcast; an all_reduce of all is exact."""
    assert group.rank() == rank and group.size() == SIZE, (group.rank(), group.size())
    state = torch.full((1000,), 42.0) if rank == 0 else torch.zeros(1000)
    group.broadcast([state]).wait()
    assert torch.equal(state, torch.full_like(state, 42.0)), state[:4]
    x = torch.full((1000,), float(rank + 1))
    group.allreduce([x]).wait()
    assert torch.equal(x, torch.full_like(x, float(sum(range(1, SIZE + 1)))))
    group.barrier().wait()


def join(port):
    import mccl_torch
    grown = mccl_torch.join(grow_store(port), SIZE - 1, SIZE, timedelta(seconds=20))
    check_grown(grown, SIZE - 1)
    print(f"rank {JOINER}: joined as rank {SIZE - 1} of {SIZE}", file=sys.stderr, flush=True)
    os._exit(0)


def ranks(rank, size, port):
    import mccl_torch  # noqa: F401
    if rank == JOINER:
        join(port)
    size = SIZE
    dist.init_process_group("mccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=size, timeout=timedelta(seconds=20))
    t = torch.ones(50000)
    dist.all_reduce(t)
    assert torch.equal(t, torch.full_like(t, float(size)))
    if rank == DEAD:
        os._exit(0)  # no goodbye: the sockets close as the process dies
    try:
        dist.all_reduce(t)
    except RuntimeError as e:
        assert "peer failure" in str(e), e
    else:
        raise AssertionError(f"rank {rank}: all_reduce with a dead rank returned")
    group, failed = mccl_backend(dist.distributed_c10d._get_default_group()).shrink()
    assert failed == [DEAD], failed
    new_rank = rank - (1 if rank > DEAD else 0)
    assert group.rank() == new_rank and group.size() == size - 1, (group.rank(), group.size())
    x = torch.full((1000,), float(new_rank + 1))
    group.allreduce([x]).wait()
    assert torch.equal(x, torch.full_like(x, float(sum(range(1, size)))))
    out = [torch.empty(1000) for _ in range(size - 1)]
    group.allgather([out], [torch.full((1000,), float(new_rank))]).wait()
    for r, o in enumerate(out):
        assert torch.equal(o, torch.full_like(o, float(r))), (r, o[:4])
    group.barrier().wait()
    print(f"rank {rank}: shrunk to rank {new_rank} of {size - 1}", file=sys.stderr, flush=True)
    grown = group.grow(grow_store(port), SIZE)
    check_grown(grown, new_rank)
    print(f"rank {rank}: grown back to {SIZE} ranks", file=sys.stderr, flush=True)
    os._exit(0)  # the default group is broken: no destroy_process_group


if __name__ == "__main__":
    sys.exit(harness.run(ranks, SIZE + 1, int(sys.argv[1]) if len(sys.argv) > 1 else 120))
