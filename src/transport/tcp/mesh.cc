#include "transport/tcp/mesh.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <list>
#include <random>

#include "common/clock.h"
#include "common/log.h"
#include "mccl/error.h"
#include "transport/tcp/handshake_io.h"
#include "transport/tcp/wire.h"

namespace mccl::transport::tcp {
namespace {

using namespace std::chrono_literals;
using common::TimePoint;

// Retry interval of a refused or failed connect: doubles up to the cap.
constexpr std::chrono::milliseconds kFirstRetry = 10ms;
constexpr std::chrono::milliseconds kMaxRetry = 200ms;

// The connection this rank opens to a higher rank.
struct Outgoing {
  enum class State { kIdle, kConnecting, kSendingHello, kAwaitingAccept, kDone };
  State state = State::kIdle;
  Fd fd;
  HandshakeBuf out{};
  HandshakeBuf in{};
  std::size_t out_off = 0;
  std::size_t in_got = 0;
  TimePoint retry_at{};
  std::chrono::milliseconds backoff = kFirstRetry;
  std::string last_error = "no connection attempt yet";
};

// A connection a lower rank (or a stranger) opened to this rank.
struct Incoming {
  Fd fd;
  HandshakeBuf in{};
  HandshakeBuf out{};
  std::size_t in_got = 0;
  std::size_t out_off = 0;
  int peer = -1;  // known once its hello is valid; then the accept is written
  bool dead = false;
};

std::uint64_t random_nonce() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

class MeshBuilder {
 public:
  MeshBuilder(const TcpReliableConfig& cfg, Mesh& mesh)
      : cfg_(cfg),
        rank_(cfg.rank),
        size_(cfg.size),
        mesh_(mesh),
        nonce_(random_nonce()),
        outgoing_(static_cast<std::size_t>(cfg.size)) {}

  common::Status run(const OobAllgather& oob);

 private:
  std::string me() const { return "tcp: rank " + std::to_string(rank_) + ": "; }
  common::Status exchange(const OobAllgather& oob, const sockaddr_in& bound);
  sockaddr_in address_of(int peer) const;
  void start_connect(int peer);
  void retry_later(int peer, std::string why);
  void on_outgoing(int peer, short revents);
  void on_incoming(Incoming& in);
  void accept_all();
  bool complete() const;
  common::Status timeout_status() const;

