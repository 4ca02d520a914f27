// Builds one rank's protocol context inside the daemon, as
// src/api/communicator.cc does inside the application: agree on the tag,
// UDP multicast + TCP reliable transports, agree on the chunk size. Every
// exchange goes through `oob` (relayed to the client's bootstrap).
#pragma once

#include <chrono>
#include <memory>

#include "coll/collectives.h"
#include "common/status.h"
#include "offload/wire.h"
#include "protocol/context.h"
#include "transport/oob.h"

namespace mccl::offload {

struct Comm {
  std::unique_ptr<protocol::Context> ctx;
  coll::CollConfig coll;
};

// Blocking and collective. Never throws.
common::Status build_comm(int rank, int size, std::chrono::milliseconds timeout,
                          const CollChoices& choices, const transport::OobAllgather& oob,
                          Comm& out);

}  // namespace mccl::offload
