// The TCP endpoint's connections (endpoint.h): the ring neighbours
// connected at creation, any other peer dialled when first sent to, crossing
// dials settled by rank, idle connections closed by the kGoodbye handshake
// when the cache is full, and lost peers reported and told around the ring.
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "common/log.h"
#include "transport/tcp/congestion.h"
#include "transport/tcp/endpoint.h"
#include "transport/tcp/endpoint_ids.h"

namespace mccl::transport::tcp {
namespace {

// Connections not yet answered: beyond this many the oldest is dropped, so
// strangers cannot hold this rank's descriptors.
constexpr std::size_t kMaxAnswering = 64;
constexpr int kEvents = 64;

std::uint32_t epoll_events(short poll_events) {
  return ((poll_events & POLLIN) ? EPOLLIN : 0u) | ((poll_events & POLLOUT) ? EPOLLOUT : 0u);
}

short poll_events(std::uint32_t epoll) {
  return static_cast<short>(((epoll & EPOLLIN) ? POLLIN : 0) | ((epoll & EPOLLOUT) ? POLLOUT : 0) |
                            ((epoll & EPOLLERR) ? POLLERR : 0) |
                            ((epoll & EPOLLHUP) ? POLLHUP : 0));
}

void erase_value(std::vector<int>& v, int x) { std::erase(v, x); }

// Where a dial that has not succeeded stands, for messages.
std::string describe(const Dialer& d) {
  switch (d.state) {
    case Dialer::State::kConnecting:
      return "connect still in progress (last error: " + d.last_error + ")";
    case Dialer::State::kSendingHello:
    case Dialer::State::kAwaitingAccept:
      return "connected, but it never answered the handshake";
    default:
      return d.last_error;
  }
}

}  // namespace

common::Status TcpEndpoint::init() {
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  pending_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  timer_.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!epoll_.valid() || !pending_.valid() || !timer_.valid() ||
      !watch(pending_.get(), kPendingId, EPOLLIN) || !watch(timer_.get(), kTimerId, EPOLLIN) ||
      (listen_.valid() && !watch(listen_.get(), kListenId, EPOLLIN))) {
    return common::transport_error(me() + "epoll/eventfd/timerfd: " + errno_text(errno));
  }
  events_.resize(kEvents);
  if (size_ == 1) {
    ready_ = true;
    return common::Status::ok();
  }
  std::vector<int> ring = {(rank_ + 1) % size_};
  if (const int left = (rank_ + size_ - 1) % size_; left != ring[0]) ring.push_back(left);
  const common::Deadline deadline = common::Deadline::after(connect_timeout_);
  for (int q : ring) {
    at(q).pinned = true;
    if (rank_ < q) start_dial(q);  // the lower rank of each pair dials: no crossing at creation
  }
  while (!ring_open(ring)) {
    if (deadline.expired()) return ring_timeout(ring);
    for (int q : ring) {
      if (at(q).link == Link::kFailed) return ring_timeout(ring);
    }
    // Established connections are watched for nothing yet: the protocol
    // reads them once this returns.
    const int n =
        ::epoll_wait(epoll_.get(), events_.data(), kEvents, common::poll_timeout_ms(deadline));
    if (n < 0 && errno != EINTR) {
      return common::transport_error(me() + "epoll_wait(): " + errno_text(errno));
    }
    for (int i = 0; i < n; ++i) {
      const epoll_event& ev = events_[static_cast<std::size_t>(i)];
      if (!is_peer_id(ev.data.u32)) on_event(ev.data.u32, ev.events);
    }
    check_timers(common::now());
    arm_timer();
  }
  ready_ = true;
  for (int q : linked_) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<std::uint32_t>(q);
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, at(q).conn->fd(), &ev);
    at(q).epollout = false;
    update_interest(q);
  }
  return common::Status::ok();
}

bool TcpEndpoint::ring_open(const std::vector<int>& ring) const {
  return std::all_of(ring.begin(), ring.end(), [&](int q) {
    return peers_[static_cast<std::size_t>(q)].link == Link::kOpen;
  });
}

common::Status TcpEndpoint::ring_timeout(const std::vector<int>& ring) const {
  std::string ranks, details;
  for (int q : ring) {
    const Peer& p = peers_[static_cast<std::size_t>(q)];
    if (p.link == Link::kOpen) continue;
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(q);
    details += "; rank " + std::to_string(q) + " at " + dir_.name(q) + ": ";
    details += p.link == Link::kFailed ? p.failure
               : p.dial                ? describe(*p.dial)
                                       : std::string("never connected to this rank");
  }
  return common::timeout_error(me() + "its ring neighbours were not connected after " +
                               std::to_string(connect_timeout_.count()) +
                               " ms (the setup timeout); no connection with ranks " + ranks +
                               details);
}

