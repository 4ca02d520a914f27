#include "mpi/comm_cache.h"

#include <string>
#include <utility>

#include "mpi/log.h"
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

int delete_entry(MPI_Comm, int, void* value, void*) {
  auto* e = static_cast<CommEntry*>(value);
  if (e->mccl) e->mccl->mpi_comm_alive = false;  // requests in flight keep it
  live().erase(e);
  delete e;
  return MPI_SUCCESS;
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
    c.mcast_bytes_sent += s.mcast_bytes_sent;
    c.mcast_datagrams_sent += s.mcast_datagrams_sent;
    c.mcast_bytes_received += s.mcast_bytes_received;
    c.repair_bytes_requested += s.repair_bytes_requested;
    c.p2p_bytes_sent += s.p2p_bytes_sent;
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

void destroy_all() {
  for (CommEntry* e : live()) {
    e->mccl.reset();
    if (e->state == McclState::kReady) e->state = McclState::kFailed;
  }
  Global& g = global();
  if (g.keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&g.keyval);
  g.keyval = MPI_KEYVAL_INVALID;
}

}  // namespace mccl::mpi
