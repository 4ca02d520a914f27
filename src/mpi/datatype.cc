#include "mpi/datatype.h"

namespace mccl::mpi {

std::size_t plain_size(MPI_Datatype type) {
  if (type == MPI_DATATYPE_NULL || type == MPI_PACKED) return 0;
  int ints = 0, addrs = 0, types = 0, combiner = 0;
  if (PMPI_Type_get_envelope(type, &ints, &addrs, &types, &combiner) != MPI_SUCCESS ||
      combiner != MPI_COMBINER_NAMED) {
    return 0;
  }
  int size = 0;
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  if (PMPI_Type_size(type, &size) != MPI_SUCCESS || size <= 0 ||
      PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent(type, &true_lb, &true_extent) != MPI_SUCCESS) {
    return 0;
  }
  if (lb != 0 || true_lb != 0 || extent != size || true_extent != size) return 0;
  return static_cast<std::size_t>(size);
}

std::size_t type_size(MPI_Datatype type) {
  int size = 0;
  if (type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0) return 0;
  return static_cast<std::size_t>(size);
}

}  // namespace mccl::mpi
