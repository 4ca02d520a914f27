#include "transport/udp/endpoint.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/log.h"

namespace mccl::transport::udp {
namespace {

constexpr std::size_t kIpUdpHeader = 28;  // IPv4 (no options) + UDP: what the pacer adds

// A receive ring of about 1 MiB: deep enough for one recvmmsg call to
// drain a burst, small enough to cost little per communicator.
std::size_t recv_slots(std::size_t mtu) {
  return std::clamp<std::size_t>((std::size_t{1} << 20) / std::max<std::size_t>(mtu, 1), 8, 64);
}

std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Come back later: the send buffer is full (EAGAIN), or the egress qdisc
// dropped the datagram (ENOBUFS, reported because of IP_RECVERR; the
// datagram counts as not sent, so the protocol sends it again).
// ECONNREFUSED is a stale ICMP error reported once on a connected socket;
// multicast has no receiver to refuse, so it is noise.
bool send_would_block(int err) {
  return err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS || err == ECONNREFUSED;
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
      drop_state_(info_.test_drop_seed) {
  if (info_.rate_mbit > 0) {
    const double bytes_per_s = info_.rate_mbit * 1e6 / 8;
    // The bucket holds 2 ms at the target rate, and at least four full
    // datagrams so that the rate is reachable whatever the MTU.
    const auto burst =
        std::max(static_cast<std::size_t>(bytes_per_s * 2e-3), 4 * (mtu_ + kIpUdpHeader));
    pacer_ = Pacer(bytes_per_s, burst, common::now());
  }

  send_msgs_.resize(kSendBatch);
  send_iov_.resize(2 * kSendBatch);
  for (std::size_t i = 0; i < kSendBatch; ++i) {
    std::memset(&send_msgs_[i], 0, sizeof(mmsghdr));
    send_msgs_[i].msg_hdr.msg_iov = &send_iov_[2 * i];
    send_msgs_[i].msg_hdr.msg_iovlen = 2;
  }

  const std::size_t slots = recv_slots(mtu_);
  recv_buf_.resize(slots * mtu_);
  recv_msgs_.resize(slots);
  recv_iov_.resize(slots);
  recv_from_.resize(slots);
  for (std::size_t i = 0; i < slots; ++i) {
    recv_iov_[i] = iovec{recv_buf_.data() + i * mtu_, mtu_};
    std::memset(&recv_msgs_[i], 0, sizeof(mmsghdr));
    recv_msgs_[i].msg_hdr.msg_iov = &recv_iov_[i];
    recv_msgs_[i].msg_hdr.msg_iovlen = 1;
    recv_msgs_[i].msg_hdr.msg_name = &recv_from_[i];
  }
}

DatagramCaps UdpEndpoint::caps() const {
  return DatagramCaps{mtu_, max_in_flight_, /*loopback=*/false, "udp"};
}

std::string UdpEndpoint::where() const {
  return "udp transport (" + info_.iface_name + ", group " + info_.group.ip + ":" +
         std::to_string(info_.group.port) + ")";
}

common::Status UdpEndpoint::send(std::span<const OutDatagram> batch, std::size_t& accepted) {
  accepted = 0;
  // Datagrams go in order, so only those before the first oversize one can.
  std::size_t limit = 0;
  while (limit < batch.size() && size_of(batch[limit]) <= mtu_) ++limit;

  const common::TimePoint now = pacer_.enabled() ? common::now() : common::TimePoint{};
  bool paced_out = false;
  std::uint64_t bytes = 0;
  while (accepted < limit && !paced_out) {
    std::size_t n = 0;
    for (; n < kSendBatch && accepted + n < limit; ++n) {
      const OutDatagram& d = batch[accepted + n];
      if (!pacer_.try_take(size_of(d) + kIpUdpHeader, now)) {
        paced_out = true;
        break;
      }
      // sendmmsg reads, never writes, through these pointers.
      send_iov_[2 * n] = iovec{const_cast<std::byte*>(d.header.data()), d.header.size()};
      send_iov_[2 * n + 1] = iovec{const_cast<std::byte*>(d.payload.data()), d.payload.size()};
    }
    if (n == 0) break;

    int sent;
    do {
      sent = ::sendmmsg(send_fd_.get(), send_msgs_.data(), static_cast<unsigned>(n), MSG_DONTWAIT);
    } while (sent < 0 && errno == EINTR);
    int err = sent < 0 ? errno : 0;
    if (sent < 0) sent = 0;
    for (std::size_t i = static_cast<std::size_t>(sent); i < n; ++i) {
      pacer_.refund(size_of(batch[accepted + i]) + kIpUdpHeader);
    }
    for (std::size_t i = 0; i < static_cast<std::size_t>(sent); ++i) {
      bytes += size_of(batch[accepted + i]);
    }
    accepted += static_cast<std::size_t>(sent);
    if (err != 0 && !send_would_block(err)) {
      counters_.datagrams_sent.fetch_add(accepted, std::memory_order_relaxed);
      counters_.bytes_sent.fetch_add(bytes, std::memory_order_relaxed);
      return common::transport_error(where() + ": sendmmsg: " + errno_text(err));
    }
    if (static_cast<std::size_t>(sent) < n) break;  // the socket or the qdisc is full
  }

  counters_.datagrams_sent.fetch_add(accepted, std::memory_order_relaxed);
  counters_.bytes_sent.fetch_add(bytes, std::memory_order_relaxed);
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

bool UdpEndpoint::filtered(const sockaddr_in& from, int flags) {
  if ((flags & MSG_TRUNC) != 0) {
    counters_.truncated.fetch_add(1, std::memory_order_relaxed);
    if (!warned_truncated_) {
      warned_truncated_ = true;
      common::logf(common::LogLevel::kWarn, rank_,
                   "%s: dropped a datagram longer than %zu bytes; every rank must use the same "
                   "MCCL_UDP_MAX_DATAGRAM",
                   where().c_str(), mtu_);
    }
    return true;
  }
  // Our own datagram, should the kernel filter be missing.
  if (from.sin_port == self_port_net_ && from.sin_addr.s_addr == self_addr_net_) {
    counters_.own_dropped.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (info_.test_drop_permille > 0 &&
      splitmix(drop_state_) % 1000 < static_cast<std::uint64_t>(info_.test_drop_permille)) {
    counters_.test_dropped.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

common::Status UdpEndpoint::poll(DatagramHandler& handler, std::size_t max,
                                 std::size_t& delivered) {
  delivered = 0;
  std::uint64_t bytes = 0;
  common::Status status;
  while (delivered < max) {
    const std::size_t want = std::min(recv_msgs_.size(), max - delivered);
    for (std::size_t i = 0; i < want; ++i) {
      recv_msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
      recv_msgs_[i].msg_hdr.msg_flags = 0;
      recv_msgs_[i].msg_len = 0;
    }
    int got;
    do {
      got = ::recvmmsg(recv_fd_.get(), recv_msgs_.data(), static_cast<unsigned>(want), MSG_DONTWAIT,
                       nullptr);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
      const int err = errno;
      if (err != EAGAIN && err != EWOULDBLOCK) {
        status = common::transport_error(where() + ": recvmmsg: " + errno_text(err));
      }
      break;
    }
    for (std::size_t i = 0; i < static_cast<std::size_t>(got); ++i) {
      const msghdr& h = recv_msgs_[i].msg_hdr;
      if (filtered(recv_from_[i], h.msg_flags)) continue;
      const std::size_t len = recv_msgs_[i].msg_len;
      handler.on_datagram(std::span<const std::byte>(recv_buf_.data() + i * mtu_, len));
      ++delivered;
      bytes += len;
    }
    if (static_cast<std::size_t>(got) < want) break;  // the socket queue is empty
  }
  counters_.datagrams_received.fetch_add(delivered, std::memory_order_relaxed);
  counters_.bytes_received.fetch_add(bytes, std::memory_order_relaxed);
  return status;
}

UdpCounters UdpEndpoint::counters() const {
  const auto get = [](const std::atomic<std::uint64_t>& a) {
    return a.load(std::memory_order_relaxed);
  };
  UdpCounters c;
  c.datagrams_sent = get(counters_.datagrams_sent);
  c.bytes_sent = get(counters_.bytes_sent);
  c.datagrams_received = get(counters_.datagrams_received);
  c.bytes_received = get(counters_.bytes_received);
  c.send_busy = get(counters_.send_busy);
  c.pacer_busy = get(counters_.pacer_busy);
  c.own_dropped = get(counters_.own_dropped);
  c.test_dropped = get(counters_.test_dropped);
  c.truncated = get(counters_.truncated);
  return c;
}

}  // namespace mccl::transport::udp
