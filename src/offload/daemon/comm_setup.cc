#include "offload/daemon/comm_setup.h"

#include <optional>
#include <string>

#include "common/settings.h"
#include "mccl/error.h"
#include "setup/bring_up.h"

namespace mccl::offload::daemon {

common::Status build_comm(int rank, int size, std::chrono::milliseconds timeout,
                          const CollChoices& choices, const transport::OobAllgather& oob, Comm& out,
                          const std::string& udp_iface) {
  const std::string who = "rank " + std::to_string(rank) + " (offload daemon): ";
  setup::BringUpRequest req;
  req.rank = rank;
  req.size = size;
  // The daemon multicasts over UDP, where authentication's "auto" is on.
  req.proposal.transport = TransportKind::kUdp;
  req.proposal.offloaded = true;
  req.proposal.authenticate =
      choices.authenticate < 0 ? std::nullopt : std::optional<bool>(choices.authenticate != 0);
  req.timeout = timeout;
  req.udp_iface = udp_iface.empty() ? std::nullopt : std::optional<std::string>(udp_iface);
  req.setup_timeout = std::chrono::milliseconds(
      choices.setup_timeout_ms > 0 ? choices.setup_timeout_ms
                                   : common::settings::kTransportSetupTimeoutMs.get_int());
  setup::BroughtUp up;
  common::Status st = setup::bring_up(req, oob, who, up);
  if (!st) return st;
  out.ctx = std::move(up.ctx);
  out.coll = choices.coll;
  out.coll.multicast = true;
  return st;
}

}  // namespace mccl::offload::daemon
