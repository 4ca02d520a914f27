#include "setup/protocol_settings.h"

#include <string>

#include "common/clock.h"
#include "common/settings.h"
#include "protocol/incast.h"

namespace mccl::setup {

protocol::ProtocolConfig protocol_config_from_settings(std::size_t mtu,
                                                       std::uint32_t slowest_link_mbit) {
  namespace s = common::settings;
  protocol::ProtocolConfig c;
  c.chunk_bytes = static_cast<std::uint32_t>(mtu - protocol::kDataHeaderBytes);
  c.early_bytes = static_cast<std::size_t>(s::kProtoEarlyBytes.get_int());
  c.reorder_window = static_cast<std::size_t>(s::kProtoReorderWindow.get_int());
  c.stall_factor = s::kProtoStallFactor.get_double();
  c.stall_min = std::chrono::microseconds(s::kProtoStallMinUs.get_int());
  c.stall_max = std::chrono::microseconds(s::kProtoStallMaxUs.get_int());
  c.first_timeout = std::chrono::microseconds(s::kProtoFirstTimeoutUs.get_int());
  c.repair_max_bytes = static_cast<std::size_t>(s::kProtoRepairMaxBytes.get_int());
  c.send_batch = static_cast<std::size_t>(s::kProtoSendBatch.get_int());
  if (c.send_batch == 0) c.send_batch = protocol::default_send_batch(mtu);
  c.helper_threads = static_cast<unsigned>(s::kProtoHelperThreads.get_int());
  c.incast_bytes = incast_bytes_from_settings(slowest_link_mbit);
  c.checksum = s::kProtoChecksum.get_bool();
  c.eager_bytes = static_cast<std::size_t>(s::kProtoEagerBytes.get_int());
  c.eager_budget = static_cast<std::size_t>(s::kProtoEagerBudget.get_int());
  // Up to INT64_MAX ms ("no deadline"), which overflows nanoseconds: saturate.
  c.op_timeout =
      common::saturating_duration(std::chrono::milliseconds(s::kCollTimeoutMs.get_int()));
  const std::string adapt = s::kProtoRateAdapt.get();
  c.rate.adapt = adapt != "off";
  c.rate.adapt_reported = adapt == "on";
  constexpr double kBytesPerMbit = 1e6 / 8;
  c.rate.initial_bytes_per_s = s::kProtoRateInitialMbit.get_double() * kBytesPerMbit;
  c.rate.floor_bytes_per_s = s::kProtoRateFloorMbit.get_double() * kBytesPerMbit;
  c.rate.ceiling_bytes_per_s = s::kProtoRateCeilingMbit.get_double() * kBytesPerMbit;
  return c;
}

std::size_t incast_bytes_from_settings(std::uint32_t slowest_mbit) {
  if (auto bytes = common::settings::kProtoIncastBytes.get_count()) {
    return static_cast<std::size_t>(*bytes);
  }
  return protocol::auto_incast_bytes(slowest_mbit);
}

std::optional<bool> authenticate_from_settings() {
  const std::string v = common::settings::kProtoAuth.get();
  if (v == "on") return true;
  if (v == "off") return false;
  return std::nullopt;
}

}  // namespace mccl::setup
