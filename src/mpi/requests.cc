#include "mpi/requests.h"

#include <chrono>
#include <memory>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mccl/error.h"
#include "mpi/log.h"

namespace mccl::mpi {

namespace {

using Clock = std::chrono::steady_clock;

struct Pending {
  std::shared_ptr<McclComm> owner;
  Request req;
  Kind kind = Kind::kIbcast;
  bool done = false;
  bool detached = false;  // the program called MPI_Request_free on it
  std::string error;      // empty: succeeded (or still running)
};

std::unordered_map<MPI_Request, std::unique_ptr<Pending>>& table() {
  static auto* t = new std::unordered_map<MPI_Request, std::unique_ptr<Pending>>;
  return *t;
}

// A collective's request carries no source, tag or count: the empty status.
int query_fn(void*, MPI_Status* status) {
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_ANY_SOURCE;
  status->MPI_TAG = MPI_ANY_TAG;
  return MPI_SUCCESS;
}
int free_fn(void*) { return MPI_SUCCESS; }
// A collective cannot be cancelled (MPI makes MPI_Cancel on one erroneous);
// it completes normally.
int cancel_fn(void*, int) { return MPI_SUCCESS; }

int report(Pending& p) {
  if (p.error.empty()) return MPI_SUCCESS;
  if (p.owner && p.owner->mpi_comm_alive)
    PMPI_Comm_call_errhandler(p.owner->mpi_comm, MPI_ERR_OTHER);
  return MPI_ERR_OTHER;
}

// Tests one request; on completion completes its generalized request.
// Returns true when a detached request is finished and must be erased.
bool advance(MPI_Request handle, Pending& p) {
  if (p.done) return false;
  try {
    if (!p.req.test()) return false;
  } catch (const std::exception& e) {
    p.error = e.what();
    ++global().counters.failed_calls;
    warnf("%s on %s failed: %s", kind_name(p.kind), p.owner->label.c_str(), e.what());
  }
  p.done = true;
  p.req = Request();  // finished: releasing it waits for nothing
  if (!p.detached) {
    PMPI_Grequest_complete(handle);
    return false;
  }
  report(p);
  PMPI_Grequest_complete(handle);  // freed by the program already: MPI deallocates it now
  return true;
}

// Makes MPI progress now and then while MCCL is waited for: MPI promises
// that a blocked call does not stop other operations (a peer's rendezvous
// send to this rank, say) from progressing.
class MpiPoker {
 public:
  void operator()() {
    const auto now = Clock::now();
    if (now < next_) return;
    next_ = now + std::chrono::microseconds(100);
    int flag = 0;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, global().self, &flag, MPI_STATUS_IGNORE);
  }

 private:
  Clock::time_point next_ = Clock::now();
};

Clock::time_point backstop() {
  // MCCL fails a collective by itself after MCCL_COLL_TIMEOUT_MS; this only
  // guards against a wait that never ends for any other reason.
  return Clock::now() + std::chrono::milliseconds(global().settings.timeout_ms) +
         std::chrono::seconds(10);
}

}  // namespace

int track(std::shared_ptr<McclComm> owner, Request req, Kind kind, MPI_Request* out) {
  const int rc = PMPI_Grequest_start(query_fn, free_fn, cancel_fn, nullptr, out);
  if (rc != MPI_SUCCESS) {
    wait_served(req, kind_name(kind));
    return rc;
  }
  auto p = std::make_unique<Pending>();
  p->owner = std::move(owner);
  p->req = std::move(req);
  p->kind = kind;
  table()[*out] = std::move(p);
  return MPI_SUCCESS;
}

bool is_tracked(MPI_Request handle) { return table().count(handle) != 0; }
bool any_tracked() { return !table().empty(); }

bool any_running() {
  for (const auto& [h, p] : table()) {
    if (!p->done) return true;
  }
  return false;
}

