#include "transport/tcp/handshake.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "common/log.h"

namespace mccl::transport::tcp {
namespace {

using namespace std::chrono_literals;

// Retry interval of a refused or failed connect: doubles up to the cap.
constexpr std::chrono::milliseconds kFirstRetry = 10ms;
constexpr std::chrono::milliseconds kMaxRetry = 200ms;

void retry_later(const Directory& d, int peer, Dialer& o, std::string why, int err = 0) {
  o.fd.reset();
  o.refused = err == ECONNREFUSED;
  o.state = Dialer::State::kIdle;
  o.last_error = std::move(why);
  o.retry_at = common::now() + o.backoff;
  o.backoff = std::min(o.backoff * 2, kMaxRetry);
  common::logf(common::LogLevel::kDebug, d.rank, "tcp: connection to rank %d failed (%s); retrying",
               peer, o.last_error.c_str());
}

wire::Handshake handshake(const Directory& d, wire::HandshakeKind kind, int peer) {
  return {kind,
          static_cast<std::uint32_t>(d.rank),
          static_cast<std::uint32_t>(peer),
          static_cast<std::uint32_t>(d.size),
          d.addrs[static_cast<std::size_t>(peer)].nonce,
          d.nonce};
}

}  // namespace

short Dialer::events() const {
  switch (state) {
    case State::kConnecting:
    case State::kSendingHello:
      return POLLOUT;
    case State::kAwaitingAccept:
      return POLLIN;
    default:
      return 0;
  }
}

void dial_start(const Directory& d, int peer, Dialer& o) {
  if (o.backoff.count() == 0) o.backoff = kFirstRetry;
  if (auto st = open_tcp_socket(o.fd); !st) return retry_later(d, peer, o, st.message());
  set_nodelay(o.fd.get());
  wire::encode(handshake(d, wire::HandshakeKind::kHello, peer), o.out);
  o.out_off = 0;
  o.in_got = 0;
  const sockaddr_in to = d.address_of(peer);
  if (::connect(o.fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0) {
    o.state = Dialer::State::kSendingHello;
  } else if (errno == EINPROGRESS || errno == EINTR) {
    o.state = Dialer::State::kConnecting;
  } else {
    const int err = errno;
    retry_later(d, peer, o, "connect: " + errno_text(err), err);
  }
}

void dial_step(const Directory& d, int peer, Dialer& o, short revents) {
  std::string why;
  if (o.state == Dialer::State::kConnecting) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(o.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return retry_later(d, peer, o, "connect: " + errno_text(err), err);
    if ((revents & POLLOUT) == 0) return;
    o.state = Dialer::State::kSendingHello;
  }
  if (o.state == Dialer::State::kSendingHello) {
    if (!write_handshake(o.fd.get(), o.out, o.out_off, why)) return retry_later(d, peer, o, why);
    if (o.out_off < o.out.size()) return;
    o.state = Dialer::State::kAwaitingAccept;
  }
  if (o.state != Dialer::State::kAwaitingAccept) return;
  if (!read_handshake(o.fd.get(), o.in, o.in_got, why)) return retry_later(d, peer, o, why);
  if (o.in_got < o.in.size()) return;
  wire::Handshake h;
  if (!wire::decode(o.in, h, why)) return retry_later(d, peer, o, "bad handshake answer: " + why);
  if (h.kind != wire::HandshakeKind::kAccept || h.from != static_cast<std::uint32_t>(peer) ||
      h.to != static_cast<std::uint32_t>(d.rank) || h.size != static_cast<std::uint32_t>(d.size) ||
      h.to_nonce != d.nonce || h.from_nonce != d.addrs[static_cast<std::size_t>(peer)].nonce) {
    return retry_later(d, peer, o,
                       "the handshake answer does not match the exchanged addresses "
                       "(another process at that address?)");
  }
  o.state = Dialer::State::kDone;
}

void answer_read(const Directory& d, Answerer& a) {
  std::string why;
  if (a.peer >= 0 || a.dead) return;
  if (!read_handshake(a.fd.get(), a.in, a.in_got, why)) {
    a.dead = true;
    return;
  }
  if (a.in_got < a.in.size()) return;
  wire::Handshake h;
  bool ok = wire::decode(a.in, h, why);
  if (ok) {
    ok = h.kind == wire::HandshakeKind::kHello && h.to == static_cast<std::uint32_t>(d.rank) &&
         h.from < static_cast<std::uint32_t>(d.size) &&
         h.from != static_cast<std::uint32_t>(d.rank) &&
         h.size == static_cast<std::uint32_t>(d.size) && h.to_nonce == d.nonce &&
         h.from_nonce == d.addrs[h.from].nonce;
    if (!ok) why = "its handshake does not match the exchanged addresses";
  }
  if (!ok) {
    common::logf(common::LogLevel::kDebug, d.rank, "tcp: rejected a stray connection: %s",
                 why.c_str());
    a.dead = true;
    return;
  }
  a.peer = static_cast<int>(h.from);
  wire::encode(handshake(d, wire::HandshakeKind::kAccept, a.peer), a.out);
}

bool answer_write(Answerer& a) {
  std::string why;
  if (!write_handshake(a.fd.get(), a.out, a.out_off, why)) {
    a.dead = true;  // the dialer sees the failure and dials again
    return false;
  }
  return a.out_off == a.out.size();
}

}  // namespace mccl::transport::tcp
