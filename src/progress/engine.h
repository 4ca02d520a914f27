// The progress engine: who drives the protocol. Collectives are resumable
// state machines (protocol::Operation) advanced by Context::progress(); an
// engine decides which thread calls it and how waiters wait.
//
// Backends: inline (the caller's thread drives everything; deterministic,
// used by the tests) and host thread. The offload engine (src/offload) is
// not an Engine: there is no protocol context in the application's process
// to drive, so the api layer's offload backend (src/api/backend.h) hands
// whole collectives to mccl_offloadd, which runs this same Context and
// coll code itself.
#pragma once

#include <memory>

#include "common/clock.h"
#include "common/status.h"
#include "protocol/operation.h"

namespace mccl::protocol {
class Context;
}

namespace mccl::progress {

class Engine {
 public:
  virtual ~Engine() = default;

  // Hands a new collective to the protocol (in call order: the order of
  // start() calls is the order of sequence numbers). Does not block.
  virtual void start(const std::shared_ptr<protocol::Operation>& op) = 0;

  // Advances the protocol once if this engine lets the caller do so; never
  // blocks.
  virtual void poll() = 0;

  // Blocks until `op` is done or `deadline` passes; returns kTimeout in the
  // latter case (the operation stays in flight), ok otherwise. The
  // operation's own result is op.status().
  virtual common::Status wait(const protocol::Operation& op, common::Deadline deadline) = 0;
};

// Held by a blocking call around the start of its collective: the thread
// that starts it waits for it at once, and drives it while it waits (an
// engine's wait() does, under the thread engine too), so an engine need not
// wake a thread of its own to take the collective over. Waking one cost a
// system call, and where threads outnumber cores a trip through the
// scheduler beside the waiter's: under the thread engine on 2 cores a
// 2-rank 1-byte broadcast with its barrier took 26-47 us with the wake-up
// and 13 us without (docs/benchmarks.md, "The thread engine's small
// collectives"). Per thread; scopes nest.
class CallerWaits {
 public:
  CallerWaits() : outer_(flag()) { flag() = true; }
  ~CallerWaits() { flag() = outer_; }
  CallerWaits(const CallerWaits&) = delete;
  CallerWaits& operator=(const CallerWaits&) = delete;

  // Whether the calling thread is inside such a call.
  static bool active() { return flag(); }

 private:
  static bool& flag() {
    thread_local bool waits = false;
    return waits;
  }
  bool outer_;
};

// The caller's thread drives progress inside poll() and wait(); wait()
// spins up to `spin` after the last event before it sleeps, and up to
// `latency_spin` while it waits for a latency-bound collective
// (Operation::latency_bound: a small point-to-point one, whose next message
// is microseconds away, so that a sleep and a wake-up would be most of its
// time).
//
// How long a waiting call spins, under either engine, and the progress
// thread after its last event: `configured` (MCCL_PROGRESS_SPIN_US inline
// and for the thread, MCCL_PROGRESS_WAIT_SPIN_US for a call waiting under
// the thread engine), except that where the threads that wait (`waiting_threads`: a
// machine's ranks under the inline engine, twice that under the thread
// engine, whose callers wait beside their progress threads) outnumber the
// cores of their machine a waiting call sleeps at once (0),
// unless the user set the spin (`user_set`). A rank that spins between the
// bursts of a paced broadcast (one GSO run every half millisecond at
// 1 Gbit/s) catches nothing, yet holds a core that a rank with data to
// process, the root or the kernel's forwarding needs: with 8 ranks on
// 2 cores that work grows with N and so did the broadcast.
std::chrono::microseconds waiter_spin(std::chrono::microseconds configured, bool user_set,
                                      int waiting_threads, int cores);

// How long a call that drives its own collective spins after its last event,
// under either engine: `spin`, waiter_spin's choice, and `short_spin` for a
// short collective (one that moves less than kShortCollectiveBytes to each
// rank, Operation::moved_bytes). They differ where the waiting threads
// outnumber the cores: a short collective's waiter spins at least
// kSharedCoresShortSpin there. Its data comes from ranks that share its cores,
// and a waiter that yields hands its core to them, where one that sleeps
// leaves a core idle and is woken for every burst (on a virtual machine a
// wake-up is an interrupt through the host); the spin must outlast the
// other ranks' turns on the core, which 50 us did not at 4 and 8 ranks on
// 2 cores, on one host and on the namespace cluster at 1 and 10 Gbit/s. A
// longer collective is bound by the copies the ranks make, and waiters that
// spun through it took the cores that make them: in three runs each, the
// thread engine's 4 MiB chain broadcast at 4 ranks on one host measured
// 12-15% slower, the inline engine's 1 MiB multicast one at 8 ranks 11-23%;
// and between the bursts of a paced one there is nothing to catch.
// docs/benchmarks.md, "A short collective's waiter spins where ranks share
// cores".
inline constexpr std::uint64_t kShortCollectiveBytes = 1 << 20;
inline constexpr std::chrono::microseconds kSharedCoresShortSpin{200};

struct DriverSpin {
  std::chrono::microseconds spin{50};
  std::chrono::microseconds short_spin{50};