void progress_all() {
  auto& t = table();
  if (t.empty()) return;
  std::vector<MPI_Request> finished;
  for (auto& [handle, p] : t) {
    if (advance(handle, *p)) finished.push_back(handle);
  }
  for (MPI_Request h : finished) t.erase(h);
}

int retire(MPI_Request handle) {
  auto& t = table();
  auto it = t.find(handle);
  if (it == t.end()) return MPI_SUCCESS;
  const int rc = report(*it->second);
  t.erase(it);
  return rc;
}

int free_tracked(MPI_Request* handle) {
  auto& t = table();
  const MPI_Request h = *handle;
  auto it = t.find(h);
  const int rc = PMPI_Request_free(handle);
  if (it == t.end() || rc != MPI_SUCCESS) return rc;
  if (it->second->done) {
    report(*it->second);  // MPI has freed it: nobody else will hear of an error
    t.erase(it);
  } else {
    it->second->detached = true;
  }
  return rc;
}

bool sleep_on_ours(int n, const MPI_Request reqs[]) {
  const auto& t = table();
  Pending* running = nullptr;
  for (int i = 0; i < n; ++i) {
    if (reqs[i] == MPI_REQUEST_NULL) continue;
    auto it = t.find(reqs[i]);
    if (it == t.end()) return false;
    if (running == nullptr && !it->second->done) running = it->second.get();
  }
  if (running == nullptr) return false;
  try {
    running->req.wait(std::chrono::milliseconds(1));
  } catch (const Error&) {
    // A slice that ran out, or the collective's failure, which the next
    // progress_all() records.
  }
  return true;
}

void wait_served(Request& req, const char* what) {
  const auto give_up = backstop();
  MpiPoker poke;
  while (!req.test()) {  // test() is the one that reports the collective's error
    progress_all();
    poke();
    if (Clock::now() > give_up) {
      throw Error(ErrorCode::kTimeout, std::string(what) + " did not complete within " +
                                           std::to_string(global().settings.timeout_ms) +
                                           " ms + 10 s (MCCL_COLL_TIMEOUT_MS)");
    }
    // Sleeps under MCCL's progress thread (so this rank's cores go to it and
    // to the other ranks) and drives progress under the inline engine; a
    // short slice so the requests above and MPI still move.
    try {
      req.wait(std::chrono::milliseconds(1));
    } catch (const Error&) {
      // A slice that ran out, or the collective's own failure: the test()
      // above tells them apart.
    }
  }
}

namespace {
// Completes the tracked requests of `only` (every one when null).
void drain(const McclComm* only, const char* where) {
  auto& t = table();
  const auto give_up = backstop();
  MpiPoker poke;
  for (;;) {
    progress_all();
    std::size_t pending = 0;
    for (auto& [h, p] : t) {
      if (!p->done && (only == nullptr || p->owner.get() == only)) ++pending;
    }
    if (pending == 0) return;
    if (Clock::now() > give_up) {
      warnf("%s: %zu MCCL request(s) still in flight after %lld ms; abandoned", where, pending,
            static_cast<long long>(global().settings.timeout_ms));
      return;
    }
    poke();
    std::this_thread::yield();
  }
}
}  // namespace

void drain_comm(const McclComm& owner) { drain(&owner, "MPI_Comm_free"); }

void drain_all() {
  drain(nullptr, "MPI_Finalize");
  // Requests the program never completed keep their (finished) generalized
  // request; their communicators go now, so the counters are complete.
  for (auto& [h, p] : table()) {
    if (p->done) p->owner.reset();
  }
}

int raise_error(const std::string& label, MPI_Comm comm, bool alive, const char* what,
                const std::string& message) {
  ++global().counters.failed_calls;
  warnf("%s on %s failed: %s", what, label.c_str(), message.c_str());
  if (alive) PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
  return MPI_ERR_OTHER;
}

int raise_error(const McclComm& owner, const char* what, const std::string& message) {
  return raise_error(owner.label, owner.mpi_comm, owner.mpi_comm_alive, what, message);
}

}  // namespace mccl::mpi
