// MPI_Bcast, MPI_Allgather(v) and their nonblocking twins: served by MCCL
// when decide() says so, else passed to PMPI_ unchanged.
#include <cstddef>
#include <exception>
#include <vector>

#include "mpi/datatype.h"
#include "mpi/decide.h"
#include "mpi/export.h"
#include "mpi/hierarchy.h"
#include "mpi/requests.h"

namespace mccl::mpi {
namespace {

constexpr const char* kDerived = "MPI: datatype is derived, MPI_PACKED or has gaps";

const char* bcast_check(const CommEntry& e, const void* buf, int count, MPI_Datatype type, int root,
                        std::size_t& bytes) {
  const std::size_t es = plain_size(type);
  // The size is set first: a call left to MPI is logged with it too.
  if (count >= 0) bytes = static_cast<std::size_t>(count) * (es != 0 ? es : type_size(type));
  if (es == 0) return kDerived;
  if (count < 0 || root < 0 || root >= e.size) return "MPI: invalid count or root (MPI reports it)";
  if (buf == nullptr && bytes > 0) return "MPI: null buffer (MPI reports it)";
  return nullptr;
}

// An allgather(v) as MCCL takes it: bytes and byte offsets from `base`.
struct Gather {
  char* base = nullptr;
  std::vector<std::size_t> counts, displs;
  std::size_t elem = 0;
  int own_elems = 0;
};

// `counts`/`displs` null: an allgather, every block `uniform` elements,
// block r at r * uniform.
const char* gather_check(const CommEntry& e, void* recv, const int counts[], const int displs[],
                         int uniform, MPI_Datatype rtype, Gather& g, std::size_t& bytes) {
  const std::size_t plain = plain_size(rtype);
  // A derived type's size is still worked out, for the log line.
  g.elem = plain != 0 ? plain : type_size(rtype);
  const auto count = [&](int r) { return counts ? counts[r] : uniform; };
  const auto displ = [&](int r) { return displs ? displs[r] : 0; };
  int lowest = 0;  // MPI allows negative displacements: MCCL's count from the lowest
  for (int r = 0; r < e.size; ++r) {
    if (count(r) < 0) return "MPI: negative count (MPI reports it)";
    if (displ(r) < lowest) lowest = displ(r);
  }
  bytes = 0;
  g.counts.resize(e.size);
  g.displs.resize(e.size);
  for (int r = 0; r < e.size; ++r) {
    g.counts[r] = static_cast<std::size_t>(count(r)) * g.elem;
    g.displs[r] =
        displs ? static_cast<std::size_t>(static_cast<long long>(displs[r]) - lowest) * g.elem
               : static_cast<std::size_t>(r) * g.counts[r];
    bytes += g.counts[r];
  }
  if (plain == 0) return kDerived;
  if (recv == nullptr && bytes > 0) return "MPI: null receive buffer (MPI reports it)";
  g.base = static_cast<char*>(recv) +
           static_cast<std::ptrdiff_t>(lowest) * static_cast<std::ptrdiff_t>(g.elem);
  g.own_elems = count(e.rank);
  return nullptr;
}

// What MCCL reads as this rank's block: kInPlace, the send buffer itself,
// or (for a send type MCCL cannot read directly) a typed local copy into
// the own block through MPI, then kInPlace.
int send_side(const void* sendbuf, int scount, MPI_Datatype stype, const Gather& g, int rank,
              MPI_Datatype rtype, const void*& send) {
  send = kInPlace;
  if (sendbuf == MPI_IN_PLACE) return MPI_SUCCESS;
  const std::size_t es = plain_size(stype);
  if (es != 0 && scount >= 0 && static_cast<std::size_t>(scount) * es == g.counts[rank]) {
    send = sendbuf;
    return MPI_SUCCESS;
  }
  return PMPI_Sendrecv(sendbuf, scount, stype, 0, 0, g.base + g.displs[rank], g.own_elems, rtype, 0,
                       0, global().self, MPI_STATUS_IGNORE);
}

// Runs `start` (which returns an mccl::Request), then waits for it or
// tracks it behind *request. Any mccl::Error becomes the MPI error.
template <typename Start>
int run(Kind kind, const std::shared_ptr<McclComm>& mc, MPI_Request* request, Start&& start) {
  try {
    Request req = start(mc->comm);
    if (request == nullptr) {
      wait_served(req, kind_name(kind));
      return MPI_SUCCESS;
    }
    return track(mc, std::move(req), kind, request);
  } catch (const std::exception& e) {
    if (request != nullptr) *request = MPI_REQUEST_NULL;
    return raise_error(*mc, kind_name(kind), e.what());
  }
}

int bcast(Kind kind, void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
          MPI_Request* request) {
  std::size_t n = 0;
  Route route = decide(kind, comm, [&](const CommEntry& e, std::size_t& bytes) {
    const char* why = bcast_check(e, buf, count, type, root, bytes);
    n = bytes;
    return why;
  });
  if (!route) {
    return request ? PMPI_Ibcast(buf, count, type, root, comm, request)
                   : PMPI_Bcast(buf, count, type, root, comm);
  }
  if (route.hier) return hier_bcast(*route.hier, buf, n, root);
  return run(kind, route.flat, request,
             [&](Communicator& c) { return c.ibroadcast(buf, n, root); });
}

// counts/displs null: an allgather of `rcount` elements per rank.
int gatherv(Kind kind, const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf,
            const int counts[], const int displs[], int rcount, MPI_Datatype rtype, MPI_Comm comm,
            MPI_Request* request) {
  Gather g;
  int rank = 0;
  Route route = decide(kind, comm, [&](const CommEntry& e, std::size_t& bytes) {
    rank = e.rank;
    return gather_check(e, recvbuf, counts, displs, rcount, rtype, g, bytes);
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
  const void* send = nullptr;
  if (int rc = send_side(sendbuf, scount, stype, g, rank, rtype, send); rc != MPI_SUCCESS) {
    if (request != nullptr) *request = MPI_REQUEST_NULL;
    return rc;
  }
  if (route.hier) return hier_allgatherv(*route.hier, send, g.base, g.counts, g.displs);
  return run(kind, route.flat, request,
             [&](Communicator& c) { return c.iallgatherv(send, g.base, g.counts, g.displs); });
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
