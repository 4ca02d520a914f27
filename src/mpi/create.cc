// create_mccl(): an MCCL communicator over an MPI communicator, created so
// that every rank ends with the same answer even when creation fails on
// some ranks only (no interface, no multicast route, a port in use...).
//
// The bootstrap is make_callback_bootstrap over PMPI_Allgather, but every
// exchange is framed: a fixed 16-byte frame goes first (PMPI_Allgather of
// 16 bytes on every rank), then the data. A rank whose construction threw
// leaves the constructor and sends FINISH frames until every rank sends
// FINISH; a rank still inside the constructor that receives a FINISH frame
// throws from its callback, and so leaves too. All ranks see the same
// frames in the same round, so they stop in the same round, and the `ok`
// bits of that round decide for all of them. No rank is ever left waiting
// in a PMPI_Allgather whose partners have moved on to a different one.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/host.h"
#include "common/settings.h"
#include "mccl/callback_bootstrap.h"
#include "mccl/error.h"
#include "mpi/comm_cache.h"
#include "mpi/decide.h"
#include "mpi/hierarchy.h"
#include "mpi/log.h"
#include "mpi/state.h"

namespace mccl::mpi {

namespace {

enum : std::uint32_t { kData = 0x4d434431, kFinish = 0x4d434432 };  // "MCD1", "MCD2"

struct Frame {
  std::uint32_t kind;
  std::uint32_t ok;
  std::uint64_t bytes;
};
static_assert(sizeof(Frame) == 16);

std::vector<Frame> exchange(MPI_Comm comm, int size, Frame mine) {
  std::vector<Frame> all(static_cast<std::size_t>(size));
  if (PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm) !=
      MPI_SUCCESS) {
    throw Error(ErrorCode::kInternal, "PMPI_Allgather of the bootstrap failed");
  }
  return all;
}

// What the bootstrap calls; refuses to run once creation is over (MCCL
// never calls it then; should it, a stray PMPI_Allgather would hang).
struct FramedAllgather {
  MPI_Comm comm;
  int size;
  std::shared_ptr<bool> closed;

  void operator()(const void* mine, void* all, std::size_t n) const {
    if (*closed) throw Error(ErrorCode::kInternal, "bootstrap allgather after creation");
    const auto frames = exchange(comm, size, Frame{kData, 1, n});
    for (int r = 0; r < size; ++r) {
      if (frames[r].kind != kData) {
        throw Error(ErrorCode::kUnavailable,
                    "rank " + std::to_string(r) + " of the communicator gave up creating MCCL");
      }
      if (frames[r].bytes != n) {
        throw Error(ErrorCode::kMismatch, "bootstrap exchange lengths differ between ranks");
      }
    }
    if (n == 0) return;
    if (n > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      throw Error(ErrorCode::kInternal, "bootstrap exchange too large for one PMPI_Allgather");
    }
    const int count = static_cast<int>(n);
    if (PMPI_Allgather(mine, count, MPI_BYTE, all, count, MPI_BYTE, comm) != MPI_SUCCESS) {
      throw Error(ErrorCode::kInternal, "PMPI_Allgather of the bootstrap failed");
    }
  }
};

// MPI promises that a nonblocking collective progresses while its rank
// sits in any other MPI call (a barrier, a receive, a collective MPI
// serves). Only a thread of MCCL's own can keep that promise for the calls
// MCCL serves, so it is the default here; MCCL_PROGRESS=inline, set by the
// user, is honoured (and then MCCL moves only inside intercepted calls).
// Read through the registry, so "set" means what it means everywhere (an
// empty value is unset) and mccl_info documents this default.
CommOptions options_for_mpi() {
  CommOptions o;
  if (!common::settings::kProgress.from_env()) o.progress = ProgressKind::kThread;
  return o;
}

// Every rank's host (kernel and network namespace, common::network_host_id)
// in rank order: collective, the same on every rank. Empty when MPI fails
// (creation then meets the same failure and says so).
std::vector<std::uint64_t> host_ids(MPI_Comm comm, int size) {
  const std::uint64_t mine = common::network_host_id();
  std::vector<std::uint64_t> all(static_cast<std::size_t>(size));
  if (PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm) !=
      MPI_SUCCESS) {
    return {};
  }
  return all;
}

