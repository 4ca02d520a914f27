// The host progress thread (shared_thread.h), the one loop behind both
// ProgressKind::kThread (a thread with one client) and mccl::ProgressThread
// (one thread, several communicators). A dedicated thread, pinned near the
// NIC, drives every joined context; the application only hands collectives
// over and waits until they finish, so progress continues while it computes.
//
// The thread spins while traffic flows (MCCL_PROGRESS_SPIN_US after the
// last event), then sleeps on the joined contexts' descriptors and a
// wake-up eventfd, so many ranks on few cores still all make progress.
// A caller waiting for a collective drives progress itself (help()):
// passes under the thread's lock, sleeping on the thread's descriptors in
// between, while the thread stays out of its way. Where threads outnumber
// cores (an MPI job with a rank on every core, MPI spinning in its own calls)
// waiting for the thread meant two trips through the scheduler on the
// critical path (the thread's wake-up, then the caller's) and a third thread
// per rank competing for the cores: under libmccl_mpi on 2 cores an 8-byte
// MPI_Bcast took 160-880 us and a 32 KiB one 730 us, against 15 and 110 us
// under the inline engine. The thread does the work while nobody waits, so
// collectives still progress while the application computes.
// For a latency-bound collective (a small point-to-point one) the caller
// first watches its completion flag (the engine's wait spin): such a
// collective is often done within microseconds.
#include "progress/shared_thread.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "common/log.h"
#include "progress/activity.h"
#include "progress/sleeper.h"
#include "protocol/context.h"
#include "topo/placement.h"

namespace mccl::progress {

using namespace std::chrono;

class SharedThread {
 public:
  // One joined context and the collectives handed over for it.
  struct Slot {
    protocol::Context* ctx;
    std::vector<std::shared_ptr<protocol::Operation>> pending;  // guarded by pending_mu_
  };

  explicit SharedThread(const ThreadEngineConfig& cfg) : cfg_(cfg) {
    thread_ = std::thread([this] { run(); });
  }

  ~SharedThread() {
    stop_.store(true);
    wake();
    thread_.join();
  }
  SharedThread(const SharedThread&) = delete;
  SharedThread& operator=(const SharedThread&) = delete;

  void join(Slot* slot) {
    std::lock_guard lock(mu_);
    slots_.push_back(slot);
    for (int fd : slot->ctx->wait_fds()) sleeper_.add(fd);
    wake();
  }

  // Returns once the thread no longer touches the slot's context.
  void leave(Slot* slot) {
    std::lock_guard lock(mu_);
    slots_.erase(std::remove(slots_.begin(), slots_.end(), slot), slots_.end());
    for (int fd : slot->ctx->wait_fds()) sleeper_.remove(fd);
  }

  void start(Slot* slot, const std::shared_ptr<protocol::Operation>& op) {
    {
      std::lock_guard lock(pending_mu_);
      slot->pending.push_back(op);
    }
    // A spinning thread finds the collective on its next pass; only a
    // sleeping one needs the eventfd (a system call per collective), and
    // not for a blocking call's collective (CallerWaits), which its caller
    // starts in its first pass of help(). Sequentially consistent with
    // run()'s store of asleep_ and load of queued_: either the thread sees
    // queued_ before it sleeps, or this sees asleep_ and wakes it.
    queued_.store(true);
    if (asleep_.load() && !CallerWaits::active()) wake();
  }

  // Watches op.done() for up to `spin` without a lock if `op` is latency
  // bound and the thread is awake to advance it, then helps (drives the
  // thread's passes itself) until it is done. A sleeping thread wakes for
  // arrivals, but a collective start() did not wake it for waits unstarted.
  common::Status wait(const protocol::Operation& op, common::Deadline deadline, microseconds spin) {
    if (spin.count() > 0 && op.latency_bound() && !asleep_.load()) {
      const auto until = steady_clock::now() + spin;
      while (!op.done() && steady_clock::now() < until) relax();
      if (op.done()) return common::Status::ok();
    }
    return help(op, deadline);
  }

