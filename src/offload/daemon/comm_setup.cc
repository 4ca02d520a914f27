#include "offload/daemon/comm_setup.h"

#include <algorithm>
#include <optional>
#include <string>

#include "common/settings.h"
#include "setup/agree.h"
#include "setup/checks.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/udp/udp_transport.h"

namespace mccl::offload::daemon {

common::Status build_comm(int rank, int size, std::chrono::milliseconds timeout,
                          const CollChoices& choices, const transport::OobAllgather& oob, Comm& out,
                          const std::string& udp_iface) {
  const std::string who = "rank " + std::to_string(rank) + " (offload daemon): ";
  try {
    // The daemon multicasts over UDP, where authentication's "auto" is on.
    setup::Proposal mine;
    mine.transport = TransportKind::kUdp;
    mine.offloaded = true;
    mine.authenticate =
        choices.authenticate < 0 ? std::nullopt : std::optional<bool>(choices.authenticate != 0);
    setup::Agreement agreed;
    common::Status st = setup::agree_on_hello(rank, size, mine, oob, who, agreed);
    if (!st) return st;

    // Each step ends with every rank's outcome (setup/checks.h), as under
    // the other engines: a rank that fails (its client's MCCL_UDP_IFACE
    // names no interface) fails every rank at once, named.
    std::unique_ptr<transport::DatagramTransport> dgram;
    std::unique_ptr<transport::ReliableTransport> reliable;
    transport::udp::UdpConfig uc;
    uc.comm_tag = agreed.tag;
    uc.job_salt = agreed.salt;
    uc.rank = rank;
    std::string because;
    st = setup::choose_udp_interface(
        rank, oob, uc.iface, because,
        udp_iface.empty() ? std::nullopt : std::optional<std::string>(udp_iface));
    try {  // a malformed MCCL_UDP_* setting throws: agreed like any failure
      if (st) st = transport::udp::create_udp_transport(uc, dgram);
    } catch (const Error& e) {
      st = {e.code(), e.what()};
    }
    st = setup::agree_on_outcome(rank, size, st, "the UDP multicast transport", oob);
    if (!st) return st;
    const auto& info = transport::udp::as_udp(dgram.get())->info();
    transport::tcp::TcpReliableConfig tc;
    tc.rank = rank;
    tc.size = size;
    tc.bind_address = info.iface_addr;
    const std::chrono::milliseconds setup_timeout(
        choices.setup_timeout_ms > 0 ? choices.setup_timeout_ms
                                     : common::settings::kTransportSetupTimeoutMs.get_int(1));
    tc.connect_timeout = setup_timeout;
    tc.dial_timeout = std::max(setup_timeout, timeout);  // later connections: see api/transports.cc
    st = transport::tcp::create_tcp_reliable(tc, oob, reliable);
    if (!st) st = {st.code(), "TCP reliable transport: " + st.message()};
    st = setup::agree_on_outcome(rank, size, st, "the TCP reliable mesh (repairs)", oob);
    if (!st) return st;
    const std::string where =
        info.group.ip + ":" + std::to_string(info.group.port) + " on " + info.iface_name;
    st = setup::probe_multicast(rank, size, *dgram, agreed.tag, where, setup_timeout, oob);
    if (!st) return st;
    st = setup::accept_members_only(rank, *transport::udp::as_udp(dgram.get()), oob);
    st = setup::agree_on_outcome(rank, size, st, "the multicast source filter", oob);
    if (!st) return st;

    std::uint32_t mtu = 0;
    st = setup::agree_on_link(rank, size, setup::link_facts(*dgram), oob, who, agreed, mtu);
    if (!st) return st;
    protocol::ProtocolConfig pc = protocol::protocol_config_from_settings(mtu);
    if (agreed.auth) protocol::enable_auth(pc, agreed.key);
    pc.op_timeout = common::saturating_duration(timeout);
    out.ctx = std::make_unique<protocol::Context>(rank, size, agreed.tag, std::move(dgram),
                                                  std::move(reliable), pc);
    out.coll = coll::CollConfig{};
    out.coll.multicast = true;
    out.coll.allgather = static_cast<AllgatherAlgorithm>(choices.allgather_algo);
    out.coll.broadcast = static_cast<BroadcastAlgorithm>(choices.broadcast_algo);
    out.coll.concurrent_roots = choices.concurrent_roots;
    out.coll.allreduce = static_cast<AllreduceAlgorithm>(choices.allreduce_algo);
    out.coll.segment_bytes = choices.segment_bytes;
    out.coll.reduce_segment_bytes = choices.reduce_segment_bytes;
    out.coll.allreduce_small_bytes = choices.allreduce_small_bytes;
    out.coll.multicast_from = {choices.bcast_mcast_from, choices.allgather_mcast_from};
    out.coll.rs_share = choices.rs_share;
    return common::Status::ok();
  } catch (const Error& e) {
    return {e.code(), who + e.what()};
  } catch (const std::exception& e) {
    return common::internal_error(who + e.what());
  }
}

}  // namespace mccl::offload::daemon
