// The TCP reliable transport's data path (tcp_transport.h): sends, the poll
// loop that reads, delivers and reports, and the orderly end. Making,
// closing and losing connections is endpoint_links.cc's.
#include "transport/tcp/endpoint.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "transport/tcp/congestion.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/endpoint_ids.h"
#include "transport/tcp/wire.h"

namespace mccl::transport::tcp {
namespace {

using namespace std::chrono_literals;

// How long the destructor keeps sending what is still queued.
constexpr auto kCloseFlushBudget = 1s;

int max_open(const TcpReliableConfig& c) {
  return std::max(c.max_connections, 3);  // both ring neighbours and one more
}

}  // namespace

TcpEndpoint::TcpEndpoint(const TcpReliableConfig& config, Directory directory, Fd listen)
    : rank_(config.rank),
      size_(config.size),
      max_open_(max_open(config)),
      connect_timeout_(config.connect_timeout),
      dial_timeout_(config.dial_timeout.count() > 0 ? config.dial_timeout : config.connect_timeout),
      congestion_(config.congestion),
      dir_(std::move(directory)),
      listen_(std::move(listen)),
      peers_(static_cast<std::size_t>(config.size)) {}

bool TcpEndpoint::watch(int fd, std::uint32_t id, std::uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u32 = id;
  return ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) == 0;
}

bool TcpEndpoint::share_wait(int fd) {
  if (fd < 0 || shared_fd_ >= 0 || !epoll_.valid() || !watch(fd, kSharedId, EPOLLIN)) return false;
  shared_fd_ = fd;
  return true;
}

std::size_t TcpEndpoint::queued_bytes(int peer) const {
  if (peer < 0 || peer >= size_) return 0;
  const Peer& p = peers_[static_cast<std::size_t>(peer)];
  std::size_t n = p.conn ? p.conn->queued_bytes() : 0;
  for (const auto& m : p.pending) n += m.size() + wire::kFrameHeaderBytes;
  return n;
}

void TcpEndpoint::abandon_landing(int peer) {
  if (peer < 0 || peer >= size_) return;
  Peer& p = at(peer);
  if (p.conn) p.conn->abandon_landing();
}

std::string TcpEndpoint::congestion_control(int peer) const {
  if (peer < 0 || peer >= size_) return {};
  const Peer& p = peers_[static_cast<std::size_t>(peer)];
  return p.conn ? congestion_of(p.conn->fd()) : std::string();
}

bool TcpEndpoint::awaiting_connection() const {
  for (const Peer& p : peers_) {
    if (!p.pending.empty() && p.link != Link::kFailed) return true;
  }
  return false;
}

TcpEndpoint::~TcpEndpoint() {
  // An orderly exit: what is queued gets a bounded chance to leave (a last
  // message sent just before destruction should not be lost to a peer that
  // is still reading), and each peer hears kLeaving (so it does not spread
  // news of a death). Messages still waiting for a connection get as long as
  // any connection does (dial_timeout: a handshake through congested links,
  // or with a peer that polls rarely, takes seconds), and the wait ends as
  // soon as they are out or their peer is lost.
  // The shared descriptor leaves first: still readable, it would wake every
  // wait below at once.
  if (shared_fd_ >= 0) ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, shared_fd_, nullptr);
  if (epoll_.valid()) settle_pending(common::Deadline::after(dial_timeout_));
  const common::Deadline deadline = common::Deadline::after(kCloseFlushBudget);
  for (Peer& p : peers_) {
    if (p.conn && !p.conn->broken() && !p.sent_goodbye) {
      p.conn->send_control(wire::ControlKind::kLeaving, 0);
    }
  }
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
  std::string why = p.failure;
  if (why.empty() && p.conn) why = p.conn->failure();
  return common::peer_failure(me() + "lost its connection to rank " + std::to_string(peer) + " (" +
                              dir_.name(peer) + "): " + why);
}

void TcpEndpoint::update_interest(int peer) {
  Peer& p = at(peer);
  if (!p.conn || p.reported || p.link == Link::kFailed) return;
  const bool want = p.conn->has_queued() && !p.conn->broken();
  if (want == p.epollout) return;
  epoll_event ev{};
  ev.events = EPOLLIN | (want ? EPOLLOUT : 0u);
  ev.data.u32 = static_cast<std::uint32_t>(peer);
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, p.conn->fd(), &ev) == 0) p.epollout = want;
}

