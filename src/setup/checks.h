// The collective checks that make creating a communicator fail fast, on
// every rank at once, instead of one rank stalling until the others time
// out: each setup step ends with an exchange of every rank's outcome, and
// the multicast group is proven to carry datagrams between all ranks. Used
// by the application's engines (src/api) and the offload daemon alike, so a
// failure injected on one rank (a bad MCCL_UDP_IFACE) ends creation the
// same way under every engine.
#pragma once

#include <chrono>
#include <string>

#include "common/status.h"
#include "transport/datagram.h"
#include "transport/oob.h"
#include "transport/udp/udp_transport.h"

namespace mccl::setup {

// Collective and blocking (one `oob` allgather): every rank passes its own
// outcome of the step `what`. Ok when every rank succeeded; else, on every
// rank, the first failed rank's code and a message naming each failed rank
// and its reason.
common::Status agree_on_outcome(int rank, int size, const common::Status& mine,
                                const std::string& what, const transport::OobAllgather& oob);

// Collective and blocking: every rank sends small probe datagrams on the
// group and listens for everyone else's, in rounds joined by an `oob`
// allgather of who heard whom, until all heard all or `setup_timeout`
// passes. Then kUnavailable on every rank, naming the ranks that heard
// nothing from which, and `where` (group and interface). Consumes the
// probes it reads; a late one reaching the protocol is dropped there as
// foreign.
common::Status probe_multicast(int rank, int size, transport::DatagramTransport& dgram,
                               std::uint32_t tag, const std::string& where,
                               std::chrono::milliseconds setup_timeout,
                               const transport::OobAllgather& oob);

// Collective (one `oob` allgather): every rank's UDP source address
// (info().iface_addr), so that `udp` drops datagrams from any other
// (UdpTransport::accept_only_from; no filter where all share one address).
common::Status accept_members_only(int rank, transport::udp::UdpTransport& udp,
                                   const transport::OobAllgather& oob);

}  // namespace mccl::setup