void TcpEndpoint::on_event(std::uint32_t id, std::uint32_t events) {
  if (id == kPendingId) return;
  if (id == kTimerId) {
    std::uint64_t ticks;
    [[maybe_unused]] ssize_t n = ::read(timer_.get(), &ticks, sizeof ticks);
    timer_at_ = common::TimePoint::max();
    return;
  }
  if (id == kListenId) return accept_all();
  if (is_dial_id(id)) return step_dial(static_cast<int>(id & kIdMask), poll_events(events));
  if (!is_answer_id(id)) return;
  for (Answerer& a : answering_) {
    if (a.id == id && !a.dead) step_answer(a);
  }
  answering_.remove_if([](const Answerer& a) { return a.dead; });
}

void TcpEndpoint::start_dial(int peer) {
  Peer& p = at(peer);
  p.link = Link::kDialing;
  p.dial_by = common::saturating_add(common::now(), ready_ ? dial_timeout_ : connect_timeout_);
  if (!p.dial) p.dial = std::make_unique<Dialer>();
  dial_start(dir_, peer, *p.dial);
  if (std::find(dialing_.begin(), dialing_.end(), peer) == dialing_.end()) dialing_.push_back(peer);
  rewatch_dial(peer);
}

void TcpEndpoint::rewatch_dial(int peer) {
  Peer& p = at(peer);
  if (!p.dial || !p.dial->fd.valid()) return;  // a closed descriptor left the set by itself
  epoll_event ev{};
  ev.events = epoll_events(p.dial->events());
  ev.data.u32 = kDialTag | static_cast<std::uint32_t>(peer);
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, p.dial->fd.get(), &ev) != 0 && errno == ENOENT) {
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, p.dial->fd.get(), &ev);
  }
}

void TcpEndpoint::step_dial(int peer, short revents) {
  Peer& p = at(peer);
  if (p.link != Link::kDialing || !p.dial) return;
  dial_step(dir_, peer, *p.dial, revents);
  if (gone(*p.dial)) return lose(peer, "it refused the connection: its transport is gone", false);
  if (p.dial->state != Dialer::State::kDone) return rewatch_dial(peer);
  Fd fd = std::move(p.dial->fd);
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd.get(), nullptr);
  open_link(peer, std::move(fd));
}

void TcpEndpoint::accept_all() {
  for (;;) {
    int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN, or a transient error such as EMFILE: the dialer retries
    }
    if (answering_.size() >= kMaxAnswering) answering_.pop_front();
    set_nodelay(fd);
    Answerer& a = answering_.emplace_back();
    a.fd.reset(fd);
    a.hello_by = common::saturating_add(common::now(), connect_timeout_);
    a.id = kAnswerTag | (next_answer_id_++ & kIdMask);
    if (!watch(fd, a.id, EPOLLIN)) a.dead = true;
  }
}

void TcpEndpoint::step_answer(Answerer& a) {
  if (a.peer < 0) {
    answer_read(dir_, a);
    if (a.dead || a.peer < 0) return;
  }
  Peer& p = at(a.peer);
  if (!a.accepting) {
    if (p.link == Link::kClosing) {
      // The old connection still holds the peer's last messages: answer
      // once it is closed (decide_parked), so that nothing overtakes them.
      epoll_event ev{};
      ev.data.u32 = a.id;
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, a.fd.get(), &ev);
      return;
    }
    // Two dials crossing: the lower rank's wins, on both ends.
    const bool crossing_we_win = p.link == Link::kDialing && rank_ < a.peer;
    if (p.link == Link::kOpen || p.link == Link::kFailed || p.reported || crossing_we_win) {
      a.dead = true;
      return;
    }
    if (p.link == Link::kDialing) {
      p.dial.reset();  // ours lost: the peer takes the lower rank's, its own
      erase_value(dialing_, a.peer);
    }
    a.accepting = true;
  }
  if (!answer_write(a)) {
    if (a.dead) return;
    epoll_event ev{};
    ev.events = EPOLLOUT;
    ev.data.u32 = a.id;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, a.fd.get(), &ev);
    return;
  }
  Fd fd = std::move(a.fd);
  a.dead = true;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd.get(), nullptr);
  open_link(a.peer, std::move(fd));
}

void TcpEndpoint::decide_parked() {
  for (Answerer& a : answering_) {
    if (a.peer >= 0 && !a.accepting && !a.dead && at(a.peer).link != Link::kClosing) {
      step_answer(a);
    }
  }
  answering_.remove_if([](const Answerer& a) { return a.dead; });
}