void TcpEndpoint::list(int peer, std::vector<int>& where) {
  Peer& p = at(peer);
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

common::Status TcpEndpoint::send_parts(int peer, std::span<const std::span<const std::byte>> parts,
                                       std::uint64_t lender) {
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
  auto copy = [&](std::deque<std::vector<std::byte>>& into) {
    std::vector<std::byte>& m = into.emplace_back();
    m.reserve(total);
    for (const auto& part : parts) m.insert(m.end(), part.begin(), part.end());
  };
  if (peer == rank_) {
    copy(self_queue_);
    ++counters_.messages_sent;
    counters_.bytes_sent += total;
    set_pending(true);
    return common::Status::ok();
  }
  Peer& p = at(peer);
  if (p.reported || p.link == Link::kFailed) return failure_of(peer);
  p.last_used = ++clock_;
  if (p.link != Link::kOpen) {
    // Not connected (yet, or any more): the message waits, in order, and
    // is counted as sent when it reaches a connection.
    copy(p.pending);
    if (p.link == Link::kNone) start_dial(peer);
    return common::Status::ok();
  }
  if (p.conn->broken()) return failure_of(peer);
  const std::size_t lent_before = p.conn->lent_bytes();
  if (!p.conn->send(parts, total, lender)) {
    list(peer, backlog_);  // poll() reports it
    set_pending(true);
    return failure_of(peer);
  }
  if (p.conn->lent_bytes() > lent_before &&
      std::find(lent_to_.begin(), lent_to_.end(), peer) == lent_to_.end()) {
    lent_to_.push_back(peer);
  }
  update_interest(peer);
  return common::Status::ok();
}

void TcpEndpoint::reclaim(std::uint64_t lender) {
  // Only connections that were lent bytes, and of those only the ones that
  // still hold some stay listed.
  std::erase_if(lent_to_, [&](int peer) {
    Peer& p = at(peer);
    if (!p.conn) return true;
    p.conn->reclaim(lender);
    return p.conn->lent_bytes() == 0;
  });
}

void TcpEndpoint::deliver_self(ReliableHandler& handler, std::size_t max, std::size_t& delivered) {
  while (delivered < max && !self_queue_.empty()) {
    std::vector<std::byte> m = std::move(self_queue_.front());
    self_queue_.pop_front();
    ++delivered;
    ++counters_.messages_received;
    counters_.bytes_received += m.size();
    handler.on_message(rank_, m);
  }
}

void TcpEndpoint::receive_listed(ReliableHandler& handler, std::size_t max,
                                 std::size_t& delivered) {
  for (std::size_t i = 0; i < work_.size(); ++i) {
    const int peer = work_[i];
    Peer& p = at(peer);
    p.listed = false;
    if (p.reported || !p.conn || p.link == Link::kFailed) continue;
    if (delivered < max) p.conn->receive(handler, max, delivered);
    if (p.conn->has_ready_message() || (!p.conn->broken() && delivered >= max)) {
      list(peer, backlog_);  // its turn comes next time
    } else if (p.conn->broken()) {
      // After everything it sent before, even when max is reached.
      lose(peer, p.conn->failure(), !p.leaving);
    }
  }
  work_.clear();
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
  shared_readable_ = false;
  for (int i = 0; i < n; ++i) {
    const epoll_event& ev = events_[static_cast<std::size_t>(i)];
    if (ev.data.u32 == kSharedId) {
      shared_readable_ = true;
      continue;
    }
    if (!is_peer_id(ev.data.u32)) {
      on_event(ev.data.u32, ev.events);
      continue;
    }
    const auto peer = static_cast<int>(ev.data.u32);
    Peer& p = at(peer);
    if (p.reported || !p.conn || p.link == Link::kFailed) continue;
    if (ev.events & EPOLLOUT) {
      p.conn->set_writable();
      p.conn->flush();
      update_interest(peer);
    }
    if ((ev.events & (EPOLLIN | EPOLLHUP | EPOLLERR)) || p.conn->broken()) list(peer, work_);
  }
  check_timers(common::now());
  deliver_self(handler, max, delivered);
  receive_listed(handler, max, delivered);
  finish_closes();
  evict_idle();
  report_lost(handler);
  arm_timer();
  set_pending(!self_queue_.empty() || !backlog_.empty());
  return common::Status::ok();
}

}  // namespace mccl::transport::tcp
