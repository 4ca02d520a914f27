// MPI_Allreduce, MPI_Reduce_scatter_block and MPI_Reduce_scatter over
// MCCL's reductions (Communicator::allreduce / reduce_scatter(v)).
//
// Served only for datatypes made of one predefined type MCCL has kernels
// for (derived ones are packed around MCCL, staging.h) and the predefined
// ops it implements (sum, prod, min, max); everything else goes to PMPI_. Integers give MPI's
// results bit for bit (both wrap around). Floating-point sums and products may differ from MPI's in
// their last bits: MCCL adds in one fixed order (the same on every rank and in every run), MPI in
// an order of its own; MPI promises no particular order either.
#include <climits>
#include <cstddef>
#include <cstring>
#include <exception>
#include <vector>

#include "mccl/types.h"
#include "mpi/datatype.h"
#include "mpi/decide.h"
#include "mpi/export.h"
#include "mpi/requests.h"
#include "mpi/staging.h"

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

// The reduction as MCCL takes it: the element type and op, and how many
// elements of it one `count` of the program's datatype holds.
struct Reduction {
  DataType type{};
  ReduceOp op{};
  std::size_t per_count = 0;  // elements of `type` in one element of the program's datatype
};

// `blocks` blocks of `count` elements: the size compared with the
// threshold. Decided by the type signature's one basic element (the same
// on every rank, whatever datatype each describes its buffer with) and the
// op (the same everywhere too).
const char* reduce_check(MPI_Datatype type, MPI_Op op, int count, int blocks, Reduction& red,
                         std::size_t& bytes) {
  if (count < 0) return "MPI: negative count (MPI reports it)";
  // The size is set first: a call left to MPI is logged with it too.
  bytes = static_cast<std::size_t>(count) * type_size(type) * static_cast<std::size_t>(blocks);
  if (!mccl_type(element_type(type), red.type))
    return "MPI: no MCCL element type for this datatype";
  if (!mccl_op(op, red.op)) return "MPI: user-defined or unsupported MPI_Op";
  red.per_count = type_size(type) / size_of(red.type);
  return nullptr;
}

// Runs a blocking reduction on `mc` and waits for it; MPI's error code.
template <typename Start>
int reduce_on(McclComm& mc, const char* what, Start&& start) {
  try {
    Request req = start_on(mc, start);
    wait_served(mc, req, what);
  } catch (const std::exception& e) {
    return raise_error(mc, what, e.what());
  }
  return MPI_SUCCESS;
}

// A buffer of a derived datatype as contiguous elements: packed on the way
// in, unpacked on the way out (staging.h). Raw datatypes skip both.
int stage_in(McclComm& mc, const char* what, const void* buf, int count, MPI_Datatype type,
             std::vector<std::byte>& stage) {
  const std::string err = pack(buf, count, type, stage.data(), stage.size());
  return err.empty() ? MPI_SUCCESS : raise_error(mc, what, err);
}
int stage_out(McclComm& mc, const char* what, const std::vector<std::byte>& stage, void* buf,
              int count, MPI_Datatype type) {
  const std::string err = unpack(stage.data(), stage.size(), buf, count, type);
  return err.empty() ? MPI_SUCCESS : raise_error(mc, what, err);
}

// The reduce-scatter of MPI_Reduce_scatter(_block): `counts` in MCCL
// elements per rank; `total` and `mine` are the input's and this rank's
// result's counts in the program's datatype (for packing). MCCL's
// reduce-scatter is not in place, so in place, or of a derived type, the
// whole input is copied (packed) out first (in place the result would
// overwrite block 0 while other blocks are still being read).
int reduce_scatter_on(McclComm& mc, const char* what, const void* sendbuf, void* recvbuf,
                      const std::vector<std::size_t>& counts, int rank, int total, int mine,
                      MPI_Datatype type, const Reduction& red) {
  std::size_t elements = 0;
  for (std::size_t c : counts) elements += c;
  const std::size_t all = elements * mccl::size_of(red.type);
  const bool raw = is_raw(type);
  std::vector<std::byte> in;
  const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  if (!raw) {
    in.resize(all);
    if (int rc = stage_in(mc, what, send, total, type, in); rc != MPI_SUCCESS) return rc;
    send = in.data();
  } else if (sendbuf == MPI_IN_PLACE) {
    in.resize(all);
    if (all > 0) std::memcpy(in.data(), recvbuf, all);
    send = in.data();
  }
  std::vector<std::byte> out(
      raw ? 0 : counts[static_cast<std::size_t>(rank)] * mccl::size_of(red.type));
  void* result = raw ? recvbuf : out.data();
  if (int rc = reduce_on(mc, what,
                         [&](mccl::Communicator& c) {
                           return c.ireduce_scatterv(send, result, counts, red.type, red.op);
                         });
      rc != MPI_SUCCESS) {
    return rc;
  }
  return raw ? MPI_SUCCESS : stage_out(mc, what, out, recvbuf, mine, type);
}

}  // namespace
}  // namespace mccl::mpi

