// Inline engine: no thread of its own. Every test() and wait() of the
// application advances the protocol, so nothing moves while the
// application computes; Communicator::progress() exists for that case.
#include <poll.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <thread>

#include "progress/activity.h"
#include "progress/engine.h"
#include "protocol/context.h"

namespace mccl::progress {

namespace {

class InlineEngine final : public Engine {
 public:
  InlineEngine(protocol::Context& ctx, DriverSpin spin, std::chrono::microseconds latency_spin)
      : ctx_(ctx), spin_(spin), latency_spin_(latency_spin) {}

  void start(const std::shared_ptr<protocol::Operation>& op) override {
    ctx_.start(op);
    ctx_.progress();
  }

  void poll() override { ctx_.progress(); }

  common::Status wait(const protocol::Operation& op, common::Deadline deadline) override {
    // Spin (yielding) while traffic flows either way, then sleep on the transports'
    // descriptors, as every transport allows once a poll delivered
    // nothing. Ranks may outnumber cores (8 ranks on 2 cores in the tests):
    // a rank that only yields keeps competing for the core, and under
    // EEVDF each yield pushes its deadline back, so it runs late when its
    // message does arrive. A sleeper is woken by the kernel as soon as
    // data comes. The 1 ms cap keeps the protocol's timers (loss deadlines,
    // at least 1 ms) and a paced sender (2 ms bucket) on time. Without
    // descriptors (the in-memory fabric) it only yields, as before.
    std::array<pollfd, protocol::Context::WaitFds::kMax> fds{};
    std::size_t nfds = 0;
    for (int fd : ctx_.wait_fds()) fds[nfds++] = {fd, POLLIN, 0};
    const auto spin = driving_spin(op, spin_, latency_spin_);
    auto last_event = std::chrono::steady_clock::now();
    while (!op.done() || ctx_.awaiting_connection()) {
      if (deadline.expired()) {
        return op.done() ? common::Status::ok() : common::timeout_error("wait timed out");
      }
      const std::size_t events = progress_counting_sends(ctx_);
      // Done, unless messages it sent still wait for a connection that
      // only this thread's polling makes: a caller that went on to block
      // elsewhere (an MPI call) would hold them back from a peer still
      // waiting for them.
      if (op.done() && !ctx_.awaiting_connection()) break;
      const auto now = std::chrono::steady_clock::now();
      if (events > 0) last_event = now;
      if (nfds > 0 && !pass_again(events, now - last_event, spin)) {
        (void)::poll(fds.data(), nfds, 1);
      } else {
        std::this_thread::yield();
      }
    }
    return common::Status::ok();
  }

 private:
  protocol::Context& ctx_;
  const DriverSpin spin_;                         // after the last event, before sleeping
  const std::chrono::microseconds latency_spin_;  // the same, for a latency-bound collective
};

}  // namespace

std::chrono::microseconds waiter_spin(std::chrono::microseconds configured, bool user_set,
                                      int waiting_threads, int cores) {
  if (user_set || waiting_threads <= cores) return configured;
  return std::chrono::microseconds(0);
}

DriverSpin driver_spin(std::chrono::microseconds configured, bool user_set, int waiting_threads,
                       int cores) {
  const bool shares_cores = !user_set && waiting_threads > cores;
  return {waiter_spin(configured, user_set, waiting_threads, cores),
          shares_cores ? std::max(configured, kSharedCoresShortSpin) : configured};
}

std::chrono::microseconds latency_bound_spin(std::chrono::microseconds configured, bool user_set) {
  return user_set ? configured : std::max(configured, kLatencyBoundSpin);
}

std::unique_ptr<Engine> make_inline_engine(protocol::Context& ctx, DriverSpin spin,
                                           std::chrono::microseconds latency_spin) {
  return std::make_unique<InlineEngine>(ctx, spin, latency_spin);
}

}  // namespace mccl::progress
