// Communicator creation, written once: the application's engines
// (src/api/engine_backend.cc) and the offload daemon
// (src/offload/daemon/comm_setup.cc) both call bring_up(), which runs the
// same steps in the same order:
//
//   1. the hello (agree.h): transport kind, tag, salt, checksum,
//      authentication and the communicator's key;
//   2. the transports of the agreed kind (transports.h), each step's
//      outcome agreed, the multicast group probed and filtered (checks.h);
//   3. the link (agree.h): the chunk size every rank's network carries,
//      authentication where left to auto, the incast budget;
//   4. the protocol context over both transports.
//
// Elastic shrink and grow build on this one path.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "protocol/context.h"
#include "setup/agree.h"
#include "transport/oob.h"

namespace mccl::transport::sim {
class Fabric;
}

namespace mccl::setup {

struct BringUpRequest {
  int rank = 0;
  int size = 1;
  // What this rank brings to the hello; a transport left kAuto resolves to
  // kSim in an in-process world (`fabric` set), else InfiniBand where every
  // rank has a usable port, else UDP.
  Proposal proposal;
  std::chrono::milliseconds timeout{0};        // each exchange; the collectives' deadline
  std::chrono::milliseconds setup_timeout{0};  // connections and the multicast probe
  transport::sim::Fabric* fabric = nullptr;    // an in-process world's in-memory fabric
  int sim_node = -1;  // this rank's node on `fabric` (its world rank); -1: `rank`
  std::optional<std::string> udp_iface;  // stands in for MCCL_UDP_IFACE
  // Off where nothing serves a rank between its own calls (the inline
  // engine): ProtocolConfig::eager_bytes is then 0.
  bool eager_completion = true;
};

struct BroughtUp {
  std::unique_ptr<protocol::Context> ctx;
  Agreement agreed;
  std::string iface;        // the network interface, for placing a progress thread
  std::string description;  // the transports, for logs
};

// Blocking and collective over `oob`; never throws. On failure every rank
// returns an error (the first failed step's code) whose message names the
// rank(s) at fault, prefixed by `who` where the step did not name them, and
// `out` holds nothing usable.
common::Status bring_up(const BringUpRequest& req, const transport::OobAllgather& oob,
                        const std::string& who, BroughtUp& out);

}  // namespace mccl::setup
