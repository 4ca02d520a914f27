// What an MPI datatype is to MCCL, which moves bytes.
//
// Every rank of a collective must decide alike whether MCCL serves it, but
// MPI lets ranks describe the same data differently: only the type
// signatures must match (the root may broadcast 4096 MPI_INT while the
// others receive one contiguous(4096, MPI_INT)). So the decision may depend
// only on what the signature fixes: its size in bytes (signature_size) and,
// for reductions, its one basic element type (element_type). How a rank's
// own datatype lays those bytes out in memory (raw or not) is that rank's
// business: a raw buffer is handed to MCCL as it is, any other one is packed
// into (or unpacked from) contiguous bytes around MCCL (staging.h).
#pragma once

#include <mpi.h>

#include <cstddef>

namespace mccl::mpi {

// MPI_Type_size: the bytes of one element's type signature, which every
// rank's matching arguments agree on. 0 when MPI cannot say (and for
// MPI_DATATYPE_NULL).
std::size_t type_size(MPI_Datatype type);

// True when `count` elements of `type` are exactly count * type_size
// contiguous bytes in signature order, so that MCCL may read and write the
// buffer itself: predefined types without gaps (MPI_PACKED included: on the
// homogeneous clusters MCCL serves, packed data is the native bytes) and
// contiguous or duplicated types of such. False for anything with gaps, a
// lower bound, or an order of its own.
bool is_raw(MPI_Datatype type);

// The one predefined type that every basic element of `type` is (the type
// itself when predefined), or MPI_DATATYPE_NULL when `type` mixes several
// or MPI cannot say. A reduction with a predefined MPI_Op requires one.
MPI_Datatype element_type(MPI_Datatype type);

}  // namespace mccl::mpi
