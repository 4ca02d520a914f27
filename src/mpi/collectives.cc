// MPI_Bcast, MPI_Allgather(v) and their nonblocking twins: served by MCCL
// when decide() says so, else passed to PMPI_ unchanged. Derived datatypes
// are packed into and unpacked from staging bytes (staging.h).
#include <algorithm>
#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "mpi/datatype.h"
#include "mpi/decide.h"
#include "mpi/export.h"
#include "mpi/hierarchy.h"
#include "mpi/requests.h"
#include "mpi/staging.h"

namespace mccl::mpi {
namespace {

// Compression (MCCL_COLL_COMPRESS, docs/compression.md) applies only to
// data whose type signature is all MPI_FLOAT or all MPI_DOUBLE, which every
// rank agrees on (MPI requires matching signatures): such calls go to MCCL
// as typed calls, which compress as the communicator's settings say;
// everything else moves as bytes, exactly.
bool float_elements(MPI_Datatype type, DataType& out) {
  const MPI_Datatype e = element_type(type);
  if (e == MPI_FLOAT && type_size(MPI_FLOAT) == 4) {
    out = DataType::kFloat32;
    return true;
  }
  if (e == MPI_DOUBLE && type_size(MPI_DOUBLE) == 8) {
    out = DataType::kFloat64;
    return true;
  }
  return false;
}

// The byte counts and displacements of `g` in elements of `type`; false
// when one is not a whole number of them (then the call moves bytes).
bool in_elements(const std::vector<std::size_t>& bytes, DataType type,
                 std::vector<std::size_t>& out) {
  const std::size_t es = size_of(type);
  out.clear();
  for (std::size_t b : bytes) {
    if (b % es != 0) return false;
    out.push_back(b / es);
  }
  return true;
}

// Every reason to leave a call to MPI depends only on what the type
// signature and the call's common arguments fix (datatype.h), so that all
// ranks decide alike. A rank's own layout (datatype, displacements, in
// place or not) only chooses how its bytes reach MCCL.

const char* bcast_check(const CommEntry& e, int count, MPI_Datatype type, int root,
                        std::size_t& bytes) {
  if (type == MPI_DATATYPE_NULL) return "MPI: MPI_DATATYPE_NULL (MPI reports it)";
  if (count < 0 || root < 0 || root >= e.size) return "MPI: invalid count or root (MPI reports it)";
  bytes = static_cast<std::size_t>(count) * type_size(type);
  return nullptr;
}

// `counts`/`displs` null: an allgather, every block `uniform` elements,
// block r at r * uniform.
struct GatherArgs {
  void* recv;
  const int* counts;
  const int* displs;
  int uniform;
  MPI_Datatype rtype;
  int count(int r) const { return counts ? counts[r] : uniform; }
  // In elements of rtype's extent, from recv.
  long long displ(int r) const { return displs ? displs[r] : static_cast<long long>(r) * uniform; }
};

// The program's receive blocks under a derived receive type, copied out of
// the call's arguments (a nonblocking call unpacks after they may be gone).
struct TypedBlocks {
  void* recv = nullptr;
  MPI_Aint extent = 0;
  std::vector<int> counts;        // elements of the receive type
  std::vector<long long> displs;  // in extents, from recv
  void* block(int r) const { return static_cast<char*>(recv) + displs[r] * extent; }
};

// An allgather(v) as MCCL takes it: byte counts and offsets from `base`,
// which is the receive buffer itself (raw receive type) or `unpacker`'s
// staging bytes, every block packed after the other in rank order.
struct Gather {
  char* base = nullptr;
  std::vector<std::size_t> counts, displs;
  std::shared_ptr<Unpacker> unpacker;  // null: MCCL writes the receive buffer itself
  TypedBlocks typed;                   // with `unpacker`
};

const char* gather_check(const CommEntry& e, const GatherArgs& a, Gather& g, std::size_t& bytes) {
  if (a.rtype == MPI_DATATYPE_NULL) return "MPI: MPI_DATATYPE_NULL (MPI reports it)";
  const std::size_t elem = type_size(a.rtype);
  bytes = 0;
  g.counts.resize(e.size);
  for (int r = 0; r < e.size; ++r) {
    if (a.count(r) < 0) return "MPI: negative count (MPI reports it)";
    g.counts[r] = static_cast<std::size_t>(a.count(r)) * elem;
    bytes += g.counts[r];
  }
  return nullptr;
}

// Lays the blocks out (after the decision: the layout is this rank's own).
// Raw: displacements in bytes from the lowest non-empty block, which is
// `base` (empty blocks occupy nothing, wherever they claim to be). Derived:
// the staging bytes.
void gather_layout(const GatherArgs& a, int size, Gather& g) {
  g.displs.assign(static_cast<std::size_t>(size), 0);
  if (!is_raw(a.rtype)) {
    std::size_t total = 0;
    TypedBlocks& t = g.typed;
    MPI_Aint lb = 0;
    PMPI_Type_get_extent(a.rtype, &lb, &t.extent);
    t.recv = a.recv;
    for (int r = 0; r < size; ++r) {
      g.displs[r] = total;
      total += g.counts[r];
      t.counts.push_back(a.count(r));
      t.displs.push_back(a.displ(r));
    }
    g.unpacker = std::make_shared<Unpacker>(total, a.rtype);
    g.base = reinterpret_cast<char*>(g.unpacker->data());
    return;
  }
  const auto elem = static_cast<long long>(type_size(a.rtype));  // == extent for a raw type
  long long lowest = 0;  // MPI allows negative displacements
  bool any = false;
  for (int r = 0; r < size; ++r) {
    if (g.counts[r] == 0) continue;
    lowest = any ? std::min(lowest, a.displ(r)) : a.displ(r);
    any = true;
  }
  for (int r = 0; r < size; ++r) {
    if (g.counts[r] != 0) g.displs[r] = static_cast<std::size_t>((a.displ(r) - lowest) * elem);
  }
  g.base = static_cast<char*>(a.recv) + lowest * elem;
}

// Unpacks every block of a staged receive buffer; empty when done.
std::string gather_unpack(const Gather& g) {
  for (std::size_t r = 0; r < g.counts.size(); ++r) {
    if (g.counts[r] == 0) continue;
    const int rr = static_cast<int>(r);
    std::string err =
        g.unpacker->unpack_to(g.displs[r], g.counts[r], g.typed.block(rr), g.typed.counts[r]);
    if (!err.empty()) return err;
  }
  return {};
}

// What MCCL reads as this rank's block: the send buffer itself when it is
// raw and its signature is the block's, else kInPlace after the block was
// packed into place (from the send buffer, or from the program's own block
// in place under a derived receive type). Empty, or what went wrong.
std::string send_side(const void* sendbuf, int scount, MPI_Datatype stype, const GatherArgs& a,
                      const Gather& g, int rank, const void*& send) {
  send = kInPlace;
  const std::size_t mine = g.counts[rank];
  char* own = g.base + g.displs[rank];
  if (sendbuf == MPI_IN_PLACE) {
    if (!g.unpacker || mine == 0) return {};
    return pack(g.typed.block(rank), a.count(rank), a.rtype, own, mine);
  }
  const std::size_t sent = scount < 0 ? 0 : static_cast<std::size_t>(scount) * type_size(stype);
  if (sent != mine) {
    return "the send buffer's type signature has " + std::to_string(sent) +
           " bytes but this rank's receive block has " + std::to_string(mine);
  }
  if (is_raw(stype)) {
    send = sendbuf;
    return {};
  }
  return pack(sendbuf, scount, stype, own, mine);
}

// Runs `start` (which returns an mccl::Request) under the communicator's
// lock, then waits for it and runs `finish` (a staged buffer's unpack), or
// tracks both behind *request. Any failure becomes the MPI error.
template <typename Start>
int run(Kind kind, const std::shared_ptr<McclComm>& mc, MPI_Request* request, Start&& start,
        Finish finish = nullptr) {
  try {
    Request req = start_on(*mc, start);
    if (request != nullptr) return track(mc, std::move(req), kind, request, std::move(finish));
    wait_served(*mc, req, kind_name(kind));
    if (finish) {
      if (std::string err = finish(); !err.empty()) return raise_error(*mc, kind_name(kind), err);
    }
    return MPI_SUCCESS;
  } catch (const std::exception& e) {
    if (request != nullptr) *request = MPI_REQUEST_NULL;
    return raise_error(*mc, kind_name(kind), e.what());
  }
}

int bcast(Kind kind, void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
          MPI_Request* request) {
  std::size_t n = 0;
  int rank = 0;
  std::string label;
  Route route = decide(kind, comm, [&](const CommEntry& e, std::size_t& bytes) {
    const char* why = bcast_check(e, count, type, root, bytes);
    n = bytes;
    rank = e.rank;
    label = e.label;
    return why;
  });
  if (!route) {
    return request ? PMPI_Ibcast(buf, count, type, root, comm, request)
                   : PMPI_Bcast(buf, count, type, root, comm);
  }
  void* data = buf;
  std::shared_ptr<Unpacker> staged;  // a derived type's bytes, until MCCL is done with them
  Finish finish;
  if (!is_raw(type) && n > 0) {
    staged = std::make_shared<Unpacker>(n, type);
    data = staged->data();
    if (rank != root) {
      finish = [staged, n, buf, count] { return staged->unpack_to(0, n, buf, count); };
    } else if (std::string err = pack(buf, count, type, data, n); !err.empty()) {
      if (request != nullptr) *request = MPI_REQUEST_NULL;
      return raise_error(label, comm, true, kind_name(kind), err);
    } else {
      finish = [staged] { return std::string(); };  // keeps the bytes until the end
    }
  }
  if (route.hier) {
    const int rc = hier_bcast(*route.hier, data, n, root);
    if (rc != MPI_SUCCESS || !finish) return rc;
    std::string err = finish();
    return err.empty() ? MPI_SUCCESS : raise_error(label, comm, true, kind_name(kind), err);
  }
  DataType ftype;
  const bool typed = float_elements(type, ftype);
  return run(
      kind, route.flat, request,
      [&](Communicator& c) {
        return typed ? c.ibroadcast(data, n / size_of(ftype), ftype, root)
                     : c.ibroadcast(data, n, root);
      },
      std::move(finish));
}

// counts/displs null: an allgather of `rcount` elements per rank.
int gatherv(Kind kind, const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf,
            const int counts[], const int displs[], int rcount, MPI_Datatype rtype, MPI_Comm comm,
            MPI_Request* request) {
  const GatherArgs a{recvbuf, counts, displs, rcount, rtype};
  Gather g;
  int rank = 0, size = 0;
  std::string label;
  Route route = decide(kind, comm, [&](const CommEntry& e, std::size_t& bytes) {
    rank = e.rank;
    size = e.size;
    label = e.label;
    return gather_check(e, a, g, bytes);
  });
  if (!route) {
    if (counts == nullptr) {
      return request
                 ? PMPI_Iallgather(sendbuf, scount, stype, recvbuf, rcount, rtype, comm, request)
                 : PMPI_Allgather(sendbuf, scount, stype, recvbuf, rcount, rtype, comm);
    }
    return request ? PMPI_Iallgatherv(sendbuf, scount, stype, recvbuf, counts, displs, rtype, comm,
                                      request)
                   : PMPI_Allgatherv(sendbuf, scount, stype, recvbuf, counts, displs, rtype, comm);
  }
  gather_layout(a, size, g);
  const void* send = nullptr;
  if (std::string err = send_side(sendbuf, scount, stype, a, g, rank, send); !err.empty()) {
    if (request != nullptr) *request = MPI_REQUEST_NULL;
    return raise_error(label, comm, true, kind_name(kind), err);
  }
  Finish finish;
  if (g.unpacker) finish = [g] { return gather_unpack(g); };
  if (route.hier) {
    const int rc = hier_allgatherv(*route.hier, send, g.base, g.counts, g.displs);
    if (rc != MPI_SUCCESS || !g.unpacker) return rc;
    std::string err = gather_unpack(g);
    return err.empty() ? MPI_SUCCESS : raise_error(label, comm, true, kind_name(kind), err);
  }
  DataType ftype;
  std::vector<std::size_t> ecounts, edispls;
  const bool typed = float_elements(rtype, ftype) && in_elements(g.counts, ftype, ecounts) &&
                     in_elements(g.displs, ftype, edispls);
  return run(
      kind, route.flat, request,
      [&](Communicator& c) {
        return typed ? c.iallgatherv(send, g.base, ecounts, edispls, ftype)
                     : c.iallgatherv(send, g.base, g.counts, g.displs);
      },
      std::move(finish));
}

}  // namespace
}  // namespace mccl::mpi

