// The protocol's settings, read where a communicator is created: the
// MCCL_PROTO_* entries of the registry become a protocol::ProtocolConfig
// and an authentication choice, which the protocol layer takes as given
// (it reads no settings itself).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "protocol/context.h"

namespace mccl::setup {

// Every protocol setting. The incast budget follows `slowest_link_mbit`,
// the slowest link rate any rank knows (0: none), where
// MCCL_PROTO_INCAST_BYTES is auto (protocol/incast.h); every rank passes the
// same, so every rank admits the same roots at once.
protocol::ProtocolConfig protocol_config_from_settings(std::size_t mtu,
                                                       std::uint32_t slowest_link_mbit = 0);

// MCCL_PROTO_INCAST_BYTES: "auto" (protocol::auto_incast_bytes), else a byte
// count (0: no limit); the settings table admits nothing else.
std::size_t incast_bytes_from_settings(std::uint32_t slowest_mbit);

// MCCL_PROTO_AUTH: "on" true, "off" false, "auto" unset.
std::optional<bool> authenticate_from_settings();

}  // namespace mccl::setup
