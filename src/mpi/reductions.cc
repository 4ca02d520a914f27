// MPI_Allreduce and MPI_Reduce_scatter_block over MCCL's reductions
// (Communicator::allreduce / reduce_scatter).
//
// Served only for the predefined types MCCL has kernels for and the
// predefined ops it implements (sum, prod, min, max); everything else goes
// to PMPI_. Integers give MPI's results bit for bit (both wrap around).
// Floating-point sums and products may differ from MPI's in their last
// bits: MCCL adds in one fixed order (the same on every rank and in every
// run), MPI in an order of its own; MPI promises no particular order either.
#include <cstddef>
#include <cstring>
#include <exception>
#include <vector>

#include "mccl/types.h"
#include "mpi/datatype.h"
#include "mpi/decide.h"
#include "mpi/export.h"
#include "mpi/requests.h"

namespace mccl::mpi {
namespace {

// MCCL's element type of an MPI type; false when MCCL has none. Sizes are
// checked, not assumed: MPI_LONG is 4 bytes on some ABIs.
bool mccl_type(MPI_Datatype t, DataType& out) {
  int size = 0;
  if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &size) != MPI_SUCCESS) return false;
  const bool signed_int = t == MPI_INT || t == MPI_INT32_T || t == MPI_INT64_T || t == MPI_LONG ||
                          t == MPI_LONG_LONG || t == MPI_LONG_LONG_INT;
  if (t == MPI_FLOAT && size == 4) {
    out = DataType::kFloat32;
  } else if (t == MPI_DOUBLE && size == 8) {
    out = DataType::kFloat64;
  } else if (signed_int && size == 4) {
    out = DataType::kInt32;
  } else if (signed_int && size == 8) {
    out = DataType::kInt64;
  } else if ((t == MPI_UINT8_T || t == MPI_UNSIGNED_CHAR) && size == 1) {
    out = DataType::kUInt8;
  } else {
    return false;
  }
  return true;
}

bool mccl_op(MPI_Op op, ReduceOp& out) {
  if (op == MPI_SUM) {
    out = ReduceOp::kSum;
  } else if (op == MPI_PROD) {
    out = ReduceOp::kProd;
  } else if (op == MPI_MIN) {
    out = ReduceOp::kMin;
  } else if (op == MPI_MAX) {
    out = ReduceOp::kMax;
  } else {
    return false;
  }
  return true;
}

// `blocks` blocks of `count` elements: the size compared with the threshold.
const char* reduce_check(MPI_Datatype type, MPI_Op op, int count, int blocks, const void* recv,
                         DataType& t, ReduceOp& o, std::size_t& bytes) {
  if (count < 0) return "MPI: negative count (MPI reports it)";
  // The size is set first: a call left to MPI is logged with it too.
  const bool known = mccl_type(type, t);
  bytes = static_cast<std::size_t>(count) * (known ? size_of(t) : type_size(type)) *
          static_cast<std::size_t>(blocks);
  if (!known) return "MPI: no MCCL element type for this datatype";
  if (!mccl_op(op, o)) return "MPI: user-defined or unsupported MPI_Op";
  if (recv == nullptr && bytes > 0) return "MPI: null receive buffer (MPI reports it)";
  return nullptr;
}

}  // namespace
}  // namespace mccl::mpi

using namespace mccl::mpi;

MCCL_MPI_EXPORT int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type,
                                  MPI_Op op, MPI_Comm comm) {
  mccl::DataType t{};
  mccl::ReduceOp o{};
  auto mc = decide(Kind::kAllreduce, comm, [&](const CommEntry&, std::size_t& bytes) {
              return reduce_check(type, op, count, 1, recvbuf, t, o, bytes);
            }).flat;  // never the leaders scheme (decide.cc)
  if (!mc) return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
  try {
    const void* send = sendbuf == MPI_IN_PLACE ? mccl::kInPlace : sendbuf;
    mccl::Request req = mc->comm.iallreduce(send, recvbuf, static_cast<std::size_t>(count), t, o);
    wait_served(req, "MPI_Allreduce");
  } catch (const std::exception& e) {
    return raise_error(*mc, "MPI_Allreduce", e.what());
  }
  return MPI_SUCCESS;
}

MCCL_MPI_EXPORT int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                             MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  mccl::DataType t{};
  mccl::ReduceOp o{};
  int size = 1;
  auto mc = decide(Kind::kReduceScatterBlock, comm, [&](const CommEntry& e, std::size_t& bytes) {
              size = e.size;
              return reduce_check(type, op, recvcount, e.size, recvbuf, t, o, bytes);
            }).flat;
  if (!mc) return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
  try {
    // MCCL's reduce_scatter is not in place: in place, the N input blocks
    // sit in recvbuf, so they are copied out first (the result overwrites
    // block 0 while other blocks are still being read).
    std::vector<std::byte> copy;
    const void* send = sendbuf;
    if (sendbuf == MPI_IN_PLACE) {
      const std::size_t all =
          static_cast<std::size_t>(recvcount) * mccl::size_of(t) * static_cast<std::size_t>(size);
      copy.resize(all);
      if (all > 0) std::memcpy(copy.data(), recvbuf, all);
      send = copy.data();
    }
    mccl::Request req =
        mc->comm.ireduce_scatter(send, recvbuf, static_cast<std::size_t>(recvcount), t, o);
    wait_served(req, "MPI_Reduce_scatter_block");
  } catch (const std::exception& e) {
    return raise_error(*mc, "MPI_Reduce_scatter_block", e.what());
  }
  return MPI_SUCCESS;
}
