// The host progress thread, shared by several communicators (contexts): the
// FSDP case of a data-parallel and a sharded communicator side by side
// without a spinning thread each on a machine with few cores. A
// communicator's thread of its own (make_thread_engine) is this thread with
// one client.
//
// Each context that joins gets an Engine of its own; the thread advances every joined context
// in turn, so the collectives of all of them are in flight together and
// complete independently. A context leaves when its engine is destroyed:
// from then on the thread never touches it. The thread stops when the last
// holder of the SharedThread (the caller's handle or an engine) lets go.
#pragma once

#include <cstdint>
#include <memory>

#include "progress/engine.h"

namespace mccl::progress {

class SharedThread;

// Starts the thread (pinned to cfg.cpu when >= 0).
std::shared_ptr<SharedThread> make_shared_thread(const ThreadEngineConfig& cfg);

// Joins `ctx` to `thread`; the engine keeps the thread alive. Its wait()
// watches a collective's completion for up to `wait_spin` before it sleeps
// (engine.h, waiter_spin).
std::unique_ptr<Engine> make_shared_thread_engine(protocol::Context& ctx,
                                                  std::shared_ptr<SharedThread> thread,
                                                  std::chrono::microseconds wait_spin);

// Contexts currently joined, for tests.
std::size_t joined_contexts(const SharedThread& thread);

// Times another thread woke the thread from its sleep, for tests.
std::uint64_t wake_ups(const SharedThread& thread);

}  // namespace mccl::progress
