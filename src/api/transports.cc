#include "api/transports.h"

#include <algorithm>
#include <string>

#include "bootstrap/inprocess.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"
#include "setup/agree.h"
#include "setup/checks.h"
#if MCCL_HAVE_IBUD
#include "transport/ibud/ibud_transport.h"
#endif
#if MCCL_HAVE_UCX
#include "transport/ucx/ucx_transport.h"
#endif
#include "transport/sim/sim_transport.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/udp/udp_transport.h"

namespace mccl::detail {

namespace {

Transports make_sim(Bootstrap& bootstrap, std::uint32_t tag) {
  const auto* inproc = mccl::bootstrap::as_in_process(bootstrap);
  if (inproc == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                "rank " + std::to_string(bootstrap.rank()) +
                    ": transport 'sim' needs an in-process bootstrap (mccl::InProcessWorld)");
  }
  auto& fabric = inproc->fabric();
  Transports t;
  // Each communicator gets its own group, named by its tag.
  t.dgram = fabric.join_datagram(tag, bootstrap.rank());
  t.reliable = fabric.join_reliable(tag, bootstrap.rank(), bootstrap.size());
  t.description = "sim";
  return t;
}

// setup::agree_on_outcome over the bootstrap: throws on every rank when a
// step failed on any.
void agree(Bootstrap& bootstrap, const common::Status& mine, const std::string& what,
           std::chrono::milliseconds timeout) {
  auto oob = [&](std::span<const std::byte> b) { return bootstrap.allgather(b, timeout); };
  const common::Status all =
      setup::agree_on_outcome(bootstrap.rank(), bootstrap.size(), mine, what, oob);
  if (!all.is_ok()) throw Error(all.code(), all.message());
}

common::Status make_ucx(Bootstrap& bootstrap, const transport::OobAllgather& oob,
                        std::chrono::milliseconds timeout, const std::string& device,
                        Transports& t) {
#if MCCL_HAVE_UCX
  // UCX picks its transports from UCX_TLS; its device is the interface the
  // ranks agreed on unless UCX_NET_DEVICES says otherwise (between
  // namespaces set UCX_TLS=tcp: UCX would use shared memory).
  transport::ucx::UcxReliableConfig uc;
  uc.rank = bootstrap.rank();
  uc.size = bootstrap.size();
  uc.connect_timeout = timeout;
  uc.net_device = device;
  auto st = transport::ucx::create_ucx_reliable(uc, oob, t.reliable);
  if (!st.is_ok()) return {st.code(), "UCX reliable transport: " + st.message()};
  return st;
#else
  (void)oob;
  (void)timeout;
  (void)device;
  (void)t;
  return common::unavailable_error("rank " + std::to_string(bootstrap.rank()) +
                                   ": MCCL_RELIABLE=ucx, but this MCCL was built without UCX "
                                   "(install libucx-dev and rebuild)");
#endif
}

// Repairs and control over TCP bound to `address`, so they cross the same
// links as the multicast data (and stay inside a namespace). The ring
// neighbours connect within `timeout` (the setup timeout); a connection
// made later may meet full links, and gets `dial_timeout` (the collective
// timeout).
common::Status make_tcp(Bootstrap& bootstrap, const transport::OobAllgather& oob,
                        std::chrono::milliseconds timeout, const std::string& address,
                        Transports& t, std::chrono::milliseconds dial_timeout) {
  transport::tcp::TcpReliableConfig tc;
  tc.rank = bootstrap.rank();
  tc.size = bootstrap.size();
  tc.bind_address = address;
  tc.connect_timeout = timeout;
  tc.dial_timeout = std::max(timeout, dial_timeout);
  auto st = transport::tcp::create_tcp_reliable(tc, oob, t.reliable);
  if (!st.is_ok()) return {st.code(), "TCP reliable transport: " + st.message()};
  return st;
}

common::Status as_status(const std::exception& e) {
  if (const auto* me = dynamic_cast<const Error*>(&e)) return {me->code(), me->what()};
  return common::internal_error(e.what());
}

Transports make_ib(Bootstrap& bootstrap, std::uint32_t tag, std::uint64_t salt,
                   std::chrono::milliseconds timeout, std::chrono::milliseconds setup) {
  const int rank = bootstrap.rank();
#if MCCL_HAVE_IBUD
  Transports t;
  transport::ibud::IbConfig ic;
  ic.comm_tag = tag;
  ic.job_salt = salt;
  ic.rank = rank;
  common::Status st = common::Status::ok();
  try {
    st = transport::ibud::create_ib_transport(ic, t.dgram);
  } catch (const std::exception& e) {
    st = as_status(e);
  }
  agree(bootstrap, st, "the InfiniBand multicast transport", timeout);
  const auto& info = transport::ibud::as_ib(t.dgram.get())->info();
  t.iface = info.ipoib_iface;
  // Repairs and control travel over TCP on the IPoIB interface.
  auto oob = [&](std::span<const std::byte> mine) { return bootstrap.allgather(mine, timeout); };
  agree(bootstrap, make_tcp(bootstrap, oob, setup, info.ipoib_addr, t, timeout),
        "the TCP reliable mesh (repairs)", timeout);
  t.description = "ib " + info.device + ":" + std::to_string(info.port) + " MGID " + info.mgid +
                  " (mtu " + std::to_string(info.mtu) + "), tcp over " + info.ipoib_iface;
  return t;
#else
  (void)tag;
  (void)salt;
  (void)timeout;
  (void)setup;
  throw Error(ErrorCode::kUnavailable, "rank " + std::to_string(rank) +
                                           ": MCCL_TRANSPORT=ib, but this MCCL was built without "
                                           "rdma-core (install libibverbs-dev and librdmacm-dev "
                                           "and rebuild)");
#endif
}

Transports make_udp(Bootstrap& bootstrap, std::uint32_t tag, std::uint64_t salt,
                    std::chrono::milliseconds timeout, std::chrono::milliseconds setup) {
  const int rank = bootstrap.rank();
  Transports t;
  transport::udp::UdpConfig uc;
  uc.comm_tag = tag;
  uc.job_salt = salt;
  uc.rank = rank;
  auto oob = [&](std::span<const std::byte> mine) { return bootstrap.allgather(mine, timeout); };

  // 1. The interface and the group. Every rank takes part in the interface
  //    exchange, also one that names its interface itself; a step that
  //    fails anywhere fails everywhere (agree), so no rank is left waiting.
  std::string reliable = "tcp", chosen_because;
  common::Status st = setup::choose_udp_interface(rank, oob, uc.iface, chosen_because);
  try {
    reliable = common::settings::kReliable.get();
    if (st.is_ok()) st = transport::udp::create_udp_transport(uc, t.dgram);
  } catch (const std::exception& e) {
    st = as_status(e);
  }
  agree(bootstrap, st, "the UDP multicast transport", timeout);
  const auto& info = transport::udp::as_udp(t.dgram.get())->info();
  t.iface = info.iface_name;
  const std::string where =
      info.group.ip + ":" + std::to_string(info.group.port) + " on " + info.iface_name;
  common::logf(common::LogLevel::kInfo, rank, "interface %s (%s): %s", info.iface_name.c_str(),
               info.iface_addr.c_str(), chosen_because.c_str());

  // 2. The reliable side, on the same interface, within the setup timeout.
  if (reliable == "ucx") {
    agree(bootstrap, make_ucx(bootstrap, oob, setup, info.iface_name, t),
          "the UCX reliable transport (repairs)", timeout);
  } else {
    agree(bootstrap, make_tcp(bootstrap, oob, setup, info.iface_addr, t, timeout),
          "the TCP reliable mesh (repairs)", timeout);
  }

  // 3. The group carries datagrams between every pair of ranks.
  const common::Status heard =
      setup::probe_multicast(rank, bootstrap.size(), *t.dgram, tag, where, setup, oob);
  if (!heard.is_ok()) throw Error(heard.code(), heard.message());
  // 4. From now on only the members' addresses are heard (where they differ).
  agree(bootstrap, setup::accept_members_only(rank, *transport::udp::as_udp(t.dgram.get()), oob),
        "the multicast source filter", timeout);
  t.description =
      "udp " + where + " (" + info.iface_addr + "; " + chosen_because + "), " + reliable;
  return t;
}

}  // namespace

Transports make_transports(TransportKind kind, Bootstrap& bootstrap, std::uint32_t tag,
                           std::uint64_t salt, std::chrono::milliseconds timeout,
                           std::chrono::milliseconds setup_timeout) {
  switch (kind) {
    case TransportKind::kSim:
      return make_sim(bootstrap, tag);
    case TransportKind::kUdp:
      return make_udp(bootstrap, tag, salt, timeout, setup_timeout);
    case TransportKind::kIb:
      return make_ib(bootstrap, tag, salt, timeout, setup_timeout);
    case TransportKind::kAuto:
      break;
  }
  throw Error(ErrorCode::kInternal,
              "rank " + std::to_string(bootstrap.rank()) + ": transport kind left unresolved");
}

bool ib_usable(std::string& why) {
#if MCCL_HAVE_IBUD
  return transport::ibud::probe_ib(why).is_ok();
#else
  why = "built without rdma-core";
  return false;
#endif
}

}  // namespace mccl::detail
