// Keeping a destroyed communicator's rank a repair source.
//
// A rank that completed small collectives eagerly (protocol/context.h,
// "eager completion") is still its right neighbour's repair source until
// that neighbour releases it. Destroying such a communicator must neither
// cut the neighbour off nor block the caller until it catches up: the
// engine and the context are handed over here, the engine's own thread keeps
// driving the context until it serves nothing more (Context::serving() is
// 0: every release arrived, the neighbour failed, or the collectives'
// deadlines passed), and a process-wide reaper then destroys both, the
// engine first. At process exit the reaper finishes what it still holds,
// each within its deadline.
#pragma once

#include <cstddef>
#include <memory>

#include "common/clock.h"
#include "progress/engine.h"

namespace mccl::progress {

// Takes ownership of `engine` and of `ctx`, which `engine` drives on a
// thread of its own (the thread or shared-thread engine; the inline engine
// never lets a collective complete eagerly, so nothing of it lingers).
// Destroys both once ctx->serving() is 0 or `deadline` passes. Does not block.
void linger(std::unique_ptr<Engine> engine, std::unique_ptr<protocol::Context> ctx,
            common::Deadline deadline);

// Communicators handed to linger() and not yet destroyed (for tests).
std::size_t lingering();

}  // namespace mccl::progress