  const TcpReliableConfig& cfg_;
  const int rank_;
  const int size_;
  Mesh& mesh_;
  const std::uint64_t nonce_;
  Fd listen_;
  std::vector<wire::Address> addrs_;
  std::vector<Outgoing> outgoing_;  // by peer; used for peers above this rank
  std::list<Incoming> incoming_;
  std::chrono::milliseconds waited_{0};
};

common::Status MeshBuilder::exchange(const OobAllgather& oob, const sockaddr_in& bound) {
  std::array<std::byte, wire::kAddressBytes> mine;
  const wire::Address self{ntohl(bound.sin_addr.s_addr), ntohs(bound.sin_port), nonce_};
  wire::encode(self, mine);
  std::vector<std::byte> all;
  try {
    all = oob(mine);
  } catch (const Error& e) {
    return {e.code(), e.what()};
  } catch (const std::exception& e) {
    return common::internal_error(me() + "the out-of-band allgather threw: " + e.what());
  }
  const std::size_t want = wire::kAddressBytes * static_cast<std::size_t>(size_);
  if (all.size() != want) {
    return common::mismatch_error(me() + "the out-of-band allgather returned " +
                                  std::to_string(all.size()) + " bytes, expected " +
                                  std::to_string(want) + " (" + std::to_string(size_) +
                                  " TCP addresses): do all ranks use the TCP transport?");
  }
  addrs_.resize(static_cast<std::size_t>(size_));
  mesh_.names.resize(static_cast<std::size_t>(size_));
  for (int q = 0; q < size_; ++q) {
    auto uq = static_cast<std::size_t>(q);
    std::string why;
    auto part = std::span(all).subspan(uq * wire::kAddressBytes).first<wire::kAddressBytes>();
    if (!wire::decode(part, addrs_[uq], why)) {
      return common::mismatch_error(me() + "rank " + std::to_string(q) +
                                    "'s transport address is unusable: " + why);
    }
    mesh_.names[uq] = to_string(address_of(q));
  }
  const wire::Address& back = addrs_[static_cast<std::size_t>(rank_)];
  if (back.ipv4 != self.ipv4 || back.port != self.port || back.nonce != self.nonce) {
    return common::internal_error(me() +
                                  "the out-of-band allgather did not return this rank's "
                                  "own address at its rank");
  }
  return common::Status::ok();
}

sockaddr_in MeshBuilder::address_of(int peer) const {
  const wire::Address& a = addrs_[static_cast<std::size_t>(peer)];
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_addr.s_addr = htonl(a.ipv4);
  s.sin_port = htons(a.port);
  return s;
}

void MeshBuilder::retry_later(int peer, std::string why) {
  Outgoing& o = outgoing_[static_cast<std::size_t>(peer)];
  o.fd.reset();
  o.state = Outgoing::State::kIdle;
  o.last_error = std::move(why);
  o.retry_at = common::now() + o.backoff;
  o.backoff = std::min(o.backoff * 2, kMaxRetry);
  common::logf(common::LogLevel::kDebug, rank_, "tcp: connection to rank %d failed (%s); retrying",
               peer, o.last_error.c_str());
}

void MeshBuilder::start_connect(int peer) {
  Outgoing& o = outgoing_[static_cast<std::size_t>(peer)];
  if (auto st = open_tcp_socket(o.fd); !st) return retry_later(peer, st.message());
  set_nodelay(o.fd.get());
  wire::encode(wire::Handshake{wire::HandshakeKind::kHello, static_cast<std::uint32_t>(rank_),
                               static_cast<std::uint32_t>(peer), static_cast<std::uint32_t>(size_),
                               addrs_[static_cast<std::size_t>(peer)].nonce, nonce_},
               o.out);
  o.out_off = 0;
  o.in_got = 0;
  const sockaddr_in to = address_of(peer);
  if (::connect(o.fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0) {
    o.state = Outgoing::State::kSendingHello;
  } else if (errno == EINPROGRESS || errno == EINTR) {
    o.state = Outgoing::State::kConnecting;
  } else {
    retry_later(peer, "connect: " + errno_text(errno));
  }
}

void MeshBuilder::on_outgoing(int peer, short revents) {
  Outgoing& o = outgoing_[static_cast<std::size_t>(peer)];
  std::string why;
  if (o.state == Outgoing::State::kConnecting) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(o.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return retry_later(peer, "connect: " + errno_text(err));
    if ((revents & POLLOUT) == 0) return;
    o.state = Outgoing::State::kSendingHello;
  }
  if (o.state == Outgoing::State::kSendingHello) {
    if (!write_handshake(o.fd.get(), o.out, o.out_off, why)) return retry_later(peer, why);
    if (o.out_off < o.out.size()) return;
    o.state = Outgoing::State::kAwaitingAccept;
  }
  if (o.state != Outgoing::State::kAwaitingAccept) return;
  if (!read_handshake(o.fd.get(), o.in, o.in_got, why)) return retry_later(peer, why);
  if (o.in_got < o.in.size()) return;
  wire::Handshake h;
  if (!wire::decode(o.in, h, why)) return retry_later(peer, "bad handshake answer: " + why);
  if (h.kind != wire::HandshakeKind::kAccept || h.from != static_cast<std::uint32_t>(peer) ||
      h.to != static_cast<std::uint32_t>(rank_) || h.size != static_cast<std::uint32_t>(size_) ||
      h.to_nonce != nonce_ || h.from_nonce != addrs_[static_cast<std::size_t>(peer)].nonce) {
    return retry_later(peer,
                       "the handshake answer does not match the exchanged addresses "
                       "(another process at that address?)");
  }
  o.state = Outgoing::State::kDone;
  mesh_.fds[static_cast<std::size_t>(peer)] = std::move(o.fd);
}

void MeshBuilder::accept_all() {
  for (;;) {
    int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN, or a transient error such as EMFILE: the ranks retry
    }
    // Each lower rank needs one; anything beyond a generous bound is noise.
    if (incoming_.size() >= 2 * static_cast<std::size_t>(size_) + 64) {
      Fd drop(fd);
      continue;
    }
    set_nodelay(fd);
    incoming_.emplace_back().fd.reset(fd);
  }
}

void MeshBuilder::on_incoming(Incoming& in) {
  std::string why;
  if (in.peer < 0) {
    if (!read_handshake(in.fd.get(), in.in, in.in_got, why)) {
      in.dead = true;
      return;
    }
    if (in.in_got < in.in.size()) return;
    wire::Handshake h;
    bool ok = wire::decode(in.in, h, why);
    if (ok) {
      ok = h.kind == wire::HandshakeKind::kHello && h.to == static_cast<std::uint32_t>(rank_) &&
           h.from < static_cast<std::uint32_t>(rank_) &&
           h.size == static_cast<std::uint32_t>(size_) && h.to_nonce == nonce_ &&
           h.from_nonce == addrs_[h.from].nonce;
      if (!ok) why = "its handshake does not match the exchanged addresses";
    }
    if (!ok) {
      common::logf(common::LogLevel::kDebug, rank_, "tcp: rejected a stray connection: %s",
                   why.c_str());
      in.dead = true;
      return;
    }
    in.peer = static_cast<int>(h.from);
    wire::encode(wire::Handshake{wire::HandshakeKind::kAccept, static_cast<std::uint32_t>(rank_),
                                 h.from, static_cast<std::uint32_t>(size_), h.from_nonce, nonce_},
                 in.out);
  }
  if (!write_handshake(in.fd.get(), in.out, in.out_off, why)) {
    in.dead = true;  // the lower rank sees the failure and reconnects
    return;
  }
  if (in.out_off < in.out.size()) return;
  // A lower rank that reconnects after a failed attempt replaces the old
  // connection: it is the one it will use.
  mesh_.fds[static_cast<std::size_t>(in.peer)] = std::move(in.fd);
  in.dead = true;
}

bool MeshBuilder::complete() const {
  for (int q = 0; q < size_; ++q) {
    if (q != rank_ && !mesh_.fds[static_cast<std::size_t>(q)].valid()) return false;
  }
  return true;
}

common::Status MeshBuilder::timeout_status() const {
  std::string ranks;
  std::string details;
  for (int q = 0; q < size_; ++q) {
    auto uq = static_cast<std::size_t>(q);
    if (q == rank_ || mesh_.fds[uq].valid()) continue;
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(q);
    details += "; rank " + std::to_string(q) + " at " + mesh_.names[uq] + ": ";
    if (q < rank_) {
      details += "never connected to this rank";
    } else {
      const Outgoing& o = outgoing_[uq];
      switch (o.state) {
        case Outgoing::State::kConnecting:
          details += "connect still in progress (last error: " + o.last_error + ")";
          break;
        case Outgoing::State::kSendingHello:
        case Outgoing::State::kAwaitingAccept:
          details += "connected, but it never answered the handshake";
          break;
        default:
          details += o.last_error;
      }
    }
  }
  return common::timeout_error(me() + "the TCP mesh was not complete after " +
                               std::to_string(waited_.count()) + " ms; no connection with ranks " +
                               ranks + details);
}

common::Status MeshBuilder::run(const OobAllgather& oob) {
  sockaddr_in bind_to{};
  bind_to.sin_family = AF_INET;
  ::inet_pton(AF_INET, cfg_.bind_address.c_str(), &bind_to.sin_addr);
  sockaddr_in bound{};
  if (auto st = listen_on(bind_to, std::max(size_, 128), listen_, &bound); !st) {
    // The others still get an (unusable) address from this rank, so that
    // every rank leaves the exchange and fails, instead of waiting for it.
    (void)exchange(oob, sockaddr_in{});
    return {st.code(), me() + st.message()};
  }
  mesh_.listen_port = ntohs(bound.sin_port);
  if (auto st = exchange(oob, bound); !st) return st;

  mesh_.fds.resize(static_cast<std::size_t>(size_));
  const TimePoint start = common::now();
  const common::Deadline deadline = common::Deadline::after(cfg_.connect_timeout);
  for (int q = rank_ + 1; q < size_; ++q) start_connect(q);

  std::vector<pollfd> fds;
  std::vector<int> who;  // per pollfd: -1 listen, -2 incoming, else the outgoing peer
  std::vector<Incoming*> inc;
  while (!complete()) {
    TimePoint now = common::now();
    waited_ = std::chrono::duration_cast<std::chrono::milliseconds>(now - start);
    if (deadline.expired(now)) return timeout_status();
    TimePoint wake = deadline.at();
    for (int q = rank_ + 1; q < size_; ++q) {
      Outgoing& o = outgoing_[static_cast<std::size_t>(q)];
      if (o.state == Outgoing::State::kIdle) {
        if (o.retry_at <= now) {
          start_connect(q);
        } else {
          wake = std::min(wake, o.retry_at);
        }
      }
    }
    fds.clear();
    who.clear();
    inc.clear();
    fds.push_back({listen_.get(), POLLIN, 0});
    who.push_back(-1);
    for (int q = rank_ + 1; q < size_; ++q) {
      Outgoing& o = outgoing_[static_cast<std::size_t>(q)];
      short ev =
          o.state == Outgoing::State::kConnecting || o.state == Outgoing::State::kSendingHello
              ? POLLOUT
          : o.state == Outgoing::State::kAwaitingAccept ? POLLIN
                                                        : 0;
      if (ev == 0) continue;
      fds.push_back({o.fd.get(), ev, 0});
      who.push_back(q);
    }
    for (Incoming& in : incoming_) {
      fds.push_back({in.fd.get(), static_cast<short>(in.peer < 0 ? POLLIN : POLLOUT), 0});
      who.push_back(-2);
      inc.push_back(&in);
    }
    auto left =
        std::chrono::ceil<std::chrono::milliseconds>(std::max(wake - now, common::Duration{}));
    int rc =
        ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left.count(), 60000)));
    if (rc < 0) {
      if (errno == EINTR) continue;
      return common::transport_error(me() + "poll(): " + errno_text(errno));
    }
    std::size_t next_inc = 0;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (who[i] == -2) {
        Incoming* in = inc[next_inc++];
        if (fds[i].revents != 0) on_incoming(*in);
      } else if (fds[i].revents == 0) {
        continue;
      } else if (who[i] == -1) {
        accept_all();
      } else {
        on_outgoing(who[i], fds[i].revents);
      }
    }
    incoming_.remove_if([](const Incoming& in) { return in.dead; });
  }
  return common::Status::ok();
}

}  // namespace

common::Status build_mesh(const TcpReliableConfig& config, const OobAllgather& oob, Mesh& out) {
  MeshBuilder builder(config, out);
  return builder.run(oob);
}

}  // namespace mccl::transport::tcp
