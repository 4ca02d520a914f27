#include "transport/udp/endpoint.h"

#include <arpa/inet.h>
#include <netinet/udp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/log.h"
#include "transport/burst.h"
#include "transport/udp/link_cost.h"

namespace mccl::transport::udp {
namespace {

// A receive ring of about 1 MiB: deep enough for one recvmmsg call to
// drain a burst, small enough to cost little per communicator.
std::size_t recv_slots(std::size_t mtu) {
  return std::clamp<std::size_t>((std::size_t{1} << 20) / std::max<std::size_t>(mtu, 1), 8, 64);
}

// Come back later: the send buffer is full (EAGAIN), or the egress qdisc
// dropped the datagram (ENOBUFS, reported because of IP_RECVERR; the
// datagram counts as not sent, so the protocol sends it again).
// ECONNREFUSED is a stale ICMP error reported once on a connected socket;
// multicast has no receiver to refuse, so it is noise.
bool send_would_block(int err) {
  return err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS || err == ECONNREFUSED;
}

// How a kernel or device says no to a UDP_SEGMENT send: EIO when the
// device cannot offload the checksum, EINVAL for a segment size or count
// it will not take, ENOPROTOOPT/EOPNOTSUPP without GSO support at all,
// EMSGSIZE should a path MTU shrink below the segment size.
bool gso_refusal(int err) {
  return err == EIO || err == EINVAL || err == ENOPROTOOPT || err == EOPNOTSUPP || err == EMSGSIZE;
}

std::size_t size_of(const OutDatagram& d) { return d.header.size() + d.payload.size(); }

}  // namespace

UdpEndpoint::UdpEndpoint(EndpointSetup setup)
    : send_fd_(std::move(setup.send_fd)),
      recv_fd_(std::move(setup.recv_fd)),
      info_(std::move(setup.info)),
      mtu_(setup.mtu),
      max_in_flight_(setup.max_in_flight),
      self_addr_net_(htonl(setup.self_addr)),
      self_port_net_(htons(setup.self_port)),
      rank_(setup.rank),
      link_bytes_per_s_(paced_bytes_per_s(info_.rate_mbit)),
      gso_(info_.gso),
      gso_required_(setup.gso_required),
      recv_slot_bytes_(info_.gro ? std::max(kGroSlotBytes, mtu_) : mtu_),
      landing_(info_.gro ? kGroSlots : recv_slots(mtu_), recv_slot_bytes_, info_.gro,
               recv_fd_.get(), mtu_),
      drop_state_(info_.test_drop_seed) {
  if (link_bytes_per_s_ > 0) repace();

  // Sized for the GSO batch whatever the mode: auto may start without it.
  send_msgs_.resize(kGsoBatch);
  send_iov_.resize(2 * kGsoBatch);
  send_ctl_.resize(kGsoBatch);
  send_datagrams_.resize(kGsoBatch);
  send_wire_bytes_.resize(kGsoBatch);
  for (mmsghdr& m : send_msgs_) std::memset(&m, 0, sizeof m);

  const std::size_t slots = info_.gro ? kGroSlots : recv_slots(mtu_);
  recv_buf_.resize(slots * recv_slot_bytes_);
  recv_msgs_.resize(slots);
  recv_from_.resize(slots);
  recv_ctl_.resize(slots);
  for (std::size_t i = 0; i < slots; ++i) {
    std::memset(&recv_msgs_[i], 0, sizeof(mmsghdr));
    // msg_iov: landing_.prepare(), every call.
    recv_msgs_[i].msg_hdr.msg_name = &recv_from_[i];
  }
}

std::size_t UdpEndpoint::burst_for(double bytes_per_s) const {
  // The bucket holds 2 ms at the rate, and at least four of the largest
  // messages (GSO runs of 64 KB, else datagrams), so that the rate is
  // reachable whatever the MTU, and a sender descheduled for a few ms (ranks
  // outnumbering cores) catches up rather than losing its share for good:
  // measured on 4 namespace hosts at 1 Gbit/s, a 4 x 16 MiB allgather (each
  // root paced to 317 Mbit/s) took 587 ms with a 79 KB bucket, 460 ms with
  // 256 KB, 437 ms with 20 ms' worth, which some runs paid for in drops.
  const std::size_t frame = link_bytes(mtu_, info_.frame_overhead);
  const std::size_t largest = gso_ ? kMaxGsoBytes + kMaxSegments * (frame - mtu_) : frame;
  const std::size_t own = std::max(static_cast<std::size_t>(bytes_per_s * 2e-3), 4 * largest);
  // With many roots at once their bursts together must fit a receiver's
  // port (burst.h): 31 roots with four 64 KB runs each can put 8 MB into
  // one port at once, whatever their rates add up to.
  return root_burst_bytes(own, link_share_, incast_budget_, frame);
}

void UdpEndpoint::repace() {
  const double bytes_per_s = link_bytes_per_s_ / link_share_;
  const std::size_t burst = burst_for(bytes_per_s);
  gso_run_bytes_ = std::max(mtu_, std::min(burst, kMaxGsoBytes));
  if (pacer_.enabled()) {
    pacer_.set_rate(bytes_per_s, burst, common::now());
  } else {
    pacer_ = Pacer(bytes_per_s, burst, common::now());
  }
}

void UdpEndpoint::share_link(unsigned senders) {
  senders = std::max(senders, 1u);
  if (senders == link_share_) return;
  link_share_ = senders;
  if (pacer_.enabled()) repace();
}

void UdpEndpoint::set_incast_budget(std::size_t bytes) {
  if (bytes == incast_budget_) return;
  incast_budget_ = bytes;
  if (pacer_.enabled()) repace();
}

void UdpEndpoint::set_link_estimate(double bytes_per_s) {
  if (!(info_.rate_unknown || info_.rate_reported) || bytes_per_s <= 0 ||
      bytes_per_s == link_bytes_per_s_) {
    return;
  }
  link_bytes_per_s_ = bytes_per_s;
  repace();
}

DatagramCaps UdpEndpoint::caps() const {
  return DatagramCaps{mtu_, max_in_flight_, /*loopback=*/false, "udp"};
}

std::string UdpEndpoint::where() const {
  return "udp transport (" + info_.iface_name + ", group " + info_.group.ip + ":" +
         std::to_string(info_.group.port) + ")";
}

std::size_t UdpEndpoint::build_messages(std::span<const OutDatagram> datagrams) {
  std::size_t m = 0;
  for (std::size_t i = 0; i < datagrams.size(); ++m) {
    const std::size_t segment = size_of(datagrams[i]);
    std::size_t count = 1;
    if (gso_ && segment > 0) {
      std::size_t total = segment;
      // Only a full-size datagram may be followed; an empty one cannot be a
      // segment (the kernel would not make a datagram of it).
      while (i + count < datagrams.size() && count < kMaxSegments &&
             size_of(datagrams[i + count - 1]) == segment) {
        const std::size_t next = size_of(datagrams[i + count]);
        if (next == 0 || next > segment || total + next > gso_run_bytes_) break;
        total += next;
        ++count;
      }
    }
    send_wire_bytes_[m] = 0;
    for (std::size_t k = 0; k < count; ++k) {
      send_wire_bytes_[m] += link_bytes(size_of(datagrams[i + k]), info_.frame_overhead);
    }
    msghdr& h = send_msgs_[m].msg_hdr;
    h.msg_iov = &send_iov_[2 * i];
    h.msg_iovlen = 2 * count;
    if (count > 1) {
      auto* c = reinterpret_cast<cmsghdr*>(send_ctl_[m].bytes);
      c->cmsg_level = SOL_UDP;
      c->cmsg_type = UDP_SEGMENT;
      c->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
      const auto value = static_cast<std::uint16_t>(segment);  // <= mtu_ < 65536
      std::memcpy(CMSG_DATA(c), &value, sizeof value);
      h.msg_control = c;
      h.msg_controllen = sizeof send_ctl_[m].bytes;
    } else {
      h.msg_control = nullptr;
      h.msg_controllen = 0;
    }
    send_datagrams_[m] = count;
    i += count;
  }
  return m;
}

common::Status UdpEndpoint::gso_refused(int err) {
  if (gso_required_) {
    return common::transport_error(where() + ": UDP_SEGMENT send refused (" + errno_text(err) +
                                   ") and MCCL_UDP_GSO=on; set MCCL_UDP_GSO=auto or off");
  }
  gso_ = false;
  counters_.gso_off.store(true, std::memory_order_relaxed);
  // Every endpoint on this interface would say the same: once per process.
  static std::atomic<bool> logged{false};
  if (!logged.exchange(true)) {
    common::logf(common::LogLevel::kInfo, rank_,
                 "%s: the kernel refused a UDP_SEGMENT send (%s); sending one datagram per "
                 "packet from now on",
                 where().c_str(), errno_text(err).c_str());
  }
  return common::Status::ok();
}

common::Status UdpEndpoint::send(std::span<const OutDatagram> batch, std::size_t& accepted) {
  accepted = 0;
  // Datagrams go in order, so only those before the first oversize one can.
  std::size_t limit = 0;
  while (limit < batch.size() && size_of(batch[limit]) <= mtu_) ++limit;

  const common::TimePoint now = pacer_.enabled() ? common::now() : common::TimePoint{};
  bool paced_out = false;
  std::uint64_t bytes = 0;
  std::uint64_t link_sent = 0;  // link_bytes() of the datagrams sent
  std::uint64_t gso_sends = 0;
  std::uint64_t messages_sent = 0;
  common::Status status;
  while (accepted < limit && !paced_out) {
    const std::size_t n = std::min(gso_ ? kGsoBatch : kSendBatch, limit - accepted);
    for (std::size_t i = 0; i < n; ++i) {
      const OutDatagram& d = batch[accepted + i];
      // sendmmsg reads, never writes, through these pointers.
      send_iov_[2 * i] = iovec{const_cast<std::byte*>(d.header.data()), d.header.size()};
      send_iov_[2 * i + 1] = iovec{const_cast<std::byte*>(d.payload.data()), d.payload.size()};
    }
    const std::size_t messages = build_messages(batch.subspan(accepted, n));
    // The pacer is charged per message, as it goes on the wire: a GSO run
    // leaves the host at once.
    std::size_t paced = 0;
    while (paced < messages && pacer_.try_take(send_wire_bytes_[paced], now)) ++paced;
    if (paced < messages) paced_out = true;
    if (paced == 0) break;

    int sent;
    do {
      sent =
          ::sendmmsg(send_fd_.get(), send_msgs_.data(), static_cast<unsigned>(paced), MSG_DONTWAIT);
    } while (sent < 0 && errno == EINTR);
    const int err = sent < 0 ? errno : 0;
    const std::size_t sent_msgs = sent < 0 ? 0 : static_cast<std::size_t>(sent);
    std::size_t done = 0;  // datagrams in the messages sent
    messages_sent += sent_msgs;
    for (std::size_t m = 0; m < sent_msgs; ++m) {
      done += send_datagrams_[m];
      link_sent += send_wire_bytes_[m];
      if (send_datagrams_[m] > 1) ++gso_sends;
    }
    for (std::size_t m = sent_msgs; m < paced; ++m) pacer_.refund(send_wire_bytes_[m]);
    for (std::size_t i = 0; i < done; ++i) bytes += size_of(batch[accepted + i]);
    accepted += done;
    if (err != 0 && gso_refusal(err) && send_datagrams_[sent_msgs] > 1) {
      status = gso_refused(err);
      if (!status) break;
      paced_out = false;  // what was refunded may go again, one datagram per message
      continue;
    }
    if (err != 0 && !send_would_block(err)) {
      status = common::transport_error(where() + ": sendmmsg: " + errno_text(err));
      break;
    }
    if (sent_msgs < paced) {
      paced_out = false;  // the socket or the qdisc is full, not the pacer
      break;
    }
  }

  counters_.datagrams_sent.fetch_add(accepted, std::memory_order_relaxed);
  counters_.bytes_sent.fetch_add(bytes, std::memory_order_relaxed);
  counters_.link_bytes_sent.fetch_add(link_sent, std::memory_order_relaxed);
  counters_.gso_sends.fetch_add(gso_sends, std::memory_order_relaxed);
  counters_.messages_sent.fetch_add(messages_sent, std::memory_order_relaxed);
  if (!status) return status;
  if (accepted == limit && limit < batch.size()) {
    return common::invalid_argument(where() + ": datagram of " +
                                    std::to_string(size_of(batch[limit])) +
                                    " bytes is over the MTU of " + std::to_string(mtu_) +
                                    " (MCCL_UDP_MAX_DATAGRAM, interface MTU - 28)");
  }
  if (accepted < batch.size()) {
    counters_.send_busy.fetch_add(1, std::memory_order_relaxed);
    if (paced_out) counters_.pacer_busy.fetch_add(1, std::memory_order_relaxed);
  }
  return common::Status::ok();
}

UdpCounters UdpEndpoint::counters() const {
  const auto get = [](const std::atomic<std::uint64_t>& a) {
    return a.load(std::memory_order_relaxed);
  };
  UdpCounters c;
  c.datagrams_sent = get(counters_.datagrams_sent);
  c.bytes_sent = get(counters_.bytes_sent);
  c.link_bytes_sent = get(counters_.link_bytes_sent);
  c.datagrams_received = get(counters_.datagrams_received);
  c.bytes_received = get(counters_.bytes_received);
  c.send_busy = get(counters_.send_busy);
  c.pacer_busy = get(counters_.pacer_busy);
  c.own_dropped = get(counters_.own_dropped);
  c.foreign_dropped = get(counters_.foreign_dropped);
  c.test_dropped = get(counters_.test_dropped);
  c.truncated = get(counters_.truncated);
  c.gso_sends = get(counters_.gso_sends);
  c.messages_sent = get(counters_.messages_sent);
  c.reads = get(counters_.reads);
  c.coalesced_reads = get(counters_.coalesced_reads);
  c.landed = get(counters_.landed);
  c.copied_back_bytes = get(counters_.copied_back_bytes);
  c.gso_off = counters_.gso_off.load(std::memory_order_relaxed);
  return c;
}

}  // namespace mccl::transport::udp
