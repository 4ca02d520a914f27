#include "transport/tcp/directory.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <random>

#include "mccl/error.h"

namespace mccl::transport::tcp {
namespace {

std::uint64_t random_nonce() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

std::string me(int rank) { return "tcp: rank " + std::to_string(rank) + ": "; }

common::Status exchange(const OobAllgather& oob, const sockaddr_in& bound, Directory& d) {
  std::array<std::byte, wire::kAddressBytes> mine;
  const wire::Address self{ntohl(bound.sin_addr.s_addr), ntohs(bound.sin_port), d.nonce};
  wire::encode(self, mine);
  std::vector<std::byte> all;
  if (common::Status st = oob(mine, all); !st) return st;
  const std::size_t want = wire::kAddressBytes * static_cast<std::size_t>(d.size);
  if (all.size() != want) {
    return common::mismatch_error(me(d.rank) + "the out-of-band allgather returned " +
                                  std::to_string(all.size()) + " bytes, expected " +
                                  std::to_string(want) + " (" + std::to_string(d.size) +
                                  " TCP addresses): do all ranks use the TCP transport?");
  }
  d.addrs.resize(static_cast<std::size_t>(d.size));
  for (int q = 0; q < d.size; ++q) {
    auto uq = static_cast<std::size_t>(q);
    std::string why;
    auto part = std::span(all).subspan(uq * wire::kAddressBytes).first<wire::kAddressBytes>();
    if (!wire::decode(part, d.addrs[uq], why)) {
      return common::mismatch_error(me(d.rank) + "rank " + std::to_string(q) +
                                    "'s transport address is unusable: " + why);
    }
  }
  const wire::Address& back = d.addrs[static_cast<std::size_t>(d.rank)];
  if (back.ipv4 != self.ipv4 || back.port != self.port || back.nonce != self.nonce) {
    return common::internal_error(me(d.rank) +
                                  "the out-of-band allgather did not return this rank's "
                                  "own address at its rank");
  }
  return common::Status::ok();
}

}  // namespace

sockaddr_in Directory::address_of(int peer) const {
  const wire::Address& a = addrs[static_cast<std::size_t>(peer)];
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_addr.s_addr = htonl(a.ipv4);
  s.sin_port = htons(a.port);
  return s;
}

common::Status publish_addresses(const TcpReliableConfig& config, const OobAllgather& oob,
                                 Directory& out, Fd& listen) {
  out.rank = config.rank;
  out.size = config.size;
  out.nonce = random_nonce();
  sockaddr_in bind_to{};
  bind_to.sin_family = AF_INET;
  ::inet_pton(AF_INET, config.bind_address.c_str(), &bind_to.sin_addr);
  sockaddr_in bound{};
  // The backlog bounds connections not yet accepted: a rank accepts as it
  // polls, and peers that find it full retry.
  if (auto st = listen_on(bind_to, 128, listen, &bound); !st) {
    (void)exchange(oob, sockaddr_in{}, out);
    return {st.code(), me(config.rank) + st.message()};
  }
  out.listen_port = ntohs(bound.sin_port);
  return exchange(oob, bound, out);
}

}  // namespace mccl::transport::tcp
