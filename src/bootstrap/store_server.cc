// The bootstrap store's poll loop and I/O (store_server.h): accepting,
// reading frames, writing answers, starting and stopping; what the frames
// mean is store_rounds.cc's.
#include "bootstrap/store_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <deque>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/socket.h"
#include "bootstrap/store_state.h"
#include "bootstrap/wire.h"
#include "common/clock.h"
#include "common/log.h"

namespace mccl::bootstrap {

void StoreServer::Impl::send(Conn& c, wire::Kind kind, std::uint32_t aux, std::uint64_t round,
                             std::shared_ptr<const Bytes> payload) {
  if (c.closed) return;
  OutFrame f;
  wire::encode({kind, wire::kStoreRank, aux, round, payload ? payload->size() : 0}, f.header);
  f.payload = std::move(payload);
  c.out.push_back(std::move(f));
}

void StoreServer::Impl::send_error(Conn& c, const common::Status& st) {
  if (c.told_error) return;
  c.told_error = true;
  const std::string& m = st.message();
  auto text = std::make_shared<Bytes>(reinterpret_cast<const std::byte*>(m.data()),
                                      reinterpret_cast<const std::byte*>(m.data()) +
                                          std::min<std::size_t>(m.size(), wire::kMaxErrorBytes));
  send(c, wire::Kind::kError, static_cast<std::uint32_t>(st.code()), round_, std::move(text));
}

void StoreServer::Impl::fail(common::Status why, bool quiet) {
  if (failed_) return;
  common::logf(quiet ? common::LogLevel::kDebug : common::LogLevel::kInfo, 0, "%s",
               why.message().c_str());
  failed_ = std::move(why);
  for (auto& c : conns_) {
    if (c->rank >= 0) send_error(*c, *failed_);
  }
}

void StoreServer::Impl::protocol_error(Conn& c, const std::string& what) {
  common::Status st = common::transport_error(prefix() + "rank " + std::to_string(c.rank) +
                                              " broke the protocol: " + what);
  send_error(c, st);
  // What follows the bad frame cannot be framed any more: ignore it (the
  // connection stays open so the error reaches the rank).
  c.discard = true;
  c.hdr_got = 0;
  c.payload.reset();
  fail(std::move(st));
}

void StoreServer::Impl::drop_oldest_anonymous() {
  std::size_t anonymous = 0;
  for (auto& c : conns_) anonymous += c->rank < 0 && !c->closed ? 1 : 0;
  for (auto& c : conns_) {
    if (anonymous < kMaxAnonymous) return;
    if (c->rank < 0 && !c->closed) {
      c->closed = true;
      --anonymous;
    }
  }
}

void StoreServer::Impl::accept_all() {
  for (;;) {
    int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        common::logf(common::LogLevel::kWarn, 0, "%saccept(): %s", prefix().c_str(),
                     errno_text(errno).c_str());
      }
      return;
    }
    common::set_nodelay(fd);
    drop_oldest_anonymous();
    auto c = std::make_unique<Conn>();
    c->fd.reset(fd);
    c->hello_by = hello_due();
    conns_.push_back(std::move(c));
  }
}

void StoreServer::Impl::on_readable(Conn& c) {
  std::array<std::byte, 4096> sink;
  while (!c.closed) {
    std::byte* dst;
    std::size_t want;
    if (c.discard) {
      dst = sink.data();
      want = sink.size();
    } else if (c.hdr_got < wire::kHeaderBytes) {
      dst = c.hdr_buf.data() + c.hdr_got;
      want = wire::kHeaderBytes - c.hdr_got;
    } else {
      if (c.payload_got == c.payload->size()) {
        c.payload->resize(std::min(c.payload_want, c.payload->size() + kGrowBytes));
      }
      dst = c.payload->data() + c.payload_got;
      want = c.payload->size() - c.payload_got;
    }
    // want > 0: a frame is handled as soon as its last byte is in.
    ssize_t n = ::recv(c.fd.get(), dst, want, 0);
    if (n == 0) return on_closed(c, "connection closed");
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      return on_closed(c, errno_text(errno));
    }
    if (c.discard) continue;
    if (c.hdr_got < wire::kHeaderBytes) {
      c.hdr_got += static_cast<std::size_t>(n);
      if (c.hdr_got < wire::kHeaderBytes) continue;
      std::string why;
      if (!wire::decode(c.hdr_buf, c.hdr, why)) {
        if (c.rank < 0) {  // a stray connection (a port scanner, an old job): drop it
          common::logf(common::LogLevel::kDebug, 0, "%sdropped a stray connection: %s",
                       prefix().c_str(), why.c_str());
          c.closed = true;
          return;
        }
        return protocol_error(c, why);
      }
      if (!accept_header(c)) return;
      c.payload = std::make_shared<Bytes>();
      c.payload_want = static_cast<std::size_t>(c.hdr.length);
      c.payload_got = 0;
    } else {
      c.payload_got += static_cast<std::size_t>(n);
    }
    if (c.payload_got < c.payload_want) continue;
    on_frame(c);
    c.hdr_got = 0;
    c.payload.reset();
  }
}

