#include "setup/transports.h"

#include <algorithm>
#include <exception>
#include <string>

#include "common/log.h"
#include "common/settings.h"
#include "setup/agree.h"
#include "setup/checks.h"
#include "setup/transport_settings.h"
#if MCCL_HAVE_IBUD
#include "transport/ibud/ibud_transport.h"
#endif
#if MCCL_HAVE_UCX
#include "transport/ucx/ucx_transport.h"
#endif
#include "transport/sim/sim_transport.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/udp/udp_transport.h"

namespace mccl::setup {

namespace {

std::string rank_prefix(int rank) { return "rank " + std::to_string(rank) + ": "; }

common::Status make_sim(const TransportRequest& req, Transports& t) {
  if (req.fabric == nullptr) {
    return common::invalid_argument(
        rank_prefix(req.rank) +
        "transport 'sim' needs an in-process bootstrap (mccl::InProcessWorld)");
  }
  // Each communicator gets its own group, named by its tag.
  t.dgram = req.fabric->join_datagram(req.tag, req.rank, req.sim_node);
  t.reliable = req.fabric->join_reliable(req.tag, req.rank, req.size, req.sim_node);
  t.description = "sim";
  return common::Status::ok();
}

common::Status make_ucx(const TransportRequest& req, const transport::OobAllgather& oob,
                        const std::string& device, Transports& t) {
#if MCCL_HAVE_UCX
  // UCX picks its transports from UCX_TLS; its device is the interface the
  // ranks agreed on unless UCX_NET_DEVICES says otherwise (between
  // namespaces set UCX_TLS=tcp: UCX would use shared memory).
  transport::ucx::UcxReliableConfig uc;
  uc.rank = req.rank;
  uc.size = req.size;
  uc.connect_timeout = req.setup_timeout;
  uc.net_device = device;
  auto st = transport::ucx::create_ucx_reliable(uc, oob, t.reliable);
  if (!st.is_ok()) return {st.code(), "UCX reliable transport: " + st.message()};
  return st;
#else
  (void)oob;
  (void)device;
  (void)t;
  return common::unavailable_error(rank_prefix(req.rank) +
                                   "MCCL_RELIABLE=ucx, but this MCCL was built without UCX "
                                   "(install libucx-dev and rebuild)");
#endif
}

// Repairs and control over TCP bound to `address`, so they cross the same
// links as the multicast data (and stay inside a namespace). The ring
// neighbours connect within the setup timeout; a connection made later may
// meet full links, and gets the longer of it and the collective timeout.
common::Status make_tcp(const TransportRequest& req, const transport::OobAllgather& oob,
                        const std::string& address, Transports& t) {
  transport::tcp::TcpReliableConfig tc = tcp_config_from_settings();
  tc.rank = req.rank;
  tc.size = req.size;
  tc.bind_address = address;
  tc.connect_timeout = req.setup_timeout;
  tc.dial_timeout = std::max(req.setup_timeout, req.timeout);
  auto st = transport::tcp::create_tcp_reliable(tc, oob, t.reliable);
  if (!st.is_ok()) return {st.code(), "TCP reliable transport: " + st.message()};
  return st;
}

common::Status make_ib(const TransportRequest& req, const transport::OobAllgather& oob,
                       Transports& t) {
#if MCCL_HAVE_IBUD
  transport::ibud::IbConfig ic = ib_config_from_settings();
  ic.comm_tag = req.tag;
  ic.job_salt = req.salt;
  ic.rank = req.rank;
  common::Status st = transport::ibud::create_ib_transport(ic, t.dgram);
  st = agree_on_outcome(req.rank, req.size, st, "the InfiniBand multicast transport", oob);
  if (!st) return st;
  const auto& info = transport::ibud::as_ib(t.dgram.get())->info();
  t.iface = info.ipoib_iface;
  // Repairs and control travel over TCP on the IPoIB interface.
  st = agree_on_outcome(req.rank, req.size, make_tcp(req, oob, info.ipoib_addr, t),
                        "the TCP reliable mesh (repairs)", oob);
  if (!st) return st;
  t.description = "ib " + info.device + ":" + std::to_string(info.port) + " MGID " + info.mgid +
                  " (mtu " + std::to_string(info.mtu) + "), tcp over " + info.ipoib_iface;
  return st;
#else
  (void)oob;
  (void)t;
  return common::unavailable_error(rank_prefix(req.rank) +
                                   "MCCL_TRANSPORT=ib, but this MCCL was built without "
                                   "rdma-core (install libibverbs-dev and librdmacm-dev "
                                   "and rebuild)");
#endif
}

common::Status make_udp(const TransportRequest& req, const transport::OobAllgather& oob,
                        Transports& t) {
  const int rank = req.rank;
  transport::udp::UdpConfig uc = udp_config_from_settings();
  uc.comm_tag = req.tag;
  uc.job_salt = req.salt;
  uc.rank = rank;

  // 1. The interface and the group. Every rank takes part in the interface
  //    exchange, also one that names its interface itself; a step that
  //    fails anywhere fails everywhere, so no rank is left waiting.
  std::string reliable = "tcp", chosen_because;
  common::Status st = choose_udp_interface(rank, oob, uc.iface, chosen_because, req.udp_iface);
  reliable = common::settings::kReliable.get();
  if (st.is_ok()) st = transport::udp::create_udp_transport(uc, t.dgram);
  st = agree_on_outcome(rank, req.size, st, "the UDP multicast transport", oob);
  if (!st) return st;
  const auto& info = transport::udp::as_udp(t.dgram.get())->info();
  t.iface = info.iface_name;
  const std::string where =
      info.group.ip + ":" + std::to_string(info.group.port) + " on " + info.iface_name;
  common::logf(common::LogLevel::kInfo, rank, "interface %s (%s): %s", info.iface_name.c_str(),
               info.iface_addr.c_str(), chosen_because.c_str());

  // 2. The reliable side, on the same interface, within the setup timeout.
  if (reliable == "ucx") {
    st = agree_on_outcome(rank, req.size, make_ucx(req, oob, info.iface_name, t),
                          "the UCX reliable transport (repairs)", oob);
  } else {
    st = agree_on_outcome(rank, req.size, make_tcp(req, oob, info.iface_addr, t),
                          "the TCP reliable mesh (repairs)", oob);
  }
  if (!st) return st;

  // 3. The group carries datagrams between every pair of ranks.
  st = probe_multicast(rank, req.size, *t.dgram, req.tag, where, req.setup_timeout, oob);
  if (!st) return st;
  // 4. From now on only the members' addresses are heard (where they differ).
  st = agree_on_outcome(rank, req.size,
                        accept_members_only(rank, *transport::udp::as_udp(t.dgram.get()), oob),
                        "the multicast source filter", oob);
  if (!st) return st;
  t.description =
      "udp " + where + " (" + info.iface_addr + "; " + chosen_because + "), " + reliable;
  return st;
}

}  // namespace

common::Status make_transports(TransportKind kind, const TransportRequest& req,
                               const transport::OobAllgather& oob, Transports& out) {
  switch (kind) {
    case TransportKind::kSim:
      return make_sim(req, out);
    case TransportKind::kUdp:
      return make_udp(req, oob, out);
    case TransportKind::kIb:
      return make_ib(req, oob, out);
    case TransportKind::kAuto:
      break;
  }
  return common::internal_error(rank_prefix(req.rank) + "transport kind left unresolved");
}

bool ib_usable(std::string& why) {
#if MCCL_HAVE_IBUD
  return transport::ibud::probe_ib(common::settings::kIbDev.get(), why).is_ok();
#else
  why = "built without rdma-core";
  return false;
#endif
}

}  // namespace mccl::setup
