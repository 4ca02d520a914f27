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

// The caller's thread drives progress inside poll() and wait().
std::unique_ptr<Engine> make_inline_engine(protocol::Context& ctx);

struct ThreadEngineConfig {
  int cpu = -1;  // pin the thread here; -1 = do not pin
  std::chrono::microseconds spin{50};
  int log_rank = -1;  // the rank its messages name; -1: none (a thread shared by several)
};

// A dedicated host thread drives progress; wait() sleeps. The same thread
// as shared_thread.h's, with `ctx` its only client (defined there).
std::unique_ptr<Engine> make_thread_engine(protocol::Context& ctx, const ThreadEngineConfig& cfg);

}  // namespace mccl::progress