  std::uint64_t wake_ups() const { return sleeper_.wake_ups(); }

  std::size_t joined() const {
    std::lock_guard lock(mu_);
    return slots_.size();
  }

 private:
  void wake() { sleeper_.wake(); }

  // One turn of a waiter's spin: tells the core that this is a spin loop
  // (a sibling hyperthread gets the pipeline) without giving up the core.
  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  // The caller's work while it waits for `op`: passes under mu_ (the
  // thread's lock, so the two never advance a context at once; a pass
  // advances every joined context), yielding between empty ones, for the
  // thread's spin after the last event (its latency spin for a
  // latency-bound collective, as the inline engine does), then between
  // sleeps of at most 1 ms (the protocol's timers are at least 1 ms) on
  // the thread's own descriptors. (Sleeping after each empty pass where
  // ranks outnumber cores, as a helper did, made a 4-rank 1-byte
  // broadcast's cycle on 2 cores 158 us, against 45 with the spin.)
  // Meanwhile the thread sleeps on its wake-up alone (run()), so the two
  // do not both wake for every datagram; when the last helper
  // leaves with work in flight it wakes the thread to take it back. A pass
  // may finish another waiter's collective: that waiter may be asleep on
  // the descriptors, so it is woken.
  common::Status help(const protocol::Operation& op, common::Deadline deadline) {
    helpers_.fetch_add(1);
    const microseconds spin = driving_spin(op, cfg_.driver_spin, cfg_.latency_spin);
    bool busy = true;
    common::Status result = common::Status::ok();
    auto last_event = steady_clock::now();
    for (;;) {
      bool finished = false;
      busy = false;
      std::size_t events;
      {
        std::lock_guard lock(mu_);
        events = pass_locked(finished, busy);
      }
      if (finished && helpers_.load() > 1) wake();
      if (op.done()) break;
      if (deadline.expired()) {
        result = common::timeout_error("wait timed out");
        break;
      }
      const auto t = steady_clock::now();
      if (events > 0) last_event = t;
      if (!pass_again(events, t - last_event, spin)) {
        sleeper_.sleep_for(milliseconds(1));
      } else if (events == 0) {
        std::this_thread::yield();
      }
    }
    if (helpers_.fetch_sub(1) == 1 && busy) wake();
    return result;
  }

  // One pass over every joined context; returns how much happened.
  std::size_t pass(bool& finished, bool& busy) {
    std::lock_guard lock(mu_);
    return pass_locked(finished, busy);
  }

  std::size_t pass_locked(bool& finished, bool& busy) {
    std::size_t events = 0;
    queued_.store(false);  // before the queues are taken: a later start() sets it again
    for (Slot* s : slots_) {
      {
        std::lock_guard plock(pending_mu_);
        taken_.swap(s->pending);  // taken_ is empty: no allocation once both have grown
      }
      const std::size_t started = taken_.size();
      const std::size_t before = s->ctx->active() + started;
      for (auto& op : taken_) s->ctx->start(op);
      taken_.clear();
      events += started + progress_counting_sends(*s->ctx);
      finished = finished || s->ctx->active() < before;
      busy = busy || !s->ctx->idle();
    }
    return events;
  }

