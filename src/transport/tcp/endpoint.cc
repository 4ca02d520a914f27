// The TCP reliable transport (tcp_transport.h): one Connection per peer,
// one epoll set over all of them, and the bookkeeping that reports each
// peer failure exactly once.
#include "transport/tcp/endpoint.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/wire.h"

namespace mccl::transport::tcp {
namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kPendingId = std::numeric_limits<std::uint32_t>::max();
// How long the destructor keeps sending what is still queued.
constexpr auto kCloseFlushBudget = 1s;

}  // namespace

common::Status TcpEndpoint::init(Mesh mesh) {
  listen_port_ = mesh.listen_port;
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid())
    return common::transport_error(me() + "epoll_create1(): " + errno_text(errno));
  pending_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!pending_.valid()) return common::transport_error(me() + "eventfd(): " + errno_text(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = kPendingId;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, pending_.get(), &ev) != 0) {
    return common::transport_error(me() + "epoll_ctl(): " + errno_text(errno));
  }
  for (int q = 0; q < size_ && !mesh.fds.empty(); ++q) {
    auto uq = static_cast<std::size_t>(q);
    if (q == rank_) continue;
    Peer& p = peers_[uq];
    p.name = mesh.names[uq];
    p.conn = std::make_unique<Connection>(q, std::move(mesh.fds[uq]), counters_);
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<std::uint32_t>(q);
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, p.conn->fd(), &ev) != 0) {
      return common::transport_error(me() + "epoll_ctl(): " + errno_text(errno));
    }
  }
  events_.resize(static_cast<std::size_t>(std::min(size_ + 1, 256)));
  return common::Status::ok();
}

TcpEndpoint::~TcpEndpoint() {
  // Give what is queued a bounded chance to leave: a last message sent just
  // before destruction should not be lost to a peer that is still reading.
  const common::Deadline deadline = common::Deadline::after(kCloseFlushBudget);
  std::vector<pollfd> fds;
  std::vector<Connection*> conns;
  for (;;) {
    fds.clear();
    conns.clear();
    for (Peer& p : peers_) {
      if (p.conn && !p.conn->broken() && p.conn->has_queued()) {
        fds.push_back({p.conn->fd(), POLLOUT, 0});
        conns.push_back(p.conn.get());
      }
    }
    if (fds.empty() || deadline.expired()) break;
    if (::poll(fds.data(), fds.size(), common::poll_timeout_ms(deadline)) < 0 && errno != EINTR)
      break;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      conns[i]->set_writable();
      conns[i]->flush();
    }
  }
  for (Peer& p : peers_) {
    if (p.conn) p.conn->close();
  }
}

common::Status TcpEndpoint::failure_of(int peer) const {
  const Peer& p = peers_[static_cast<std::size_t>(peer)];
  return common::peer_failure(me() + "lost its connection to rank " + std::to_string(peer) + " (" +
                              p.name + "): " + p.conn->failure());
}

void TcpEndpoint::update_interest(int peer) {
  Peer& p = peers_[static_cast<std::size_t>(peer)];
  const bool want = p.conn->has_queued() && !p.conn->broken();
  if (want == p.epollout || p.reported) return;
  epoll_event ev{};
  ev.events = EPOLLIN | (want ? EPOLLOUT : 0u);
  ev.data.u32 = static_cast<std::uint32_t>(peer);
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, p.conn->fd(), &ev) == 0) p.epollout = want;
}

void TcpEndpoint::list(int peer, std::vector<int>& where) {
  Peer& p = peers_[static_cast<std::size_t>(peer)];
  if (p.listed) return;
  p.listed = true;
  where.push_back(peer);
}

void TcpEndpoint::set_pending(bool on) {
  if (on == pending_on_) return;
  pending_on_ = on;
  std::uint64_t v = 1;
  [[maybe_unused]] ssize_t n =
      on ? ::write(pending_.get(), &v, sizeof v) : ::read(pending_.get(), &v, sizeof v);
}

void TcpEndpoint::report(int peer, ReliableHandler& handler) {
  Peer& p = peers_[static_cast<std::size_t>(peer)];
  p.reported = true;
  common::Status why = failure_of(peer);
  common::logf(common::LogLevel::kInfo, rank_, "%s", why.message().c_str());
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, p.conn->fd(), nullptr);
  p.conn->close();
  handler.on_peer_failure(peer, why);
}

common::Status TcpEndpoint::send(int peer, std::span<const std::span<const std::byte>> parts) {
  if (peer < 0 || peer >= size_) {
    return common::invalid_argument(me() + "send to rank " + std::to_string(peer) +
                                    ", outside the mesh of " + std::to_string(size_));
  }
  std::size_t total = 0;
  for (const auto& part : parts) total += part.size();
  if (total > wire::kMaxMessageBytes) {
    return common::invalid_argument(me() + "a message of " + std::to_string(total) +
                                    " bytes to rank " + std::to_string(peer) +
                                    " exceeds the transport's 1 GiB limit");
  }
  if (peer == rank_) {
    std::vector<std::byte>& m = self_queue_.emplace_back();
    m.reserve(total);
    for (const auto& part : parts) m.insert(m.end(), part.begin(), part.end());
    ++counters_.messages_sent;
    counters_.bytes_sent += total;
    set_pending(true);
    return common::Status::ok();
  }
  Peer& p = peers_[static_cast<std::size_t>(peer)];
  if (p.reported || p.conn->broken()) return failure_of(peer);
  if (!p.conn->send(parts, total)) {
    list(peer, backlog_);  // poll() reports it
    set_pending(true);
    return failure_of(peer);
  }
  update_interest(peer);
  return common::Status::ok();
}

common::Status TcpEndpoint::poll(ReliableHandler& handler, std::size_t max,
                                 std::size_t& delivered) {
  delivered = 0;
  int n = ::epoll_wait(epoll_.get(), events_.data(), static_cast<int>(events_.size()), 0);
  if (n < 0 && errno != EINTR) {
    return common::transport_error(me() + "epoll_wait(): " + errno_text(errno));
  }
  // The handler may send (and so append to backlog_) while work_ is walked.
  work_.clear();
  work_.swap(backlog_);
  for (int i = 0; i < n; ++i) {
    const std::uint32_t id = events_[static_cast<std::size_t>(i)].data.u32;
    if (id == kPendingId) continue;
    const auto peer = static_cast<int>(id);
    Peer& p = peers_[id];
    if (p.reported) continue;
    const std::uint32_t ev = events_[static_cast<std::size_t>(i)].events;
    if (ev & EPOLLOUT) {
      p.conn->set_writable();
      p.conn->flush();
      update_interest(peer);
    }
    if ((ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) || p.conn->broken()) list(peer, work_);
  }

  while (delivered < max && !self_queue_.empty()) {
    std::vector<std::byte> m = std::move(self_queue_.front());
    self_queue_.pop_front();
    ++delivered;
    ++counters_.messages_received;
    counters_.bytes_received += m.size();
    handler.on_message(rank_, m);
  }

  for (std::size_t i = 0; i < work_.size(); ++i) {
    const int peer = work_[i];
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    p.listed = false;
    if (p.reported) continue;
    if (delivered < max) p.conn->receive(handler, max, delivered);
    if (p.conn->has_ready_message() || (!p.conn->broken() && delivered >= max)) {
      list(peer, backlog_);  // its turn comes next time
    } else if (p.conn->broken()) {
      report(peer, handler);  // after everything it sent before, even when max is reached
    }
  }
  work_.clear();
  set_pending(!self_queue_.empty() || !backlog_.empty());
  return common::Status::ok();
}

}  // namespace mccl::transport::tcp