bool one_host(const std::vector<std::uint64_t>& hosts) {
  for (std::uint64_t h : hosts) {
    if (h != hosts[0]) return false;
  }
  return !hosts.empty();
}

}  // namespace

std::shared_ptr<McclComm> create_agreed(MPI_Comm comm, int rank, int size,
                                        const std::string& label) {
  auto closed = std::make_shared<bool>(false);
  std::shared_ptr<McclComm> made;
  std::string why;
  try {
    auto boot = make_callback_bootstrap(rank, size, FramedAllgather{comm, size, closed});
    made = std::make_shared<McclComm>(std::move(boot), label, options_for_mpi());
  } catch (const std::exception& ex) {
    why = ex.what();
  }
  *closed = true;

  // Agreement: FINISH rounds until every rank sends FINISH.
  bool all_ok = false;
  std::vector<int> failed;
  try {
    for (;;) {
      const auto frames = exchange(comm, size, Frame{kFinish, made ? 1u : 0u, 0});
      bool finished = true;
      for (const Frame& f : frames) finished = finished && f.kind == kFinish;
      if (!finished) continue;
      for (int r = 0; r < size; ++r) {
        if (frames[r].ok == 0) failed.push_back(r);
      }
      all_ok = failed.empty();
      break;
    }
  } catch (const std::exception& ex) {
    // MPI itself failed on this communicator; nothing can be agreed on it.
    why += std::string(why.empty() ? "" : "; ") + ex.what();
    all_ok = false;
  }
  if (all_ok) return made;

  // Said once: setup errors are agreed (every rank's names all failed
  // ranks), so rank 0 speaks for all; a rank whose own failure rank 0 did
  // not share speaks for itself.
  if (!why.empty() && (rank == 0 || failed.empty() || failed.front() != 0)) {
    warnf("MCCL could not be set up on %s (%d ranks): %s; every call on it goes to MPI",
          label.c_str(), size, why.c_str());
  } else if (rank == 0 && why.empty()) {
    std::string ranks;
    for (int r : failed) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    warnf(
        "MCCL could not be set up on %s (%d ranks) on rank(s) %s of it; every call on it goes "
        "to MPI",
        label.c_str(), size, ranks.c_str());
  }
  return nullptr;  // `made` goes here: not collective
}

bool create_mccl(MPI_Comm comm, CommEntry& e) {
  Counters& c = global().counters;
  const std::vector<std::uint64_t> hosts = host_ids(comm, e.size);
  if (!global().settings.single_host && one_host(hosts)) {
    e.state = McclState::kOneHost;
    debugf("%s (%d ranks): every rank on one host: left to MPI (MCCL_MPI_SINGLE_HOST=1 serves it)",
           e.label.c_str(), e.size);
    return false;
  }
  const Scheme scheme = scheme_for(hosts);
  if (scheme == Scheme::kLeaders) {
    e.hier = make_hierarchy(comm, e, hosts);
    e.state = e.hier ? McclState::kLeaders : McclState::kFailed;
    ++(e.hier ? c.comms_created : c.comms_failed);
    return e.hier != nullptr;
  }
  std::shared_ptr<McclComm> made = create_agreed(comm, e.rank, e.size, e.label);
  if (!made) {
    e.state = McclState::kFailed;
    ++c.comms_failed;
    return false;
  }
  made->mpi_comm = comm;
  e.mccl = std::move(made);
  e.state = McclState::kReady;
  ++c.comms_created;
  debugf(
      "MCCL communicator created on %s (%d ranks); MCCL serves from (MCCL_MPI_MIN_BYTES): "
      "MPI_Bcast %zu B, MPI_Allgather %zu B, MPI_Allreduce %zu B, MPI_Reduce_scatter_block %zu B",
      e.label.c_str(), e.size, min_bytes(Kind::kBcast, e), min_bytes(Kind::kAllgather, e),
      min_bytes(Kind::kAllreduce, e), min_bytes(Kind::kReduceScatterBlock, e));
  if (scheme == Scheme::kBoth) {
    // Agreed like the flat one: without it every call is served flat.
    e.hier = make_hierarchy(comm, e, hosts);
    if (e.hier) {
      ++c.comms_created;
    } else if (e.rank == 0) {
      warnf(
          "the hosts' leaders of %s could not get an MCCL communicator; the flat one serves "
          "every call",
          e.label.c_str());
    }
  }
  return true;
}

}  // namespace mccl::mpi