// Judges a frame by its header, before anything is allocated for it: an
// anonymous connection may only say hello; a rank sends what the protocol
// can need, never more. False: the connection was dropped or is in error.
bool StoreServer::Impl::accept_header(Conn& c) {
  const wire::Header& h = c.hdr;
  if (c.rank < 0) {
    if (h.kind == wire::Kind::kHello && h.length >= wire::kHelloBytes &&
        h.length <= wire::kMaxHelloBytes) {
      return true;
    }
    common::logf(common::LogLevel::kDebug, 0,
                 "%sdropped an anonymous connection that sent frame kind %d of %llu bytes "
                 "instead of a hello",
                 prefix().c_str(), static_cast<int>(h.kind),
                 static_cast<unsigned long long>(h.length));
    c.closed = true;
    return false;
  }
  std::string bad;
  if (h.kind == wire::Kind::kContribute) {
    if (h.length > wire::kMaxContribution) {
      bad = "a contribution of " + std::to_string(h.length) + " bytes (at most " +
            std::to_string(wire::kMaxContribution) + ")";
    } else if (!welcomed_ && !failed_) {
      bad = "a contribution before every rank arrived";
    }
  } else if (h.kind == wire::Kind::kHello) {
    bad = "a second hello";
  } else if (h.kind == wire::Kind::kBye || h.kind == wire::Kind::kDetach) {
    if (h.length != 0) bad = "a goodbye of " + std::to_string(h.length) + " bytes";
    if (h.kind == wire::Kind::kDetach &&
        (h.round != round_ || !welcomed_ || contributions_.count(c.rank) != 0)) {
      bad = "a detach for allgather #" + std::to_string(h.round) + " while the store is at #" +
            std::to_string(round_);
    }
  } else {
    bad = "unexpected frame kind " + std::to_string(static_cast<int>(h.kind));
  }
  if (bad.empty()) return true;
  protocol_error(c, bad);
  return false;
}

void StoreServer::Impl::flush(Conn& c) {
  while (!c.closed && !c.out.empty()) {
    std::array<iovec, 32> iov;
    std::size_t n_iov = 0;
    for (auto it = c.out.begin(); it != c.out.end() && n_iov + 2 <= iov.size(); ++it) {
      std::size_t skip = it->written;
      if (skip < it->header.size()) {
        iov[n_iov++] = {it->header.data() + skip, it->header.size() - skip};
        skip = 0;
      } else {
        skip -= it->header.size();
      }
      if (it->payload && skip < it->payload->size()) {
        iov[n_iov++] = {const_cast<std::byte*>(it->payload->data()) + skip,
                        it->payload->size() - skip};
      }
    }
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = n_iov;
    ssize_t n = ::sendmsg(c.fd.get(), &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      return on_closed(c, errno_text(errno));
    }
    auto left = static_cast<std::size_t>(n);
    while (left > 0) {
      OutFrame& f = c.out.front();
      std::size_t take = std::min(left, f.size() - f.written);
      f.written += take;
      left -= take;
      if (f.written == f.size()) c.out.pop_front();
    }
  }
}

void StoreServer::Impl::run() {
  while (step()) {
  }
  close_all();
}

