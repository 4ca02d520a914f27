// Which MPI datatypes MCCL can move as raw bytes.
#pragma once

#include <mpi.h>

#include <cstddef>

namespace mccl::mpi {

// The size of one element when `type` is a predefined (MPI_COMBINER_NAMED)
// type without gaps (lower bound 0, extent == size), so that `count`
// elements are exactly count * size contiguous bytes. 0 otherwise: derived
// types (even contiguous ones: ranks may describe the same data with
// different types, and all ranks must decide alike), MPI_PACKED, pair types
// with padding such as MPI_SHORT_INT, MPI_DATATYPE_NULL.
std::size_t plain_size(MPI_Datatype type);

// MPI_Type_size of any datatype, for logs: 0 when MPI cannot say.
std::size_t type_size(MPI_Datatype type);

}  // namespace mccl::mpi
