#include "mpi/decide.h"

#include <set>
#include <utility>

#include "mpi/hierarchy.h"
#include "mpi/log.h"
#include "mpi/min_bytes.h"

namespace mccl::mpi {

namespace {

void count_and_log(Kind kind, CommEntry* e, std::size_t bytes, const char* reason, bool served) {
  Global& g = global();
  auto& n = served ? g.counters.served : g.counters.fallback;
  ++n[static_cast<int>(kind)];
  if (served) g.counters.served_bytes += bytes;
  if (!g.settings.debug) return;
  TablesGuard tables(tables_lock());
  static std::set<std::pair<int, const char*>> logged_without_entry;
  auto& logged = e != nullptr ? e->logged : logged_without_entry;
  if (!logged.emplace(static_cast<int>(kind), reason).second) return;
  if (e != nullptr) {
    debugf(
        "%s on %s (%d ranks), %zu bytes: %s (further calls of this kind and reason on it are "
        "not logged)",
        kind_name(kind), e->label.c_str(), e->size, bytes, reason);
  } else {
    debugf("%s: %s (not logged again)", kind_name(kind), reason);
  }
}

// What the debug line says of a served call: for broadcasts and allgathers
// the algorithm MCCL's table picks for its size (`bytes`: the message, or
// an allgather's block). Static strings, so that count_and_log logs each
// (kind, algorithm) once.
const char* served_by(Kind kind, const Communicator& c, std::size_t bytes) {
  switch (kind) {
    case Kind::kBcast:
    case Kind::kIbcast:
      switch (c.broadcast_algorithm(bytes)) {
        case BroadcastAlgorithm::kBinomial:
          return "served by MCCL (binomial tree)";
        case BroadcastAlgorithm::kChain:
          return "served by MCCL (chain)";
        case BroadcastAlgorithm::kFlat:
          return "served by MCCL (flat tree)";
        default:
          return "served by MCCL (multicast)";
      }
    case Kind::kAllgather:
    case Kind::kAllgatherv:
    case Kind::kIallgather:
    case Kind::kIallgatherv:
      switch (c.allgather_algorithm(bytes)) {
        case AllgatherAlgorithm::kBruck:
          return "served by MCCL (Bruck)";
        case AllgatherAlgorithm::kRing:
          return "served by MCCL (ring)";
        case AllgatherAlgorithm::kStar:
          return "served by MCCL (star)";
        default:
          return "served by MCCL (multicast)";
      }
    default:
      return "served by MCCL";
  }
}

Family family_of(Kind kind) {
  switch (kind) {
    case Kind::kBcast:
    case Kind::kIbcast:
      return Family::kBcast;
    case Kind::kAllreduce:
      return Family::kAllreduce;
    case Kind::kReduceScatterBlock:
    case Kind::kReduceScatter:
      return Family::kReduceScatter;
    default:
      return Family::kAllgather;
  }
}

// A program that never called MPI_Init or MPI_Init_thread (MPI 4
// sessions) gets no MCCL: a user who preloaded the library is told, once.
void tell_not_initialized() {
  static bool told = false;
  if (told) return;
  told = true;
  warnf(
      "MPI was not initialised through MPI_Init or MPI_Init_thread (MPI sessions?); libmccl_mpi "
      "serves only MPI_COMM_WORLD-based programs, so every call goes to MPI");
}

}  // namespace

std::size_t min_bytes(Kind kind, const CommEntry& e) {
  const std::int64_t agreed = global().settings.min_bytes;
  if (agreed != kMinBytesAuto) return static_cast<std::size_t>(agreed);
  return measured_min_bytes(family_of(kind), e.size);
}

CommEntry* decide_comm(Kind, MPI_Comm comm, const char*& reason) {
  const Global& g = global();
  if (!g.active) {
    reason = g.inactive_reason;
    return nullptr;
  }
  reap_retired();
  if (comm == MPI_COMM_NULL) {
    reason = "MPI: MPI_COMM_NULL (MPI reports the error)";
    return nullptr;
  }
  CommEntry* e = entry_for(comm);
  if (e == nullptr) {
    reason = "MPI: the communicator could not be queried";
  } else if (e->inter) {
    reason = "MPI: intercommunicator";
  } else if (e->size < 2) {
    reason = "MPI: single-rank communicator";
  }
  return e;
}

Route decide_finish(Kind kind, MPI_Comm comm, CommEntry* e, std::size_t bytes, const char* reason) {
  Global& g = global();
  if (reason == nullptr && bytes < min_bytes(kind, *e)) {
    reason = "MPI: below MCCL_MPI_MIN_BYTES";
  }
  if (reason == nullptr && e->state == McclState::kNone) {
    if (is_nonblocking(kind)) {
      reason = "MPI: no MCCL state on this communicator yet (only a blocking call creates it)";
    } else {
      create_mccl(comm, *e);
    }
  }
  if (reason == nullptr && e->state == McclState::kFailed) {
    reason = "MPI: MCCL could not be set up on this communicator";
  }
  if (reason == nullptr && e->state == McclState::kOneHost) {
    reason = "MPI: every rank on one host (MPI's shared memory; MCCL_MPI_SINGLE_HOST=1 serves it)";
  }
  if (reason == nullptr && e->state == McclState::kLeaders && kind != Kind::kBcast &&
      kind != Kind::kAllgather && kind != Kind::kAllgatherv) {
    reason =
        "MPI: the leaders scheme (MCCL_MPI_HIERARCHY=leaders) serves only blocking MPI_Bcast and "
        "MPI_Allgather(v)";
  }
  if (reason == nullptr && e->state == McclState::kLeaders && !hierarchy_fits(bytes)) {
    reason = "MPI: over 2 GiB, more than the leaders scheme's MPI steps (int counts) carry";
  }
  if (reason != nullptr) {
    if (g.initialized) {
      count_and_log(kind, e, bytes, reason, false);
    } else {
      tell_not_initialized();
    }
    return {};
  }
  // Both schemes (MCCL_MPI_HIERARCHY=auto): the leaders where they were
  // measured faster, flat otherwise.
  const bool by_leaders = e->hier && (!e->mccl || leaders_serve(kind, bytes));
  count_and_log(kind, e, bytes,
                by_leaders ? "served by MCCL among the hosts' leaders"
                           : served_by(kind, e->mccl->comm, bytes),
                true);
  if (by_leaders) return {nullptr, e->hier};
  return {e->mccl, nullptr};
}

}  // namespace mccl::mpi