using namespace mccl::mpi;

MCCL_MPI_EXPORT int MPI_Bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  return bcast(Kind::kBcast, buf, count, type, root, comm, nullptr);
}

MCCL_MPI_EXPORT int MPI_Ibcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                               MPI_Request* request) {
  return bcast(Kind::kIbcast, buf, count, type, root, comm, request);
}

MCCL_MPI_EXPORT int MPI_Allgather(const void* sendbuf, int scount, MPI_Datatype stype,
                                  void* recvbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm) {
  return gatherv(Kind::kAllgather, sendbuf, scount, stype, recvbuf, nullptr, nullptr, rcount, rtype,
                 comm, nullptr);
}

MCCL_MPI_EXPORT int MPI_Iallgather(const void* sendbuf, int scount, MPI_Datatype stype,
                                   void* recvbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm,
                                   MPI_Request* request) {
  return gatherv(Kind::kIallgather, sendbuf, scount, stype, recvbuf, nullptr, nullptr, rcount,
                 rtype, comm, request);
}

MCCL_MPI_EXPORT int MPI_Allgatherv(const void* sendbuf, int scount, MPI_Datatype stype,
                                   void* recvbuf, const int counts[], const int displs[],
                                   MPI_Datatype rtype, MPI_Comm comm) {
  return gatherv(Kind::kAllgatherv, sendbuf, scount, stype, recvbuf, counts, displs, 0, rtype, comm,
                 nullptr);
}

MCCL_MPI_EXPORT int MPI_Iallgatherv(const void* sendbuf, int scount, MPI_Datatype stype,
                                    void* recvbuf, const int counts[], const int displs[],
                                    MPI_Datatype rtype, MPI_Comm comm, MPI_Request* request) {
  return gatherv(Kind::kIallgatherv, sendbuf, scount, stype, recvbuf, counts, displs, 0, rtype,
                 comm, request);
}
