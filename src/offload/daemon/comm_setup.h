// Builds one rank's protocol context inside the daemon through the one
// creation path the application's engines use (setup/bring_up.h), over UDP
// multicast. Every exchange goes through `oob` (relayed to the client's
// bootstrap); a shrink's go through the old communicator (session_membership.cc).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "coll/collectives.h"
#include "common/status.h"
#include "offload/wire.h"
#include "protocol/context.h"
#include "setup/bring_up.h"
#include "transport/oob.h"

namespace mccl::offload::daemon {

struct Comm {
  std::unique_ptr<protocol::Context> ctx;
  coll::CollConfig coll;
  std::uint32_t epoch = 0;  // as the ranks agreed (setup::Agreement)
};

// What bring_up() gets for rank `rank` of `size` under the client's
// choices. `udp_iface`: the client's MCCL_UDP_IFACE; empty: the daemon's own.
setup::BringUpRequest bring_up_request(int rank, int size, std::chrono::milliseconds timeout,
                                       const CollChoices& choices, const std::string& udp_iface,
                                       std::uint32_t epoch);

// The session's communicator from what bring_up() made.
Comm comm_of(setup::BroughtUp& up, const CollChoices& choices);

// Blocking and collective. Never throws.
common::Status build_comm(int rank, int size, std::chrono::milliseconds timeout,
                          const CollChoices& choices, const transport::OobAllgather& oob, Comm& out,
                          const std::string& udp_iface = {}, std::uint32_t epoch = 0);

}  // namespace mccl::offload::daemon