bool StoreServer::Impl::step(int max_wait_ms) {
  if (stop_.load() && !flush_by_) {
    flush_by_ = common::saturating_add(now(), timeout_);
    listen_.reset();
    // Ranks that still want the store learn why it is gone; for the others
    // this is the normal end.
    fail(common::peer_failure(prefix() +
                              "closed: rank 0 destroyed its bootstrap, which serves the store"),
         /*quiet=*/true);
  }
  const TimePoint t = now();
  check_deadlines(t);
  std::erase_if(conns_, [](const auto& c) { return c->closed; });
  bool pending =
      std::any_of(conns_.begin(), conns_.end(), [](const auto& c) { return !c->out.empty(); });
  if (flush_by_ && (!pending || t >= *flush_by_)) return false;

  TimePoint wake_at = flush_by_ ? *flush_by_ : TimePoint::max();
  if (!failed_ && !welcomed_) wake_at = std::min(wake_at, accept_by_);
  if (!failed_ && count_ > 0) wake_at = std::min(wake_at, round_by_);
  fds_.clear();
  fds_.push_back({wake_.get(), POLLIN, 0});
  if (listen_) fds_.push_back({listen_.get(), POLLIN, 0});
  const std::size_t first_conn = fds_.size();
  for (auto& c : conns_) {
    if (c->rank < 0) wake_at = std::min(wake_at, c->hello_by);
    fds_.push_back({c->fd.get(), static_cast<short>(POLLIN | (c->out.empty() ? 0 : POLLOUT)), 0});
  }
  // The wait is measured on the store's clock (poll() sleeps it).
  int wait_ms = -1;
  if (wake_at != TimePoint::max()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(
        std::max<common::Duration>(wake_at - t, common::Duration::zero()));
    wait_ms = static_cast<int>(std::min<std::int64_t>(left.count(), INT_MAX));
  }
  if (max_wait_ms >= 0 && (wait_ms < 0 || wait_ms > max_wait_ms)) wait_ms = max_wait_ms;
  int rc = ::poll(fds_.data(), fds_.size(), wait_ms);
  if (rc < 0) {
    if (errno == EINTR) return true;
    fail(common::transport_error(prefix() + "poll(): " + errno_text(errno)));
    return false;
  }
  if (fds_[0].revents != 0) {
    std::uint64_t v;
    [[maybe_unused]] auto n = ::read(wake_.get(), &v, sizeof v);
  }
  const std::size_t n_conns = conns_.size();  // accept_all() appends
  for (std::size_t i = 0; i < n_conns; ++i) {
    Conn& c = *conns_[i];
    short ev = fds_[first_conn + i].revents;
    if (ev & (POLLIN | POLLHUP | POLLERR)) on_readable(c);
    if (!c.closed && !c.out.empty()) flush(c);  // also answers what on_readable queued
    if (c.close_when_flushed && c.out.empty()) c.closed = true;
  }
  if (listen_ && first_conn == 2 && (fds_[1].revents & POLLIN)) accept_all();
  return true;
}

void StoreServer::Impl::close_all() {
  // An orderly close: drain what the ranks sent (closing over unread data
  // would reset the connection and could destroy replies still in flight),
  // then FIN after the last reply.
  for (auto& c : conns_) {
    std::array<std::byte, 4096> sink;
    while (::recv(c->fd.get(), sink.data(), sink.size(), MSG_DONTWAIT) > 0) {
    }
    ::shutdown(c->fd.get(), SHUT_WR);
  }
  conns_.clear();
}

StoreServer::StoreServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

int StoreServer::max_ranks() {
  constexpr rlim_t kCap = rlim_t{1} << 24;
  constexpr rlim_t kOwn = 64;  // the process's own descriptors, the listener, anonymous peers
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) {
    return static_cast<int>(kCap);
  }
  return static_cast<int>(
      std::clamp<rlim_t>(lim.rlim_cur > kOwn ? lim.rlim_cur - kOwn : 1, 1, kCap));
}

common::Status StoreServer::start(const sockaddr_in& addr, int size,
                                  std::chrono::milliseconds timeout, std::string secret,
                                  std::unique_ptr<StoreServer>& out) {
  Fd listen;
  if (auto st = listen_on(addr, std::max(size, 16), listen); !st) return st;
  auto impl = std::make_unique<Impl>(std::move(listen), addr, size, timeout, std::move(secret));
  impl->wake_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!impl->wake_) return common::transport_error("eventfd(): " + errno_text(errno));
  Impl* raw = impl.get();
  raw->thread_ = std::thread([raw] { raw->run(); });
  out.reset(new StoreServer(std::move(impl)));
  return common::Status::ok();
}

StoreServer::~StoreServer() {
  impl_->stop();
  if (impl_->thread_.joinable()) impl_->thread_.join();
}

}  // namespace mccl::bootstrap
