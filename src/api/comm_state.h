// What a Communicator is inside: the protocol context, the engine that
// drives it and the resolved settings. Shared by the Communicator and its
// Requests so that a request never outlives the state it needs.
#pragma once

#include <chrono>
#include <memory>

#include "coll/collectives.h"
#include "progress/engine.h"
#include "protocol/context.h"

namespace mccl::detail {

class CommState {
 public:
  int rank = 0;
  int size = 1;
  std::chrono::milliseconds timeout{60000};
  coll::CollConfig coll;
  // Destroyed in reverse order: the engine before the context it drives.
  std::unique_ptr<protocol::Context> ctx;
  std::unique_ptr<progress::Engine> engine;

  ~CommState() { engine.reset(); }
};

// The public Request's handle on a collective in flight.
class Operation {
 public:
  explicit Operation(std::shared_ptr<protocol::Operation> o) : op(std::move(o)) {}
  std::shared_ptr<protocol::Operation> op;
};

}  // namespace mccl::detail
