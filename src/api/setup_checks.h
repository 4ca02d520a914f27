// The collective checks that make creating a communicator fail fast, on
// every rank at once, instead of one rank stalling until the others time
// out: each setup step ends with an exchange of every rank's outcome, and
// the multicast group is proven to carry datagrams between all ranks.
#pragma once

#include <chrono>
#include <string>

#include "common/status.h"
#include "mccl/bootstrap.h"
#include "transport/datagram.h"

namespace mccl::detail {

// Collective and blocking (one bootstrap allgather, `timeout`): every rank
// passes its own outcome of the step `what`. Returns when every rank
// succeeded; else throws mccl::Error on every rank, with the first failed
// rank's code and a message naming each failed rank and its reason.
void agree(Bootstrap& bootstrap, const common::Status& mine, const std::string& what,
           std::chrono::milliseconds timeout);

// Collective and blocking: every rank sends small probe datagrams on the
// group and listens for everyone else's, in rounds joined by a bootstrap
// allgather of who heard whom, until all heard all or `setup_timeout`
// passes. Then throws mccl::Error(kUnavailable) on every rank, naming the
// ranks that heard nothing from which, and `where` (group and interface).
// Consumes the probes it reads; a late one reaching the protocol is
// dropped there as foreign.
void probe_multicast(Bootstrap& bootstrap, transport::DatagramTransport& dgram, std::uint32_t tag,
                     const std::string& where, std::chrono::milliseconds setup_timeout,
                     std::chrono::milliseconds timeout);

}  // namespace mccl::detail
