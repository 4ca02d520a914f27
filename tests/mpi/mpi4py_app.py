"""mpi4py under libmccl_mpi: numpy buffers through MCCL, pickled objects
through MPI.

mpi4py initialises MPI with MPI_THREAD_MULTIPLE by default, which
libmccl_mpi serves. The upper-case methods (Bcast, Allgather, Allreduce)
hand MPI the numpy array's own buffer and datatype: MCCL serves them like
a C program's calls. The lower-case ones (bcast, allgather, allreduce)
pickle Python objects into MPI_BYTE messages of sizes that differ between
ranks, which MPI carries (tests/mpi/served_test.sh checks the statistics).

Prints "RESULT: PASS|FAIL" from rank 0 and "rank R finalizing" from every
rank (tests/mpi/run_mpi.sh).
"""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print(f"rank {rank}: FAIL: {what}", file=sys.stderr, flush=True)


assert MPI.Query_thread() == MPI.THREAD_MULTIPLE, "mpi4py asks for MPI_THREAD_MULTIPLE"

n = 1 << 16  # 256 KiB of float32 per rank
for it in range(10):
    root = it % size
    data = np.arange(n, dtype=np.float32) + it if rank == root else np.zeros(n, np.float32)
    comm.Bcast(data, root=root)
    check(np.array_equal(data, np.arange(n, dtype=np.float32) + it), f"Bcast {it}")

    mine = np.full(n // size, rank * 1000 + it, dtype=np.int64)
    everyone = np.empty(n // size * size, dtype=np.int64)
    comm.Allgather(mine, everyone)
    want = np.repeat(np.arange(size, dtype=np.int64) * 1000 + it, n // size)
    check(np.array_equal(everyone, want), f"Allgather {it}")

    values = np.full(n, rank + 1, dtype=np.float64)
    total = np.empty_like(values)
    comm.Allreduce(values, total, op=MPI.SUM)
    check(np.all(total == size * (size + 1) / 2), f"Allreduce {it}")

    comm.Allreduce(MPI.IN_PLACE, values, op=MPI.MAX)
    check(np.all(values == size), f"Allreduce in place {it}")

# Python objects: pickled, of different sizes on different ranks.
obj = comm.bcast({"root": 0, "payload": list(range(5000))} if rank == 0 else None, root=0)
check(obj["payload"][-1] == 4999, "bcast of an object")
gathered = comm.allgather("x" * (rank + 1))
check(gathered == ["x" * (q + 1) for q in range(size)], "allgather of objects")
check(comm.allreduce(rank, op=MPI.SUM) == size * (size - 1) // 2, "allreduce of an object")

failed = comm.allreduce(failures, op=MPI.SUM)
if rank == 0:
    print(f"RESULT: {'PASS' if failed == 0 else 'FAIL'} ({failed} failed checks)", flush=True)
print(f"rank {rank} finalizing", flush=True)
