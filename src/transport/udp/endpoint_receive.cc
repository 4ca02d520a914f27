// The receive path of UdpEndpoint (endpoint.h): recvmmsg into the ring of
// receive slots (and landings, landing.h), GRO reads cut back into
// datagrams, and what is dropped before the protocol sees it (truncated,
// our own, not a member's, the test hook's drops). The send path is in
// endpoint.cc.
#include <arpa/inet.h>
#include <netinet/udp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/hash.h"
#include "common/log.h"
#include "transport/udp/endpoint.h"

namespace mccl::transport::udp {

void UdpEndpoint::count_truncated() {
  counters_.truncated.fetch_add(1, std::memory_order_relaxed);
  if (!warned_truncated_) {
    warned_truncated_ = true;
    common::logf(common::LogLevel::kWarn, rank_,
                 "%s: dropped a datagram longer than %zu bytes; every rank must use the same "
                 "MCCL_UDP_MAX_DATAGRAM",
                 where().c_str(), mtu_);
  }
}

common::Status UdpEndpoint::accept_only_from(const std::vector<std::string>& members) {
  std::vector<std::uint32_t> net;
  for (const std::string& m : members) {
    in_addr a{};
    if (::inet_pton(AF_INET, m.c_str(), &a) != 1) {
      return common::invalid_argument(where() + ": member address '" + m + "' is not IPv4");
    }
    net.push_back(a.s_addr);
  }
  std::sort(net.begin(), net.end());
  net.erase(std::unique(net.begin(), net.end()), net.end());
  if (net.size() < 2) net.clear();  // one address for all: nothing to tell apart
  members_net_ = std::move(net);
  return common::Status::ok();
}

bool UdpEndpoint::rejected(const sockaddr_in& from, int flags, std::size_t datagrams,
                           DatagramHandler& handler) {
  if ((flags & MSG_TRUNC) != 0) {
    count_truncated();
    return true;
  }
  // Our own datagrams, should the kernel filter be missing.
  if (from.sin_port == self_port_net_ && from.sin_addr.s_addr == self_addr_net_) {
    counters_.own_dropped.fetch_add(datagrams, std::memory_order_relaxed);
    return true;
  }
  if (!members_net_.empty() &&
      !std::binary_search(members_net_.begin(), members_net_.end(), from.sin_addr.s_addr)) {
    counters_.foreign_dropped.fetch_add(datagrams, std::memory_order_relaxed);
    handler.on_foreign_datagrams(datagrams);
    return true;
  }
  return false;
}

bool UdpEndpoint::test_drop() {
  if (info_.test_drop_permille > 0 && common::splitmix64_next(drop_state_) % 1000 <
                                          static_cast<std::uint64_t>(info_.test_drop_permille)) {
    counters_.test_dropped.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

// With UDP_GRO the kernel reports the segment size of a coalesced read in
// a control message; a read without it is one datagram.
std::size_t UdpEndpoint::segment_of(std::size_t i) {
  msghdr& h = recv_msgs_[i].msg_hdr;  // CMSG_NXTHDR takes it non-const
  const std::size_t len = recv_msgs_[i].msg_len;
  if (h.msg_controllen == 0) return len;
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
    if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
      int size = 0;
      std::memcpy(&size, CMSG_DATA(c), sizeof size);
      if (size > 0 && static_cast<std::size_t>(size) < len) return static_cast<std::size_t>(size);
    }
  }
  return len;
}

std::uint64_t UdpEndpoint::split_received(std::size_t i, std::size_t segment) {
  const std::size_t len = recv_msgs_[i].msg_len;
  const std::byte* base = recv_buf_.data() + i * recv_slot_bytes_;
  if (len == 0) {  // an empty datagram is still one (the protocol rejects it)
    if (!test_drop()) recv_views_.emplace_back(base, 0);
    return 0;
  }
  if (segment < len) counters_.coalesced_reads.fetch_add(1, std::memory_order_relaxed);
  std::uint64_t bytes = 0;
  std::size_t d = 0;
  for (std::size_t at = 0; at < len; at += segment, ++d) {
    const std::size_t n = std::min(segment, len - at);
    if (n > mtu_) {
      count_truncated();
      continue;
    }
    last_datagram_ = {base + at, n};
    if (test_drop()) continue;
    const std::span<const std::byte> payload = landing_.landed(d);
    if (payload.empty()) {
      recv_views_.emplace_back(base + at, n);
    } else {
      landed_views_.push_back({{base + at, n - payload.size()}, payload});
    }
    bytes += n;
  }
  return bytes;
}

common::Status UdpEndpoint::poll(DatagramHandler& handler, std::size_t max,
                                 std::size_t& delivered) {
  delivered = 0;
  std::uint64_t bytes = 0;
  std::uint64_t reads = 0;
  std::uint64_t landed = 0;
  std::uint64_t copied_back = 0;
  common::Status status;
  while (delivered < max) {
    const std::size_t want = landing_.prepare(
        handler, recv_msgs_.data(), std::min(recv_msgs_.size(), max - delivered), recv_buf_.data());
    for (std::size_t i = 0; i < want; ++i) {
      msghdr& h = recv_msgs_[i].msg_hdr;
      h.msg_namelen = sizeof(sockaddr_in);
      h.msg_flags = 0;
      if (info_.gro) {
        h.msg_control = recv_ctl_[i].bytes;
        h.msg_controllen = sizeof recv_ctl_[i].bytes;
      }
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
      landing_.finish_call(0, 0, {});
      break;
    }
    reads += static_cast<std::uint64_t>(got);
    recv_views_.clear();
    landed_views_.clear();
    last_datagram_ = {};
    std::size_t most_datagrams = 0;
    std::size_t call_copied_back = 0;
    for (std::size_t i = 0; i < static_cast<std::size_t>(got); ++i) {
      const std::size_t len = recv_msgs_[i].msg_len;
      const std::size_t segment = segment_of(i);
      const std::size_t datagrams = len == 0 ? 1 : (len + segment - 1) / segment;
      most_datagrams = std::max(most_datagrams, datagrams);
      // A rejected message may leave bytes at landings: a handler's
      // landings are memory it overwrites anyway (transport/datagram.h).
      if (rejected(recv_from_[i], recv_msgs_[i].msg_hdr.msg_flags, datagrams, handler)) continue;
      call_copied_back += landing_.settle(i, len, segment);
      bytes += split_received(i, segment);
    }
    landing_.finish_call(static_cast<std::size_t>(got), most_datagrams, last_datagram_);
    // Landed first: a copy of the same chunk among the others then finds
    // it held, rather than overwriting it.
    if (!landed_views_.empty()) handler.on_landed(landed_views_);
    if (!recv_views_.empty()) handler.on_datagrams(recv_views_);
    if (call_copied_back > 0) handler.on_copied_back(call_copied_back);
    delivered += recv_views_.size() + landed_views_.size();
    landed += landed_views_.size();
    copied_back += call_copied_back;
    if (static_cast<std::size_t>(got) < want) break;  // the socket queue is empty
  }
  counters_.reads.fetch_add(reads, std::memory_order_relaxed);
  counters_.datagrams_received.fetch_add(delivered, std::memory_order_relaxed);
  counters_.bytes_received.fetch_add(bytes, std::memory_order_relaxed);
  counters_.landed.fetch_add(landed, std::memory_order_relaxed);
  counters_.copied_back_bytes.fetch_add(copied_back, std::memory_order_relaxed);
  return status;
}

}  // namespace mccl::transport::udp