  // For a collective that moves `moved` bytes to each rank (0: unknown).
  std::chrono::microseconds for_bytes(std::uint64_t moved) const {
    return moved > 0 && moved < kShortCollectiveBytes ? short_spin : spin;
  }
};

// The user's setting (`user_set`) wins, for short collectives too.
DriverSpin driver_spin(std::chrono::microseconds configured, bool user_set, int waiting_threads,
                       int cores);

// How long a call waiting for a latency-bound collective (a barrier, a small
// point-to-point one) spins for its next message, under either engine and
// wherever it runs: at least kLatencyBoundSpin, unless the user set the spin
// (`user_set`: then `configured`). Such a collective's next message is a
// round trip away, and on a virtual machine's network (the namespace
// cluster) a round trip and the other rank's turn often outlast 50 us, so a
// waiter that slept after 50 us added a wake-up (an interrupt through the
// host) to most cycles. Where ranks share cores: 4 hosts on 2 cores at
// 10 Gbit/s, a 1-byte broadcast with its barrier 155 -> 121 us a cycle, a
// 16 KiB allgather 342 -> 310 ("A barrier's waiter spins where ranks share
// cores"); where each has a core: 2 hosts, placement fixed, receive work on
// the other CPU, a 1-byte broadcast 234-348 -> 108-180 us
// ("Latency-bound waiters spin 200 us wherever they run"), both in
// docs/benchmarks.md. The cost is a core's time for up to 200 us when the
// other rank is late, where Open MPI's waiters poll until it comes.
inline constexpr std::chrono::microseconds kLatencyBoundSpin{200};
std::chrono::microseconds latency_bound_spin(std::chrono::microseconds configured, bool user_set);

std::unique_ptr<Engine> make_inline_engine(
    protocol::Context& ctx, DriverSpin spin = {},
    std::chrono::microseconds latency_spin = std::chrono::microseconds(50));

struct ThreadEngineConfig {
  int cpu = -1;                        // pin the thread here; -1 = do not pin
  std::chrono::microseconds spin{50};  // the thread's, after its last event
  // A waiter's that drives a collective itself, after its last event.
  DriverSpin driver_spin;
  // The same for a latency-bound collective, as the inline engine's
  // `latency_spin`: it spins for its next message even where the thread
  // and waiters otherwise sleep at once (`spin`, `driver_spin` 0).
  std::chrono::microseconds latency_spin{50};
  int log_rank = -1;  // the rank its messages name; -1: none (a thread shared by several)
};

// A dedicated host thread drives progress while nobody waits; wait()
// watches a latency-bound collective's completion for up to `wait_spin`
// (waiter_spin's choice), then drives progress itself in the thread's stead
// until the collective is done. The same thread as shared_thread.h's,
// with `ctx` its only client (defined there).
std::unique_ptr<Engine> make_thread_engine(protocol::Context& ctx, const ThreadEngineConfig& cfg,
                                           std::chrono::microseconds wait_spin);

}  // namespace mccl::progress
