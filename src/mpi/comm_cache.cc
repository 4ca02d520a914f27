#include "mpi/comm_cache.h"

#include <chrono>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "mpi/hierarchy.h"
#include "mpi/log.h"
#include "mpi/requests.h"
#include "mpi/state.h"

namespace mccl::mpi {

namespace {

// Entries not yet deleted by MPI, so MPI_Finalize can reach every MCCL
// communicator (MPI need not delete the attributes of communicators the
// program never freed).
std::set<CommEntry*>& live() {
  static auto* s = new std::set<CommEntry*>;  // never destroyed: MPI may call back late
  return *s;
}

// MCCL communicators of freed MPI communicators, not destroyed yet.
//
// Destroying one closes its connections, and a peer still finishing the
// last collective (which this rank has already finished) may still send on
// them: it would fail with "lost its connection". MPI_Comm_free therefore
// passes through release_before_free() (free.cc), which waits for the
// communicator's requests and holds a barrier before MCCL's state goes. A
// communicator freed some other way (MPI_Comm_disconnect, say) ends here:
// a barrier inside the attribute's delete callback would be unsafe (MPI
// may run the callback late, inside another call, once MPI's own pending
// requests on the communicator complete). So it waits until no request
// uses it and it has been quiet for MCCL_COLL_TIMEOUT_MS + 1 s (by then a
// peer still inside a collective on it has failed by itself), or until
// MPI_Finalize, after a barrier.
struct Retired {
  std::shared_ptr<McclComm> comm;
  std::chrono::steady_clock::time_point quiet_since;
};
std::vector<Retired>& graveyard() {
  static auto* g = new std::vector<Retired>;
  return *g;
}

// Entries whose communicator MPI has freed, handed over by delete_entry()
// and buried by bury_dead() under tables_lock(). MPI runs delete_entry()
// inside its own calls, perhaps holding a lock of its own (MPICH's global
// critical section under MPI_THREAD_MULTIPLE): taking tables_lock() there
// would wait for a thread that holds it and waits for MPI's. `dead_lock`
// is held for nothing but the hand-over.
std::mutex dead_lock;
std::vector<CommEntry*>& dead() {
  static auto* d = new std::vector<CommEntry*>;
  return *d;
}

int delete_entry(MPI_Comm, int, void* value, void*) {
  auto* e = static_cast<CommEntry*>(value);
  for (std::shared_ptr<McclComm>* m : {&e->mccl, e->hier ? &e->hier->mccl : nullptr}) {
    if (m != nullptr && *m) (*m)->mpi_comm_alive = false;  // no error handler to call any more
  }
  std::lock_guard<std::mutex> hand_over(dead_lock);
  dead().push_back(e);
  return MPI_SUCCESS;
}

// Under tables_lock(): moves the MCCL state of the entries MPI deleted to
// the graveyard and frees the entries.
void bury_dead() {
  std::vector<CommEntry*> entries;
  {
    std::lock_guard<std::mutex> hand_over(dead_lock);
    entries.swap(dead());
  }
  for (CommEntry* e : entries) {
    // The leaders' host and leader communicators are left to MPI_Finalize:
    // freeing one inside MPI's callback was not safe, nor is it here.
    for (std::shared_ptr<McclComm>* m : {&e->mccl, e->hier ? &e->hier->mccl : nullptr}) {
      if (m == nullptr || !*m) continue;
      graveyard().push_back({std::move(*m), std::chrono::steady_clock::now()});
    }
    live().erase(e);
    delete e;
  }
}

std::string label_of(MPI_Comm comm, int id) {
  if (comm == MPI_COMM_WORLD) return "MPI_COMM_WORLD";
  if (comm == MPI_COMM_SELF) return "MPI_COMM_SELF";
  char name[MPI_MAX_OBJECT_NAME] = {};
  int len = 0;
  PMPI_Comm_get_name(comm, name, &len);
  std::string label = "comm#" + std::to_string(id);
  if (len > 0) label += " '" + std::string(name, static_cast<std::size_t>(len)) + "'";
  return label;
}

}  // namespace

McclComm::McclComm(std::unique_ptr<Bootstrap> b, std::string l, const CommOptions& options)
    : boot(std::move(b)), comm(*boot, options), label(std::move(l)) {}

McclComm::~McclComm() {
  try {
    const Stats s = comm.stats();
    Counters& c = global().counters;
    for (std::size_t k = 0; k < std::size(kStatCounters); ++k) {
      c.stats[k] += s.*kStatCounters[k].member;
    }
  } catch (const std::exception& e) {
    warnf("reading the counters of %s: %s", label.c_str(), e.what());
  }
}

int create_keyval() {
  return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_entry, &global().keyval, nullptr);
}

