// What a Communicator is inside: the protocol context, the engine that
// drives it and the resolved settings. Shared by the Communicator and its
// Requests so that a request never outlives the state it needs.
#pragma once

#include <chrono>
#include <memory>

#include "coll/collectives.h"
#include "coll/validate.h"
#include "offload/client.h"
#include "progress/engine.h"
#include "progress/linger.h"
#include "protocol/context.h"

namespace mccl::detail {

class CommState {
 public:
  int rank = 0;
  int size = 1;
  std::chrono::milliseconds timeout{60000};
  coll::CollConfig coll;
  // The largest per-rank size the wire carries (coll::max_stream_bytes of
  // the chunk size). Under the offload engine the daemon picks the chunk
  // size, so the bound assumes the smallest chunk any network allows.
  std::size_t max_bytes = coll::max_stream_bytes(65);  // creation refuses smaller
  // Destroyed in reverse order: the engine before the context it drives.
  std::unique_ptr<protocol::Context> ctx;
  std::unique_ptr<progress::Engine> engine;
  // MCCL_PROGRESS=offload: the protocol runs in mccl_offloadd; ctx and
  // engine stay empty (src/api/offload_api.cc).
  std::unique_ptr<offload::OffloadComm> offload;

  ~CommState() {
    // A rank that completed small collectives eagerly is still its right
    // neighbour's repair source until that neighbour releases it: its
    // engine keeps serving from the reaper, and destruction does not block.
    if (ctx && engine && ctx->serving() > 0) {
      progress::linger(std::move(engine), std::move(ctx), common::Deadline::after(timeout));
    }
    engine.reset();
  }
};

// The public Request's handle on a collective in flight: one of the two
// is set, `op` under the inline and thread engines, `offloaded` under the
// offload engine.
class Operation {
 public:
  explicit Operation(std::shared_ptr<protocol::Operation> o) : op(std::move(o)) {}
  explicit Operation(std::shared_ptr<offload::OffloadOp> o) : offloaded(std::move(o)) {}
  bool done() const { return op ? op->done() : offloaded->done(); }
  std::shared_ptr<protocol::Operation> op;
  std::shared_ptr<offload::OffloadOp> offloaded;
};

}  // namespace mccl::detail
