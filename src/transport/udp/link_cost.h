// What a datagram costs the link it is paced to, and the byte rate the
// pacer runs at for a link rate.
//
// A link's rate (an interface's speed, MCCL_UDP_RATE_MBIT) counts every bit
// on the wire: on Ethernet each frame carries, besides its IP packet, a
// 14-byte header, a 4-byte FCS, an 8-byte preamble and a 12-byte gap. A
// sender that paced IP bytes to the link rate overran it by 38 / 1500 =
// 2.5% at MTU 1500, and where `k` roots share a receiver's switch port the
// port's queue grew by that much of the rate for the whole collective
// (docs/scale.md, "Pacing to the wire").
#pragma once

#include <cstddef>

namespace mccl::transport::udp {

inline constexpr std::size_t kIpUdpHeader = 28;  // IPv4 (no options) + UDP

// Ethernet's cost per frame beyond the IP packet: header 14, FCS 4,
// preamble and start delimiter 8, inter-frame gap 12 (MCCL_UDP_FRAME_OVERHEAD).
inline constexpr std::size_t kEthernetFrameOverhead = 38;

// The share of the link rate the senders pace to. Paced bursts are bounded
// (the incast budget), so a receiver's port queue stays bounded even at the
// full rate; the 1% is for what is not paced on the same links (repairs and
// control over TCP) and for clocks that differ between the ends.
inline constexpr double kPacedShareOfLink = 0.99;

// Bytes one datagram of `udp_payload` bytes occupies on the link.
constexpr std::size_t link_bytes(std::size_t udp_payload, std::size_t frame_overhead) {
  return udp_payload + kIpUdpHeader + frame_overhead;
}

// The rate, in link bytes per second, the pacer runs at on a link of
// `rate_mbit`; 0 stays 0 (unpaced).
constexpr double paced_bytes_per_s(double rate_mbit) {
  return rate_mbit > 0 ? rate_mbit * 1e6 / 8 * kPacedShareOfLink : 0;
}

}  // namespace mccl::transport::udp