  void run() {
    common::Status pinned = topo::bind_current_thread(cfg_.cpu);
    if (!pinned.is_ok()) {
      common::log_message(common::LogLevel::kWarn, cfg_.log_rank, pinned.message());
    }
    auto last_event = steady_clock::now();
    while (!stop_.load()) {
      if (helpers_.load() > 0 && !queued_.load()) {
        // A waiter drives progress (help()): stay out of its way, but start
        // what a non-blocking start() queues meanwhile (it wakes this
        // thread), and take the work back when the last helper leaves some
        // (so does it). Both come through the eventfd, which keeps a wake-up
        // that arrives before the sleep; the timeout is a backstop only. At
        // 1 ms the naps of 4 ranks' threads on 2 cores took cores from
        // spinning waiters: a 4-rank 1-byte allgather's cycle was 93 us
        // (median) with them and 76 us at 10 ms.
        asleep_.store(true);
        if (!queued_.load()) sleeper_.sleep_until_woken(milliseconds(10));
        asleep_.store(false);
        continue;
      }
      bool finished = false, busy = false;
      const std::size_t events = pass(finished, busy);
      if (finished && helpers_.load() > 0) wake();  // a helper's collective may be among them
      const auto t = steady_clock::now();
      if (events > 0) last_event = t;
      if (pass_again(events, t - last_event, cfg_.spin)) continue;
      // Quiet: sleep until traffic or a new collective, but wake in time for
      // the protocol's timers while collectives are open (loss deadlines
      // are at least 1 ms, a paced sender's bucket holds 2 ms). Arrivals
      // wake the thread through the descriptors at once, so a shorter
      // sleep gains no latency; it only wakes the thread thousands of
      // times a second. On a host with more threads than cores (4 ranks,
      // MPI spinning beside them, on 2 cores) 100 us sleeps starved whole
      // ranks of the CPU for tens of seconds, until a collective timed out.
      asleep_.store(true);
      if (!queued_.load()) sleeper_.sleep_for(busy ? milliseconds(1) : milliseconds(10));
      asleep_.store(false);
    }
  }

  ThreadEngineConfig cfg_;
  Sleeper sleeper_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> asleep_{false};  // the thread is in, or about to enter, sleep_for
  std::atomic<bool> queued_{false};  // start() queued a collective since the last pass took them
  std::atomic<int> helpers_{0};      // waiters inside help(), driving passes themselves
  std::mutex pending_mu_;            // guards every slot's pending queue, so start() never waits
  // A slot's pending collectives while a pass starts them, under mu_. A
  // member that keeps its capacity: the local std::deque it replaces
  // allocated on every pass, and a spinning waiter passes every few
  // microseconds.
  std::vector<std::shared_ptr<protocol::Operation>> taken_;
  mutable std::mutex mu_;  // held during a pass; guards slots_
  std::vector<Slot*> slots_;
  std::thread thread_;
};

namespace {

class SharedThreadEngine final : public Engine {
 public:
  SharedThreadEngine(protocol::Context& ctx, std::shared_ptr<SharedThread> thread,
                     microseconds wait_spin)
      : thread_(std::move(thread)), slot_{&ctx, {}}, wait_spin_(wait_spin) {
    thread_->join(&slot_);
  }
  ~SharedThreadEngine() override { thread_->leave(&slot_); }

  void start(const std::shared_ptr<protocol::Operation>& op) override {
    thread_->start(&slot_, op);
  }
  void poll() override {}  // the shared thread does the work
  common::Status wait(const protocol::Operation& op, common::Deadline deadline) override {
    return thread_->wait(op, deadline, wait_spin_);
  }

 private:
  std::shared_ptr<SharedThread> thread_;
  SharedThread::Slot slot_;
  const microseconds wait_spin_;
};

}  // namespace

std::shared_ptr<SharedThread> make_shared_thread(const ThreadEngineConfig& cfg) {
  return std::make_shared<SharedThread>(cfg);
}

std::unique_ptr<Engine> make_shared_thread_engine(protocol::Context& ctx,
                                                  std::shared_ptr<SharedThread> thread,
                                                  microseconds wait_spin) {
  return std::make_unique<SharedThreadEngine>(ctx, std::move(thread), wait_spin);
}

std::size_t joined_contexts(const SharedThread& thread) { return thread.joined(); }

std::uint64_t wake_ups(const SharedThread& thread) { return thread.wake_ups(); }

std::unique_ptr<Engine> make_thread_engine(protocol::Context& ctx, const ThreadEngineConfig& cfg,
                                           microseconds wait_spin) {
  // A thread of its own is a shared thread with one client: the engine
  // holds the only handle, so the thread stops when the engine goes.
  ThreadEngineConfig mine = cfg;
  if (mine.log_rank < 0) mine.log_rank = ctx.rank();
  return make_shared_thread_engine(ctx, make_shared_thread(mine), wait_spin);
}

}  // namespace mccl::progress
