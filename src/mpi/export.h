// The MPI entry points libmccl_mpi defines in place of the MPI library's
// (the library is built with hidden visibility; these must be seen).
#pragma once

#define MCCL_MPI_EXPORT extern "C" __attribute__((visibility("default")))