void TcpEndpoint::open_link(int peer, Fd fd) {
  apply_congestion(fd.get(), congestion_);
  Peer& p = at(peer);
  p.dial.reset();
  erase_value(dialing_, peer);
  p.conn = std::make_unique<Connection>(peer, std::move(fd), counters_, *this);
  p.link = Link::kOpen;
  p.sent_goodbye = p.got_goodbye = p.epollout = false;
  p.last_used = ++clock_;
  linked_.push_back(peer);
  ++open_;
  ++counters_.connections_opened;
  counters_.most_open = std::max<std::uint64_t>(counters_.most_open, open_);
  watch(p.conn->fd(), static_cast<std::uint32_t>(peer), ready_ ? std::uint32_t{EPOLLIN} : 0u);
  // News of lost ranks first, then what waited, in the order it was sent.
  for (std::uint32_t dead : p.news) {
    p.conn->send_control(wire::ControlKind::kPeerFailed, dead);
    ++counters_.failure_news_sent;
  }
  p.news.clear();
  while (!p.pending.empty()) {
    const std::vector<std::byte>& m = p.pending.front();
    const std::span<const std::byte> part[1] = {m};
    p.conn->send(part, m.size());
    p.pending.pop_front();
  }
  if (ready_) update_interest(peer);
  if (p.conn->broken()) {
    list(peer, backlog_);
    set_pending(true);
  }
}

void TcpEndpoint::on_control(int peer, wire::ControlKind kind, std::uint32_t arg) {
  Peer& p = at(peer);
  switch (kind) {
    case wire::ControlKind::kGoodbye:
      p.got_goodbye = true;
      if (!p.sent_goodbye) begin_close(peer);  // everything sent before goes first
      break;
    case wire::ControlKind::kLeaving:
      p.leaving = true;
      break;
    case wire::ControlKind::kPeerFailed:
      if (arg < static_cast<std::uint32_t>(size_) && static_cast<int>(arg) != rank_ &&
          static_cast<int>(arg) != peer) {
        lose(static_cast<int>(arg),
             "rank " + std::to_string(peer) + " reported it dead (a ring neighbour lost it)",
             /*spread=*/true);
      }
      break;
  }
}

void TcpEndpoint::begin_close(int peer) {
  Peer& p = at(peer);
  p.conn->send_control(wire::ControlKind::kGoodbye, 0);
  p.sent_goodbye = true;
  p.link = Link::kClosing;
  closing_.push_back(peer);
  update_interest(peer);
}

void TcpEndpoint::unlink(int peer) {
  Peer& p = at(peer);
  if (!p.conn) return;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, p.conn->fd(), nullptr);
  p.conn->close();
  erase_value(linked_, peer);
  erase_value(closing_, peer);
  --open_;
}

void TcpEndpoint::finish_closes() {
  for (std::size_t i = 0; i < closing_.size();) {
    const int peer = closing_[i];
    Peer& p = at(peer);
    // Both said it and ours is out; or the peer closed after both did.
    const bool done =
        p.link == Link::kClosing && !p.conn->broken() &&
        ((p.sent_goodbye && p.got_goodbye && !p.conn->has_queued()) || p.conn->ended());
    if (!done) {
      ++i;
      continue;
    }
    unlink(peer);  // erases closing_[i]
    p.conn.reset();
    p.link = Link::kNone;
    ++counters_.connections_closed;
    if (!p.pending.empty() || !p.news.empty()) start_dial(peer);
  }
  decide_parked();
}

void TcpEndpoint::evict_idle() {
  int open_now = 0;
  for (int q : linked_) open_now += at(q).link == Link::kOpen ? 1 : 0;
  while (open_now > max_open_) {
    int victim = -1;
    for (int q : linked_) {
      const Peer& p = at(q);
      if (p.link != Link::kOpen || p.pinned || p.listed || !p.conn->idle()) continue;
      if (victim < 0 || p.last_used < at(victim).last_used) victim = q;
    }
    if (victim < 0) return;  // none idle: over the bound until one is
    begin_close(victim);
    --open_now;
  }
}

