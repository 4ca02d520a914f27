// MPI_Allreduce and MPI_Reduce_scatter_block: the hooks for MCCL's
// reductions.
//
// HOOK (issue 6, later): mccl::Communicator gains reduce_scatter and
// allreduce in a parallel change. Until that API is settled these calls are
// decided like the others (and counted) but always go to PMPI_. To serve
// them, build with -DMCCL_MPI_WITH_REDUCTIONS=1: the block below maps
// MPI types and ops onto mccl::DataType / mccl::ReduceOp and calls
// Communicator::iallreduce / ireduce_scatter. Floating-point results may
// then differ from MPI's in their last bits (another, fixed, reduction
// order; MPI promises no order either).
#include <cstddef>
#include <exception>

#include "mpi/datatype.h"
#include "mpi/decide.h"
#include "mpi/export.h"
#include "mpi/requests.h"

#ifndef MCCL_MPI_WITH_REDUCTIONS
#define MCCL_MPI_WITH_REDUCTIONS 0
#endif
#if MCCL_MPI_WITH_REDUCTIONS
#include "mccl/types.h"
#endif

namespace mccl::mpi {
namespace {

// MCCL's element types, by MPI type: -1 when MCCL has no such type. The
// values are mccl::DataType's (fixed: the C API mirrors them).
int mccl_type(MPI_Datatype t) {
  if (t == MPI_FLOAT) return 0;
  if (t == MPI_DOUBLE) return 1;
  if (t == MPI_INT32_T || (t == MPI_INT && sizeof(int) == 4)) return 4;
  if (t == MPI_INT64_T || (t == MPI_LONG && sizeof(long) == 8) ||
      (t == MPI_LONG_LONG && sizeof(long long) == 8)) {
    return 5;
  }
  if (t == MPI_UINT8_T || t == MPI_UNSIGNED_CHAR) return 6;
  return -1;
}

// mccl::ReduceOp's values: sum, prod, min, max.
int mccl_op(MPI_Op op) {
  if (op == MPI_SUM) return 0;
  if (op == MPI_PROD) return 1;
  if (op == MPI_MIN) return 2;
  if (op == MPI_MAX) return 3;
  return -1;
}

const char* reduce_check(MPI_Datatype type, MPI_Op op, int count, std::size_t per_rank_factor,
                         std::size_t& bytes) {
  if (mccl_type(type) < 0) return "MPI: no MCCL element type for this datatype";
  if (mccl_op(op) < 0) return "MPI: user-defined or unsupported MPI_Op";
  if (count < 0) return "MPI: negative count (MPI reports it)";
  bytes = static_cast<std::size_t>(count) * plain_size(type) * per_rank_factor;
  if (!MCCL_MPI_WITH_REDUCTIONS) return "MPI: reductions are not served yet (src/mpi/reductions.cc)";
  return nullptr;
}

}  // namespace
}  // namespace mccl::mpi

using namespace mccl::mpi;

MCCL_MPI_EXPORT int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count,
                                  MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  auto mc = decide(Kind::kAllreduce, comm, [&](const CommEntry&, std::size_t& bytes) {
    return reduce_check(type, op, count, 1, bytes);
  });
  if (!mc) return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
#if MCCL_MPI_WITH_REDUCTIONS
  try {
    const void* send = sendbuf == MPI_IN_PLACE ? mccl::kInPlace : sendbuf;
    mccl::Request req = mc->comm.iallreduce(send, recvbuf, static_cast<std::size_t>(count),
                                            static_cast<mccl::DataType>(mccl_type(type)),
                                            static_cast<mccl::ReduceOp>(mccl_op(op)));
    wait_served(req, "MPI_Allreduce");
  } catch (const std::exception& e) {
    return raise_error(*mc, "MPI_Allreduce", e.what());
  }
  return MPI_SUCCESS;
#else
  return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);  // not reached
#endif
}

MCCL_MPI_EXPORT int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                             MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  auto mc = decide(Kind::kReduceScatterBlock, comm, [&](const CommEntry& e, std::size_t& bytes) {
    if (sendbuf == MPI_IN_PLACE) return "MPI: in place (MCCL's reduce_scatter is not)";
    return reduce_check(type, op, recvcount, static_cast<std::size_t>(e.size), bytes);
  });
  if (!mc) return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
#if MCCL_MPI_WITH_REDUCTIONS
  try {
    mccl::Request req = mc->comm.ireduce_scatter(
        sendbuf, recvbuf, static_cast<std::size_t>(recvcount),
        static_cast<mccl::DataType>(mccl_type(type)), static_cast<mccl::ReduceOp>(mccl_op(op)));
    wait_served(req, "MPI_Reduce_scatter_block");
  } catch (const std::exception& e) {
    return raise_error(*mc, "MPI_Reduce_scatter_block", e.what());
  }
  return MPI_SUCCESS;
#else
  return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);  // not reached
#endif
}
