#include "api/transports.h"

#include <string>

#include "api/world_state.h"
#include "common/settings.h"
#include "common/status.h"
#if MCCL_HAVE_IBUD
#include "transport/ibud/ibud_transport.h"
#endif
#if MCCL_HAVE_UCX
#include "transport/ucx/ucx_transport.h"
#endif
#include "transport/tcp/tcp_transport.h"
#include "transport/udp/udp_transport.h"

namespace mccl::detail {

namespace {

void check(const common::Status& st, int rank, const char* what) {
  if (!st.is_ok()) {
    throw Error(st.code(), "rank " + std::to_string(rank) + ": " + what + ": " + st.message());
  }
}

Transports make_sim(Bootstrap& bootstrap, std::uint32_t tag) {
  auto* inproc = dynamic_cast<InProcessBootstrap*>(&bootstrap);
  if (inproc == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                "rank " + std::to_string(bootstrap.rank()) +
                    ": transport 'sim' needs an in-process bootstrap (mccl::InProcessWorld)");
  }
  auto& fabric = inproc->world().fabric();
  Transports t;
  // Each communicator gets its own group, named by its tag.
  t.dgram = fabric.join_datagram(tag, bootstrap.rank());
  t.reliable = fabric.join_reliable(tag, bootstrap.rank(), bootstrap.size());
  t.description = "sim";
  return t;
}

void make_ucx(Bootstrap& bootstrap, const transport::OobAllgather& oob,
              std::chrono::milliseconds timeout, Transports& t) {
#if MCCL_HAVE_UCX
  // UCX picks its own devices and transports from UCX_TLS and
  // UCX_NET_DEVICES; between namespaces set UCX_TLS=tcp and
  // UCX_NET_DEVICES=<the interface>.
  transport::ucx::UcxReliableConfig uc;
  uc.rank = bootstrap.rank();
  uc.size = bootstrap.size();
  uc.connect_timeout = timeout;
  check(transport::ucx::create_ucx_reliable(uc, oob, t.reliable), bootstrap.rank(),
        "UCX reliable transport");
#else
  (void)oob;
  (void)timeout;
  (void)t;
  throw Error(ErrorCode::kUnavailable, "rank " + std::to_string(bootstrap.rank()) +
                                           ": MCCL_RELIABLE=ucx, but this MCCL was built without "
                                           "UCX (install libucx-dev and rebuild)");
#endif
}

// Repairs and control over TCP bound to `address`, so they cross the same
// links as the multicast data (and stay inside a namespace).
void make_tcp(Bootstrap& bootstrap, const transport::OobAllgather& oob,
              std::chrono::milliseconds timeout, const std::string& address, Transports& t) {
  transport::tcp::TcpReliableConfig tc;
  tc.rank = bootstrap.rank();
  tc.size = bootstrap.size();
  tc.bind_address = address;
  tc.connect_timeout = timeout;
  check(transport::tcp::create_tcp_reliable(tc, oob, t.reliable), bootstrap.rank(),
        "TCP reliable transport");
}

Transports make_ib(Bootstrap& bootstrap, std::uint32_t tag, std::uint64_t salt,
                   std::chrono::milliseconds timeout) {
  const int rank = bootstrap.rank();
#if MCCL_HAVE_IBUD
  Transports t;
  transport::ibud::IbConfig ic;
  ic.comm_tag = tag;
  ic.job_salt = salt;
  ic.rank = rank;
  check(transport::ibud::create_ib_transport(ic, t.dgram), rank, "InfiniBand multicast transport");
  const auto& info = transport::ibud::as_ib(t.dgram.get())->info();
  t.iface = info.ipoib_iface;
  // Repairs and control travel over TCP on the IPoIB interface.
  auto oob = [&](std::span<const std::byte> mine) { return bootstrap.allgather(mine, timeout); };
  make_tcp(bootstrap, oob, timeout, info.ipoib_addr, t);
  t.description = "ib " + info.device + ":" + std::to_string(info.port) + " MGID " + info.mgid +
                  " (mtu " + std::to_string(info.mtu) + "), tcp over " + info.ipoib_iface;
  return t;
#else
  (void)tag;
  (void)salt;
  (void)timeout;
  throw Error(ErrorCode::kUnavailable, "rank " + std::to_string(rank) +
                                           ": MCCL_TRANSPORT=ib, but this MCCL was built without "
                                           "rdma-core (install libibverbs-dev and librdmacm-dev "
                                           "and rebuild)");
#endif
}

Transports make_udp(Bootstrap& bootstrap, std::uint32_t tag, std::uint64_t salt,
                    std::chrono::milliseconds timeout) {
  const int rank = bootstrap.rank();
  Transports t;
  transport::udp::UdpConfig uc;
  uc.comm_tag = tag;
  uc.job_salt = salt;
  uc.rank = rank;
  check(transport::udp::create_udp_transport(uc, t.dgram), rank, "UDP multicast transport");
  const auto& info = transport::udp::as_udp(t.dgram.get())->info();
  t.iface = info.iface_name;

  auto oob = [&](std::span<const std::byte> mine) { return bootstrap.allgather(mine, timeout); };
  const std::string reliable = common::settings::kReliable.get();
  if (reliable == "ucx") {
    make_ucx(bootstrap, oob, timeout, t);
  } else {
    make_tcp(bootstrap, oob, timeout, info.iface_addr, t);
  }
  t.description = "udp " + info.group.ip + ":" + std::to_string(info.group.port) + " on " +
                  info.iface_name + " (" + info.iface_addr + "), " + reliable;
  return t;
}

}  // namespace

Transports make_transports(TransportKind kind, Bootstrap& bootstrap, std::uint32_t tag,
                           std::uint64_t salt, std::chrono::milliseconds timeout) {
  switch (kind) {
    case TransportKind::kSim:
      return make_sim(bootstrap, tag);
    case TransportKind::kUdp:
      return make_udp(bootstrap, tag, salt, timeout);
    case TransportKind::kIb:
      return make_ib(bootstrap, tag, salt, timeout);
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