void TcpEndpoint::check_timers(common::TimePoint now) {
  for (std::size_t i = 0; i < dialing_.size();) {
    const int peer = dialing_[i];
    Peer& p = at(peer);
    if (p.link != Link::kDialing || !p.dial) {
      dialing_.erase(dialing_.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    ++i;
    if (now >= p.dial_by) {
      lose(peer,
           "no connection within " +
               std::to_string((ready_ ? dial_timeout_ : connect_timeout_).count()) +
               " ms: " + describe(*p.dial),
           /*spread=*/false);
    } else if (p.dial->state == Dialer::State::kIdle && now >= p.dial->retry_at) {
      dial_start(dir_, peer, *p.dial);
      if (gone(*p.dial)) {
        lose(peer, "it refused the connection: its transport is gone", false);
      } else {
        rewatch_dial(peer);
      }
    }
  }
  for (Answerer& a : answering_) {
    if (a.peer < 0 && now >= a.hello_by) a.dead = true;  // a silent stranger
  }
  answering_.remove_if([](const Answerer& a) { return a.dead; });
}

void TcpEndpoint::arm_timer() {
  common::TimePoint next = common::TimePoint::max();
  for (int peer : dialing_) {
    const Peer& p = at(peer);
    next = std::min(next, p.dial_by);
    if (p.dial && p.dial->state == Dialer::State::kIdle) next = std::min(next, p.dial->retry_at);
  }
  for (const Answerer& a : answering_) {
    if (a.peer < 0) next = std::min(next, a.hello_by);
  }
  if (next == timer_at_) return;
  timer_at_ = next;
  itimerspec spec{};
  if (next != common::TimePoint::max()) {
    const auto ns = std::max<std::int64_t>(
        1, std::chrono::duration_cast<std::chrono::nanoseconds>(next - common::now()).count());
    spec.it_value.tv_sec = static_cast<time_t>(ns / 1000000000);
    spec.it_value.tv_nsec = static_cast<long>(ns % 1000000000);
  }
  ::timerfd_settime(timer_.get(), 0, &spec, nullptr);
}

void TcpEndpoint::lose(int peer, std::string why, bool spread) {
  Peer& p = at(peer);
  if (p.reported || p.link == Link::kFailed) return;
  if (p.conn) unlink(peer);
  p.conn.reset();
  p.dial.reset();
  erase_value(dialing_, peer);
  p.pending.clear();
  p.news.clear();
  p.link = Link::kFailed;
  p.failure = std::move(why);
  lost_.push_back(peer);
  for (Answerer& a : answering_) {
    if (a.peer == peer) a.dead = true;
  }
  if (spread) spread_news(peer);
}

bool TcpEndpoint::gone(const Dialer& d) const {
  // Every listener exists before its address is published, and a full
  // accept queue drops a SYN rather than refusing it: after creation a
  // refusal means the peer's transport (or process) is gone. During
  // creation it is retried, and reported with the ring's timeout.
  return ready_ && d.state == Dialer::State::kIdle && d.refused;
}

int TcpEndpoint::live_neighbour(int step) const {
  for (int k = 1; k < size_; ++k) {
    const int q = ((rank_ + step * k) % size_ + size_) % size_;
    if (peers_[static_cast<std::size_t>(q)].link != Link::kFailed) return q;
  }
  return -1;
}

void TcpEndpoint::spread_news(int dead) {
  const int right = live_neighbour(+1);
  const int left = live_neighbour(-1);
  for (int q : {right, left}) {
    if (q < 0) continue;
    Peer& p = at(q);
    if (p.link == Link::kOpen) {
      p.conn->send_control(wire::ControlKind::kPeerFailed, static_cast<std::uint32_t>(dead));
      ++counters_.failure_news_sent;
      update_interest(q);
    } else {
      p.news.push_back(static_cast<std::uint32_t>(dead));
      if (p.link == Link::kNone) start_dial(q);
    }
    if (left == right) break;
  }
}

void TcpEndpoint::settle_pending(common::Deadline deadline) {
  struct Discard final : ReliableHandler {
    void on_message(int, std::span<const std::byte>) override {}
    void on_peer_failure(int, const common::Status&) override {}
  } discard;
  auto waiting = [&] {
    for (int q : dialing_) {
      if (!at(q).pending.empty()) return true;
    }
    for (int q : closing_) {
      if (!at(q).pending.empty()) return true;
    }
    return false;
  };
  while (waiting() && !deadline.expired()) {
    const int n = ::epoll_wait(epoll_.get(), events_.data(), kEvents,
                               std::min(common::poll_timeout_ms(deadline), 10));
    for (int i = 0; i < std::max(n, 0); ++i) {
      const epoll_event& ev = events_[static_cast<std::size_t>(i)];
      if (!is_peer_id(ev.data.u32)) {
        on_event(ev.data.u32, ev.events);
        continue;
      }
      Peer& p = at(static_cast<int>(ev.data.u32));
      if (!p.conn || p.link == Link::kFailed) continue;
      p.conn->set_writable();
      p.conn->flush();
      std::size_t d = 0;
      // Only a closing connection is read: its kGoodbye lets it close.
      if (p.link == Link::kClosing) p.conn->receive(discard, SIZE_MAX, d);
    }
    check_timers(common::now());
    finish_closes();
  }
}

void TcpEndpoint::report_lost(ReliableHandler& handler) {
  std::vector<int> lost;
  lost.swap(lost_);
  for (int peer : lost) {
    Peer& p = at(peer);
    if (p.reported) continue;
    p.reported = true;
    common::Status why = failure_of(peer);
    common::logf(common::LogLevel::kInfo, rank_, "%s", why.message().c_str());
    handler.on_peer_failure(peer, why);
  }
}

}  // namespace mccl::transport::tcp
