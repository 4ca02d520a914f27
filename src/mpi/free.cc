// MPI_Comm_free: MCCL's state of the communicator goes first, once every
// rank is done with it (comm_cache.cc says why that needs a barrier).
// MPI_Comm_free is collective, and a correct program may not assume that a
// collective does not synchronise, so the barrier changes nothing for it.
#include "mpi/comm_cache.h"
#include "mpi/export.h"

MCCL_MPI_EXPORT int MPI_Comm_free(MPI_Comm* comm) {
  if (comm != nullptr) mccl::mpi::release_before_free(*comm);
  return PMPI_Comm_free(comm);
}
