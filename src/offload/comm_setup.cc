#include "offload/comm_setup.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/settings.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/udp/discovery.h"
#include "transport/udp/udp_transport.h"

namespace mccl::offload {

namespace {

struct Hello {
  std::uint32_t tag;
  std::uint32_t checksum;
  std::uint64_t salt;
  std::uint32_t auth_mode;   // protocol::AuthMode
  std::uint32_t auth_built;  // with libsodium
  protocol::AuthKey key;     // rank 0's authenticates the datagrams
};

template <typename T>
common::Status gather(const transport::OobAllgather& oob, const T& mine, int size,
                      std::vector<T>& out) {
  auto all = oob(std::as_bytes(std::span(&mine, 1)));
  if (all.size() != sizeof(T) * static_cast<std::size_t>(size)) {
    return common::internal_error("offload: the relayed allgather returned " +
                                  std::to_string(all.size()) + " bytes");
  }
  out.resize(static_cast<std::size_t>(size));
  std::memcpy(out.data(), all.data(), all.size());
  return common::Status::ok();
}

}  // namespace

common::Status build_comm(int rank, int size, std::chrono::milliseconds timeout,
                          const CollChoices& choices, const transport::OobAllgather& oob,
                          Comm& out) {
  const std::string who = "rank " + std::to_string(rank) + " (offload daemon): ";
  try {
    protocol::AuthMode auth_mode = protocol::AuthMode::kAuto;
    const std::optional<bool> explicit_auth =
        choices.authenticate < 0 ? std::nullopt : std::optional<bool>(choices.authenticate != 0);
    if (common::Status s = protocol::auth_mode(rank, explicit_auth, auth_mode); !s.is_ok()) {
      return {s.code(), who + s.message()};
    }
    std::random_device rd;
    Hello mine{0,
               common::settings::kProtoChecksum.get_bool() ? 1u : 0u,
               (std::uint64_t{rd()} << 32) | rd(),
               static_cast<std::uint32_t>(auth_mode),
               protocol::auth_available() ? 1u : 0u,
               protocol::random_auth_key()};
    while (mine.tag == 0) mine.tag = rd();
    std::vector<Hello> hellos;
    auto st = gather(oob, mine, size, hellos);
    if (!st) return st;
    // The daemon multicasts over UDP, where "auto" is on.
    auto auth_of = [](const Hello& h) {
      return protocol::auth_resolved(static_cast<protocol::AuthMode>(h.auth_mode),
                                     h.auth_built != 0, true);
    };
    const bool auth = auth_of(mine);
    for (int r = 0; r < size; ++r) {
      if (hellos[r].checksum != mine.checksum) {
        return common::mismatch_error(who + "rank " + std::to_string(r) +
                                      " disagrees on MCCL_PROTO_CHECKSUM");
      }
      if (auth_of(hellos[r]) != auth) {
        return common::mismatch_error(who + protocol::auth_mismatch(r, auth_of(hellos[r]), auth));
      }
    }
    const std::uint32_t tag = hellos[0].tag;

    std::unique_ptr<transport::DatagramTransport> dgram;
    std::unique_ptr<transport::ReliableTransport> reliable;
    transport::udp::UdpConfig uc;
    uc.comm_tag = tag;
    uc.job_salt = hellos[0].salt;
    uc.rank = rank;
    // Every daemon takes part in the interface exchange (discovery.h).
    transport::udp::IfaceChoice choice;
    const common::Status found = transport::udp::discover_interface(oob, rank, choice);
    if (common::settings::kUdpIface.get() == "auto") {
      if (!found.is_ok()) return {found.code(), who + found.message()};
      uc.iface = choice.spec;
    }
    st = transport::udp::create_udp_transport(uc, dgram);
    if (!st) return {st.code(), who + "UDP multicast transport: " + st.message()};
    const auto& info = transport::udp::as_udp(dgram.get())->info();
    transport::tcp::TcpReliableConfig tc;
    tc.rank = rank;
    tc.size = size;
    tc.bind_address = info.iface_addr;
    tc.connect_timeout =
        std::chrono::milliseconds(common::settings::kTransportSetupTimeoutMs.get_int(1));
    st = transport::tcp::create_tcp_reliable(tc, oob, reliable);
    if (!st) return {st.code(), who + "TCP reliable transport: " + st.message()};

    const std::uint32_t my_mtu = static_cast<std::uint32_t>(dgram->caps().mtu);
    std::vector<std::uint32_t> mtus;
    st = gather(oob, my_mtu, size, mtus);
    if (!st) return st;
    const std::uint32_t mtu = *std::min_element(mtus.begin(), mtus.end());
    if (mtu <= protocol::data_header_bytes(auth) + 64) {
      return common::unavailable_error(who + "the network's datagrams are too small");
    }
    protocol::ProtocolConfig pc = protocol::protocol_config_from_settings(mtu);
    if (auth) protocol::enable_auth(pc, hellos[0].key);
    pc.op_timeout = common::saturating_duration(timeout);
    out.ctx = std::make_unique<protocol::Context>(rank, size, tag, std::move(dgram),
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
    out.coll.rs_share = choices.rs_share;
    return common::Status::ok();
  } catch (const Error& e) {
    return {e.code(), who + e.what()};
  } catch (const std::exception& e) {
    return common::internal_error(who + e.what());
  }
}

}  // namespace mccl::offload
