#include "setup/bring_up.h"

#include <exception>
#include <string>

#include "common/log.h"
#include "setup/protocol_settings.h"
#include "setup/transports.h"

namespace mccl::setup {

namespace {

// Step 1's only local work: which transport this rank can offer.
void resolve_proposal(const BringUpRequest& req, Proposal& mine) {
  if (mine.transport != TransportKind::kAuto) return;
  if (req.fabric != nullptr) {
    mine.transport = TransportKind::kSim;
    return;
  }
  std::string why;
  mine.ib_usable = ib_usable(why);
  common::logf(common::LogLevel::kInfo, req.rank, "InfiniBand %s (%s)",
               mine.ib_usable ? "usable" : "not usable", why.c_str());
}

common::Status bring_up_steps(const BringUpRequest& req, const transport::OobAllgather& oob,
                              const std::string& who, BroughtUp& out) {
  Proposal mine = req.proposal;
  resolve_proposal(req, mine);
  common::Status st = agree_on_hello(req.rank, req.size, mine, oob, who, out.agreed);
  if (!st) return st;

  TransportRequest tr;
  tr.rank = req.rank;
  tr.size = req.size;
  tr.tag = out.agreed.tag;
  tr.salt = out.agreed.salt;
  tr.timeout = req.timeout;
  tr.setup_timeout = req.setup_timeout;
  tr.fabric = req.fabric;
  tr.sim_node = req.sim_node;
  tr.udp_iface = req.udp_iface;
  Transports net;
  st = make_transports(out.agreed.transport, tr, oob, net);
  if (!st) return st;

  std::uint32_t mtu = 0;
  st = agree_on_link(req.rank, req.size, link_facts(*net.dgram), oob, who, out.agreed, mtu);
  if (!st) return st;
  common::logf(common::LogLevel::kInfo, req.rank, "communicator of %d ranks on %s, mtu %u",
               req.size, net.description.c_str(), mtu);

  protocol::ProtocolConfig pc =
      setup::protocol_config_from_settings(mtu, out.agreed.slowest_link_mbit);
  common::logf(common::LogLevel::kInfo, req.rank,
               "incast budget %zu bytes (MCCL_PROTO_INCAST_BYTES; slowest known link %u Mbit/s)",
               pc.incast_bytes, out.agreed.slowest_link_mbit);
  if (out.agreed.auth) protocol::enable_auth(pc, out.agreed.key);
  pc.op_timeout = common::saturating_duration(req.timeout);
  if (!req.eager_completion) pc.eager_bytes = 0;
  out.ctx = std::make_unique<protocol::Context>(req.rank, req.size, out.agreed.tag,
                                                std::move(net.dgram), std::move(net.reliable), pc);
  out.iface = std::move(net.iface);
  out.description = std::move(net.description);
  return st;
}

// A message that already starts with `who` (agree.h's steps) keeps it once.
std::string named(const std::string& who, const std::string& message) {
  return message.starts_with(who) ? message : who + message;
}

}  // namespace

common::Status bring_up(const BringUpRequest& req, const transport::OobAllgather& oob,
                        const std::string& who, BroughtUp& out) {
  const common::Status st = bring_up_steps(req, oob, who, out);
  if (!st) return {st.code(), named(who, st.message())};
  return st;
}

}  // namespace mccl::setup
