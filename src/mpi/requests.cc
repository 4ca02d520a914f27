#include "mpi/requests.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "mccl/error.h"
#include "mpi/log.h"

namespace mccl::mpi {

namespace {

using Clock = std::chrono::steady_clock;

struct Pending {
  std::shared_ptr<McclComm> owner;
  Request req;  // used under owner->mu only
  Kind kind = Kind::kIbcast;
  Finish finish;          // after success: unpacks a staged receive buffer
  bool done = false;      // under tables_lock() and owner->mu
  bool detached = false;  // the program called MPI_Request_free on it
  std::string error;      // empty: succeeded (or still running)
};

// The tracked requests, under tables_lock(). `tracked_count` mirrors the
// table's size so that the wait and test wrappers can pass straight to
// PMPI_ without a lock while none is tracked.
std::unordered_map<MPI_Request, std::shared_ptr<Pending>>& table() {
  static auto* t = new std::unordered_map<MPI_Request, std::shared_ptr<Pending>>;
  return *t;
}
std::atomic<std::size_t> tracked_count{0};

void erase(std::unordered_map<MPI_Request, std::shared_ptr<Pending>>::iterator it) {
  table().erase(it);
  tracked_count.store(table().size(), std::memory_order_release);
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
// Under tables_lock(); skips a request whose communicator another thread
// is using (that thread drives it).
bool advance(MPI_Request handle, Pending& p) {
  if (p.done) return false;
  std::unique_lock<std::mutex> comm(p.owner->mu, std::try_to_lock);
  if (!comm.owns_lock()) return false;
  try {
    if (!p.req.test()) return false;
    if (p.finish) p.error = p.finish();
  } catch (const std::exception& e) {
    p.error = e.what();
  }
  if (!p.error.empty()) {
    ++global().counters.failed_calls;
    warnf("%s on %s failed: %s", kind_name(p.kind), p.owner->label.c_str(), p.error.c_str());
  }
  p.done = true;
  p.req = Request();   // finished: releasing it waits for nothing
  p.finish = nullptr;  // and its staging buffer goes
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
  // guards against a wait that never ends for any other reason. Saturating:
  // the setting may be as large as INT64_MAX ms ("never").
  const auto at =
      common::saturating_add(Clock::now(), std::chrono::milliseconds(global().settings.timeout_ms));
  return common::saturating_add(at, std::chrono::seconds(10));
}

}  // namespace

int track(std::shared_ptr<McclComm> owner, Request req, Kind kind, MPI_Request* out,
          Finish finish) {
  int rc = MPI_SUCCESS;
  {
    // One hold from the handle's birth to its entry: a handle MPI has just
    // freed may come back at once, and its old entry must be gone by then.
    TablesGuard tables(tables_lock());
    rc = PMPI_Grequest_start(query_fn, free_fn, cancel_fn, nullptr, out);
    if (rc == MPI_SUCCESS) {
      auto p = std::make_shared<Pending>();
      p->owner = std::move(owner);
      p->req = std::move(req);
      p->kind = kind;
      p->finish = std::move(finish);
      table()[*out] = std::move(p);
      tracked_count.store(table().size(), std::memory_order_release);
      return MPI_SUCCESS;
    }
  }
  wait_served(*owner, req, kind_name(kind));
  if (finish) finish();
  return rc;
}

bool may_block_in_mpi() { return !global().thread_multiple; }

bool is_tracked(MPI_Request handle) {
  TablesGuard tables(tables_lock());
  return table().count(handle) != 0;
}
bool any_tracked() { return tracked_count.load(std::memory_order_acquire) != 0; }

bool any_running() {
  TablesGuard tables(tables_lock());
  for (const auto& [h, p] : table()) {
    if (!p->done) return true;
  }
  return false;
}

void progress_all() {
  if (!any_tracked()) return;
  TablesGuard tables(tables_lock());
  auto& t = table();
  std::vector<MPI_Request> finished;
  for (auto& [handle, p] : t) {
    if (advance(handle, *p)) finished.push_back(handle);
  }
  for (MPI_Request h : finished) erase(t.find(h));
}

int retire(MPI_Request handle) {
  TablesGuard tables(tables_lock());
  auto& t = table();
  auto it = t.find(handle);
  if (it == t.end()) return MPI_SUCCESS;
  const int rc = report(*it->second);
  erase(it);
  return rc;
}

int free_tracked(MPI_Request* handle) {
  TablesGuard tables(tables_lock());
  auto& t = table();
  const MPI_Request h = *handle;
  auto it = t.find(h);
  const int rc = PMPI_Request_free(handle);
  if (it == t.end() || rc != MPI_SUCCESS) return rc;
  if (it->second->done) {
    report(*it->second);  // MPI has freed it: nobody else will hear of an error
    erase(it);
  } else {
    it->second->detached = true;
  }
  return rc;
}

namespace {
// Sleeps up to 1 ms on `running`'s collective (the engine wakes the caller
// when it completes). False when there was nothing to sleep on: another
// thread is using the communicator, or the request finished meanwhile.
bool sleep_on(const std::shared_ptr<Pending>& running) {
  if (!running) return false;
  std::unique_lock<std::mutex> comm(running->owner->mu, std::try_to_lock);
  if (!comm.owns_lock() || running->done) return false;
  try {
    running->req.wait(std::chrono::milliseconds(1));
  } catch (const Error&) {
    // A slice that ran out, or the collective's failure, which the next
    // progress_all() records.
  }
  return true;
}
}  // namespace

bool sleep_on_ours(int n, const MPI_Request reqs[]) {
  std::shared_ptr<Pending> running;
  {
    TablesGuard tables(tables_lock());
    const auto& t = table();
    for (int i = 0; i < n; ++i) {
      if (reqs[i] == MPI_REQUEST_NULL) continue;
      auto it = t.find(reqs[i]);
      if (it == t.end()) return false;
      if (!running && !it->second->done) running = it->second;
    }
  }
  return sleep_on(running);
}

void wait_served(McclComm& owner, Request& req, const char* what) {
  const auto give_up = backstop();
  MpiPoker poke;
  const auto finished = [&] {
    std::lock_guard<std::mutex> comm(owner.mu);
    return req.test();  // test() is the one that reports the collective's error
  };
  while (!finished()) {
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
      std::lock_guard<std::mutex> comm(owner.mu);
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
  const auto give_up = backstop();
  MpiPoker poke;
  for (;;) {
    progress_all();
    std::size_t pending = 0;
    std::shared_ptr<Pending> running;
    {
      TablesGuard tables(tables_lock());
      for (auto& [h, p] : table()) {
        if (p->done || (only != nullptr && p->owner.get() != only)) continue;
        ++pending;
        if (!running) running = p;
      }
    }
    if (pending == 0) return;
    if (Clock::now() > give_up) {
      warnf("%s: %zu MCCL request(s) still in flight after %lld ms; abandoned", where, pending,
            static_cast<long long>(global().settings.timeout_ms));
      return;
    }
    poke();
    // Sleep, not yield: the ranks this one waits for need the cores. On 2
    // cores, three ranks yielding in a loop here kept the fourth from
    // running at all until the collective timed out.
    if (!sleep_on(running)) std::this_thread::yield();
  }
}
}  // namespace

void drain_comm(const McclComm& owner) { drain(&owner, "MPI_Comm_free"); }

void drain_all() {
  drain(nullptr, "MPI_Finalize");
  // Requests the program never completed keep their (finished) generalized
  // request; their communicators go now, so the counters are complete.
  TablesGuard tables(tables_lock());
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