using namespace mccl::mpi;

MCCL_MPI_EXPORT int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type,
                                  MPI_Op op, MPI_Comm comm) {
  Reduction red;
  auto mc = decide(Kind::kAllreduce, comm, [&](const CommEntry&, std::size_t& bytes) {
              return reduce_check(type, op, count, 1, red, bytes);
            }).flat;  // never the leaders scheme (decide.cc)
  if (!mc) return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
  constexpr const char* kWhat = "MPI_Allreduce";
  const std::size_t n = static_cast<std::size_t>(count) * red.per_count;
  if (is_raw(type)) {
    const void* send = sendbuf == MPI_IN_PLACE ? mccl::kInPlace : sendbuf;
    return reduce_on(*mc, kWhat, [&](mccl::Communicator& c) {
      return c.iallreduce(send, recvbuf, n, red.type, red.op);
    });
  }
  // A derived datatype: reduced in place in packed form.
  std::vector<std::byte> stage(n * mccl::size_of(red.type));
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  if (int rc = stage_in(*mc, kWhat, in, count, type, stage); rc != MPI_SUCCESS) return rc;
  if (int rc = reduce_on(*mc, kWhat,
                         [&](mccl::Communicator& c) {
                           return c.iallreduce(mccl::kInPlace, stage.data(), n, red.type, red.op);
                         });
      rc != MPI_SUCCESS) {
    return rc;
  }
  return stage_out(*mc, kWhat, stage, recvbuf, count, type);
}

MCCL_MPI_EXPORT int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                             MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  Reduction red;
  int size = 1, rank = 0;
  auto mc = decide(Kind::kReduceScatterBlock, comm, [&](const CommEntry& e, std::size_t& bytes) {
              size = e.size;
              rank = e.rank;
              return reduce_check(type, op, recvcount, e.size, red, bytes);
            }).flat;
  if (!mc) return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
  const std::size_t n = static_cast<std::size_t>(recvcount) * red.per_count;
  const std::vector<std::size_t> counts(static_cast<std::size_t>(size), n);
  return reduce_scatter_on(*mc, "MPI_Reduce_scatter_block", sendbuf, recvbuf, counts, rank,
                           recvcount * size, recvcount, type, red);
}

MCCL_MPI_EXPORT int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                       MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  Reduction red;
  int size = 1, rank = 0, total = 0;
  auto mc = decide(Kind::kReduceScatter, comm, [&](const CommEntry& e, std::size_t& bytes) {
              size = e.size;
              rank = e.rank;
              long long sum = 0;
              for (int r = 0; r < e.size; ++r) {
                if (recvcounts[r] < 0) return "MPI: negative count (MPI reports it)";
                sum += recvcounts[r];
              }
              if (sum > INT_MAX) return "MPI: the counts add up past INT_MAX";
              total = static_cast<int>(sum);
              return reduce_check(type, op, total, 1, red, bytes);
            }).flat;
  if (!mc) return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm);
  std::vector<std::size_t> counts(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r)
    counts[r] = static_cast<std::size_t>(recvcounts[r]) * red.per_count;
  return reduce_scatter_on(*mc, "MPI_Reduce_scatter", sendbuf, recvbuf, counts, rank, total,
                           recvcounts[rank], type, red);
}
