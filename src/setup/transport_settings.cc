#include "setup/transport_settings.h"

#include <unistd.h>

#include "common/settings.h"

namespace mccl::setup {

namespace s = common::settings;

transport::udp::UdpConfig udp_config_from_settings() {
  transport::udp::UdpConfig c;
  c.rate_mbit = s::kUdpRateMbit.get_double();
  c.frame_overhead = static_cast<std::size_t>(s::kUdpFrameOverhead.get_int());
  c.rcvbuf_bytes = static_cast<std::size_t>(s::kUdpRcvbuf.get_int());
  c.max_datagram = static_cast<std::size_t>(s::kUdpMaxDatagram.get_int());
  c.gso = s::kUdpGso.get();
  c.gro = s::kUdpGro.get();
  c.test_drop_permille = static_cast<int>(s::kUdpTestDropPermille.get_int());
  return c;
}

transport::tcp::TcpReliableConfig tcp_config_from_settings() {
  transport::tcp::TcpReliableConfig c;
  c.max_connections = static_cast<int>(s::kTcpMaxConnections.get_int());
  c.congestion = s::kTcpCongestion.get();
  return c;
}

transport::ibud::IbConfig ib_config_from_settings() {
  transport::ibud::IbConfig c;
  c.device = s::kIbDev.get();
  c.mgid = s::kIbMgid.get();
  c.ipoib_iface = s::kIbIpoibIface.get();
  c.rx_depth = static_cast<std::size_t>(s::kIbRxDepth.get_int());
  c.signal_every = static_cast<std::size_t>(s::kIbSignalEvery.get_int());
  return c;
}

std::vector<std::string> launcher_addresses_from_env() {
  std::vector<std::string> out;
  if (auto v = s::kBootstrapAddr.from_env()) out.push_back(*v);
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    if (kv.rfind("PMIX_SERVER_URI", 0) == 0 || kv.rfind("PMI_PORT=", 0) == 0) {
      out.push_back(kv.substr(kv.find('=') + 1));
    }
  }
  return out;
}

}  // namespace mccl::setup
