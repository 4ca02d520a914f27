#include "offload/daemon/comm_setup.h"

#include <optional>
#include <string>

#include "mccl/error.h"

namespace mccl::offload::daemon {

setup::BringUpRequest bring_up_request(int rank, int size, std::chrono::milliseconds timeout,
                                       const CollChoices& choices, const std::string& udp_iface,
                                       std::uint32_t epoch) {
  setup::BringUpRequest req;
  req.rank = rank;
  req.size = size;
  // The daemon multicasts over UDP, where authentication's "auto" is on.
  req.proposal.transport = TransportKind::kUdp;
  req.proposal.offloaded = true;
  // Unknown (0): one daemon serves every rank of its host on cores it does
  // not know the share of, so the shared-cores table serves (coll/tuning.h).
  req.proposal.cores = 0;
  req.proposal.authenticate =
      choices.authenticate < 0 ? std::nullopt : std::optional<bool>(choices.authenticate != 0);
  req.proposal.epoch = epoch;
  req.timeout = timeout;
  req.udp_iface = udp_iface.empty() ? std::nullopt : std::optional<std::string>(udp_iface);
  // The client's (its MCCL_TRANSPORT_SETUP_TIMEOUT_MS or CommOptions); a
  // request without one (the daemon's self test) waits its whole timeout.
  req.setup_timeout =
      choices.setup_timeout_ms > 0 ? std::chrono::milliseconds(choices.setup_timeout_ms) : timeout;
  return req;
}

Comm comm_of(setup::BroughtUp& up, const CollChoices& choices) {
  Comm comm{std::move(up.ctx), choices.coll, up.agreed.epoch};
  comm.coll.multicast = true;
  comm.coll.placement = up.agreed.placement();
  return comm;
}

common::Status build_comm(int rank, int size, std::chrono::milliseconds timeout,
                          const CollChoices& choices, const transport::OobAllgather& oob, Comm& out,
                          const std::string& udp_iface, std::uint32_t epoch) {
  const std::string who = "rank " + std::to_string(rank) + " (offload daemon): ";
  setup::BroughtUp up;
  common::Status st = setup::bring_up(
      bring_up_request(rank, size, timeout, choices, udp_iface, epoch), oob, who, up);
  if (st) out = comm_of(up, choices);
  return st;
}

}  // namespace mccl::offload::daemon
