// Host-thread engine: a dedicated thread, pinned near the NIC, owns the
// protocol context and drives it. The application only hands collectives
// over and sleeps on a condition variable until they finish, so progress
// continues while it computes.
//
// The thread spins while traffic flows (MCCL_PROGRESS_SPIN_US after the
// last event), then sleeps on the transports' descriptors and a wake-up
// eventfd, so many ranks on few cores still all make progress.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "progress/activity.h"
#include "progress/engine.h"
#include "progress/sleeper.h"
#include "protocol/context.h"
#include "topo/placement.h"

namespace mccl::progress {

namespace {

using namespace std::chrono;

class ThreadEngine final : public Engine {
 public:
  ThreadEngine(protocol::Context& ctx, const ThreadEngineConfig& cfg) : ctx_(ctx), cfg_(cfg) {
    for (int fd : ctx_.wait_fds()) sleeper_.add(fd);
    has_fds_ = !ctx_.wait_fds().empty();
    thread_ = std::thread([this] { run(); });
  }

  ~ThreadEngine() override {
    stop_.store(true);
    wake();
    thread_.join();
  }

  void start(const std::shared_ptr<protocol::Operation>& op) override {
    {
      std::lock_guard lock(pending_mu_);
      pending_.push_back(op);
    }
    wake();
  }

  void poll() override {}  // the engine's thread does the work

  common::Status wait(const protocol::Operation& op, common::Deadline deadline) override {
    std::unique_lock lock(mu_);
    while (!op.done()) {
      if (deadline.expired()) return common::timeout_error("wait timed out");
      auto until = std::min(deadline.at(), common::now() + milliseconds(100));
      done_cv_.wait_until(lock, until);
    }
    return common::Status::ok();
  }

 private:
  void wake() { sleeper_.wake(); }
  void sleep_for(microseconds d) { sleeper_.sleep_for(d, has_fds_); }

  void run() {
    common::Status pinned = topo::bind_current_thread(cfg_.cpu);
    if (!pinned.is_ok()) {
      common::log_message(common::LogLevel::kWarn, ctx_.rank(), pinned.message());
    }
    auto last_event = steady_clock::now();
    while (!stop_.load()) {
      std::deque<std::shared_ptr<protocol::Operation>> todo;
      {
        std::lock_guard lock(pending_mu_);
        todo.swap(pending_);
      }
      std::size_t events = todo.size();
      std::size_t before = ctx_.active() + todo.size();
      {
        // The context is touched only here; mu_ also orders op completion
        // with the waiters' checks of done().
        std::lock_guard lock(mu_);
        for (auto& op : todo) ctx_.start(op);
        events += progress_counting_sends(ctx_);
      }
      if (ctx_.active() < before) done_cv_.notify_all();
      auto t = steady_clock::now();
      if (events > 0) last_event = t;
      if (t - last_event < cfg_.spin) continue;
      // Quiet: sleep until traffic or a new collective, but wake up in time
      // for the protocol's own timers (loss deadlines) while work is open.
      sleep_for(ctx_.idle() ? microseconds(10000) : microseconds(100));
    }
  }

  protocol::Context& ctx_;
  ThreadEngineConfig cfg_;
  Sleeper sleeper_;
  bool has_fds_ = false;
  std::atomic<bool> stop_{false};
  std::mutex pending_mu_;  // guards pending_ only, so start() never waits for progress
  std::mutex mu_;          // held while the context runs; waiters check done() under it
  std::condition_variable done_cv_;
  std::deque<std::shared_ptr<protocol::Operation>> pending_;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<Engine> make_thread_engine(protocol::Context& ctx, const ThreadEngineConfig& cfg) {
  return std::make_unique<ThreadEngine>(ctx, cfg);
}

}  // namespace mccl::progress
