// The UdpTransport implementation: its sockets, the send path (sendmmsg,
// two iovecs per datagram, paced; endpoint.cc) and the receive path
// (recvmmsg into a preallocated ring of buffers; endpoint_receive.cc).
// create_udp_transport (udp_transport.cc) sets the sockets up; this class
// only moves datagrams.
//
// The per-datagram cost of the kernel's paths, not bytes, is what limits a
// host, so datagrams travel through the kernel in runs:
// - GSO (MCCL_UDP_GSO, on where the kernel takes it): each sendmmsg message
//   carries a run of datagrams laid out back to back with a UDP_SEGMENT
//   control message giving the segment size; the kernel (or the NIC) cuts
//   it into ordinary datagrams, so receivers see no difference. A run is
//   datagrams of one size, but its last may be shorter (the kernel cuts
//   every segment but the last to exactly the segment size), at most
//   kMaxSegments of them and kMaxGsoBytes in all. The pacer is charged per
//   message, as a run leaves at once; the counters count datagrams.
// - GRO (MCCL_UDP_GRO, likewise): the receive socket takes a run whole (a
//   superpacket nobody cut on the way, or what the device's GRO coalesced)
//   into one 64 KiB receive slot, with the segment size in a UDP_GRO
//   control message; poll() cuts it back into datagrams at that size (the
//   last may be shorter) and hands every datagram of one recvmmsg call to
//   the handler as one batch.
// - Landing (transport/datagram.h, landing.h): where the handler expects
//   datagrams, their payloads are read straight to where they belong, so
//   the bytes of those are copied once (by the kernel), not twice.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/udp/landing.h"
#include "transport/udp/pacer.h"
#include "transport/udp/socket.h"
#include "transport/udp/udp_transport.h"

namespace mccl::transport::udp {

// Everything creation resolved, handed to the endpoint whole.
struct EndpointSetup {
  Fd send_fd;  // bound to the interface address, connected to the group
  Fd recv_fd;  // bound to group:port, joined
  UdpInfo info;
  std::size_t mtu = 0;            // caps().mtu
  std::size_t max_in_flight = 0;  // caps().max_in_flight
  std::uint32_t self_addr = 0;    // send socket's address and port, host order
  std::uint16_t self_port = 0;
  int rank = -1;
  bool gso_required = false;  // MCCL_UDP_GSO=on: a refused GSO send is an error, not a fallback
};

class UdpEndpoint final : public UdpTransport {
 public:
  explicit UdpEndpoint(EndpointSetup setup);

  DatagramCaps caps() const override;
  common::Status send(std::span<const OutDatagram> batch, std::size_t& accepted) override;
  common::Status poll(DatagramHandler& handler, std::size_t max, std::size_t& delivered) override;
  // Paces to the link rate / senders (when paced at all): info().rate_mbit,
  // or the protocol's estimate where that is unknown.
  void share_link(unsigned senders) override;
  bool link_rate_unknown() const override { return info_.rate_unknown; }
  bool link_rate_reported() const override { return info_.rate_reported; }
  void set_link_estimate(double bytes_per_s) override;
  void set_incast_budget(std::size_t bytes) override;
  int wait_fd() const override { return recv_fd_.get(); }
  bool wait_fd_gates_poll() const override { return true; }  // poll() only reads the socket

  UdpCounters counters() const override;
  const UdpInfo& info() const override { return info_; }
  common::Status accept_only_from(const std::vector<std::string>& members) override;

 private:
  // Datagrams per sendmmsg / recvmmsg call without GSO.
  static constexpr std::size_t kSendBatch = 64;
  // Datagrams per sendmmsg call with GSO: several full runs, so one call
  // still moves many packets.
  static constexpr std::size_t kGsoBatch = 256;
  // The kernel's limits on one GSO send: UDP_MAX_SEGMENTS, and the UDP
  // payload of one IPv4 datagram (65535 - 20 - 8), which the unsegmented
  // buffer must fit.
  static constexpr std::size_t kMaxSegments = 64;
  static constexpr std::size_t kMaxGsoBytes = 65507;

  // One cmsg buffer holding a UDP_SEGMENT value.
  struct GsoControl {
    alignas(cmsghdr) unsigned char bytes[CMSG_SPACE(sizeof(std::uint16_t))];
  };
  // One cmsg buffer for what recvmsg reports with UDP_GRO: the segment size.
  struct GroControl {
    alignas(cmsghdr) unsigned char bytes[CMSG_SPACE(sizeof(int))];
  };
  // A receive slot with GRO: the largest run the kernel coalesces.
  static constexpr std::size_t kGroSlotBytes = 65536;
  static constexpr std::size_t kGroSlots = 32;

