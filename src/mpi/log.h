// libmccl_mpi's log lines: "mccl_mpi rank R: ..." on stderr, R being the
// rank in MPI_COMM_WORLD, written whole through common/log's one sink.
// Warnings always print; debug lines only with MCCL_MPI_DEBUG=1.
#pragma once

namespace mccl::mpi {

void warnf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void debugf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace mccl::mpi