CommEntry* entry_for(MPI_Comm comm) {
  static int next_id = 0;
  Global& g = global();
  TablesGuard tables(tables_lock());
  if (comm == MPI_COMM_NULL || g.keyval == MPI_KEYVAL_INVALID) return nullptr;
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, g.keyval, &value, &found) != MPI_SUCCESS) return nullptr;
  if (found) return static_cast<CommEntry*>(value);
  auto e = std::make_unique<CommEntry>();
  e->id = next_id++;
  int inter = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS ||
      PMPI_Comm_rank(comm, &e->rank) != MPI_SUCCESS ||
      PMPI_Comm_size(comm, &e->size) != MPI_SUCCESS) {
    return nullptr;
  }
  e->inter = inter != 0;
  e->label = label_of(comm, e->id);
  if (PMPI_Comm_set_attr(comm, g.keyval, e.get()) != MPI_SUCCESS) return nullptr;
  live().insert(e.get());
  return e.release();
}

void release_before_free(MPI_Comm comm) {
  const Global& g = global();
  if (!g.active || g.keyval == MPI_KEYVAL_INVALID || comm == MPI_COMM_NULL ||
      comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF) {
    return;  // nothing of ours, or an erroneous free that MPI reports
  }
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, g.keyval, &value, &found) != MPI_SUCCESS || !found) return;
  auto* e = static_cast<CommEntry*>(value);
  if (e->state != McclState::kReady && e->state != McclState::kLeaders) return;  // alike everywhere
  // The leaders serve blocking calls only: nothing of theirs is in flight.
  if (e->mccl) drain_comm(*e->mccl);
  // Every rank has now finished every MCCL collective on `comm`: none
  // needs this rank's connections any more.
  if (PMPI_Barrier(comm) != MPI_SUCCESS) {
    // The MPI_Comm_free that follows reports the problem; keep MCCL's state
    // in the graveyard, as for any other free.
    return;
  }
  if (e->hier) {
    release_hierarchy(*e->hier);
    e->hier.reset();
  }
  if (e->mccl) {
    e->mccl->mpi_comm_alive = false;
    e->mccl.reset();  // destroyed now, or when the program retires its last request
  }
  e->state = McclState::kFailed;
}

void reap_retired() {
  TablesGuard tables(tables_lock());
  bury_dead();
  auto& g = graveyard();
  if (g.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  const auto quiet =
      std::chrono::milliseconds(global().settings.timeout_ms) + std::chrono::seconds(1);
  std::erase_if(g, [&](Retired& r) {
    if (r.comm.use_count() > 1) {  // a request in flight still uses it
      r.quiet_since = now;
      return false;
    }
    return now - r.quiet_since > quiet;
  });
}

CommEntry* find_world() {
  const Global& g = global();
  if (g.keyval == MPI_KEYVAL_INVALID) return nullptr;
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(MPI_COMM_WORLD, g.keyval, &value, &found) != MPI_SUCCESS || !found) {
    return nullptr;
  }
  return static_cast<CommEntry*>(value);
}

void destroy_all() {
  TablesGuard tables(tables_lock());
  bury_dead();
  graveyard().clear();
  for (CommEntry* e : live()) {
    e->mccl.reset();
    // The leaders scheme's MCCL communicator; its MPI communicators go
    // with MPI_Finalize (freeing them here, in an order that differs
    // between ranks, could wait on one another).
    if (e->hier) e->hier->mccl.reset();
    e->hier.reset();
    if (e->state == McclState::kReady || e->state == McclState::kLeaders) {
      e->state = McclState::kFailed;
    }
  }
  Global& g = global();
  if (g.keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&g.keyval);
  g.keyval = MPI_KEYVAL_INVALID;
}

}  // namespace mccl::mpi