  // Groups the `n` datagrams whose iovecs are in send_iov_ into sendmmsg
  // messages (runs when GSO is on, else one each); returns the count and
  // fills send_datagrams_ and send_wire_bytes_.
  std::size_t build_messages(std::span<const OutDatagram> datagrams);
  // The pacer's bucket at `bytes_per_s`.
  std::size_t burst_for(double bytes_per_s) const;
  // Paces to link_bytes_per_s_ / link_share_ from now on.
  void repace();
  // A GSO send failed with `err`: fall back (auto) or report (on).
  common::Status gso_refused(int err);

  // Drop a received message of `datagrams` datagrams (source `from`,
  // recvmmsg flags `flags`) instead of delivering them? Counts the reason.
  bool rejected(const sockaddr_in& from, int flags, std::size_t datagrams,
                DatagramHandler& handler);
  // The test hook: drop this datagram? Counts it.
  bool test_drop();
  // A datagram longer than the MTU reached us whole (GRO slots are larger
  // than the MTU): dropped as truncation would have dropped it.
  void count_truncated();
  // The size of the datagrams in receive slot `i`: its UDP_GRO segment
  // size, or its whole length when it holds one datagram.
  std::size_t segment_of(std::size_t i);
  // Cuts the message of receive slot `i` into datagrams of `segment` bytes
  // (the last may be shorter), appended to recv_views_, or to landed_views_
  // where landing_ put their payloads in place; returns their bytes.
  std::uint64_t split_received(std::size_t i, std::size_t segment);
  std::string where() const;  // "udp transport (lo, 239.1.2.3:40000)"

  Fd send_fd_;
  Fd recv_fd_;
  UdpInfo info_;
  std::size_t mtu_;
  std::size_t max_in_flight_;
  std::uint32_t self_addr_net_;  // network byte order, as recvmmsg reports it
  std::uint16_t self_port_net_;
  int rank_;
  // accept_only_from: the members' addresses, network order, sorted; empty
  // means no filter.
  std::vector<std::uint32_t> members_net_;

  // Send side (touched only by send() and share_link()).
  Pacer pacer_;
  unsigned link_share_ = 1;        // the pacer runs at link_bytes_per_s_ / link_share_
  std::size_t incast_budget_ = 0;  // set_incast_budget(); 0: no limit
  // A GSO run's payload at most: kMaxGsoBytes, or less where the bucket is
  // smaller (a run larger than the bucket would leave as one burst anyway).
  std::size_t gso_run_bytes_ = kMaxGsoBytes;
  double link_bytes_per_s_;  // paced_bytes_per_s(info_.rate_mbit), or the estimate where that
                             // is unknown; 0: unpaced
  std::vector<mmsghdr> send_msgs_;
  std::vector<iovec> send_iov_;               // two per datagram: header, payload
  std::vector<GsoControl> send_ctl_;          // one per message
  std::vector<std::size_t> send_datagrams_;   // datagrams in each message
  std::vector<std::size_t> send_wire_bytes_;  // link bytes of each message (link_cost.h)
  bool gso_;                                  // runs go as one UDP_SEGMENT send
  bool gso_required_;

  // Receive side (touched only by poll()): a ring of buffers of
  // recv_slot_bytes_ (kGroSlotBytes with GRO, else mtu_), refilled by every
  // recvmmsg call.
  std::size_t recv_slot_bytes_;
  std::vector<std::byte> recv_buf_;
  std::vector<mmsghdr> recv_msgs_;
  std::vector<sockaddr_in> recv_from_;
  std::vector<GroControl> recv_ctl_;
  std::vector<std::span<const std::byte>> recv_views_;  // one call's datagrams, one batch
  std::vector<LandedDatagram> landed_views_;            // ... of them, those landed
  LandingReads landing_;
  std::span<const std::byte> last_datagram_;  // the call's last one handed over, for landing_
  std::uint64_t drop_state_;                  // splitmix64 state of the test drop hook
  bool warned_truncated_ = false;

  struct Atomics {
    std::atomic<std::uint64_t> datagrams_sent{0}, bytes_sent{0}, link_bytes_sent{0},
        datagrams_received{0}, bytes_received{0}, send_busy{0}, pacer_busy{0}, own_dropped{0},
        foreign_dropped{0}, test_dropped{0}, truncated{0}, messages_sent{0}, gso_sends{0}, reads{0},
        coalesced_reads{0}, landed{0}, copied_back_bytes{0};
    std::atomic<bool> gso_off{false};
  } counters_;
};

}  // namespace mccl::transport::udp
