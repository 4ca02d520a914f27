// The TCP reliable transport's endpoint (tcp_transport.h says what it
// guarantees): the peers' links, connected on demand, one epoll set over
// every socket, and the bookkeeping that reports each peer failure exactly
// once.
//
// A peer's link (Link) goes kNone -> kDialing (this rank opens it) or
// straight to kOpen (the peer opened it) -> kClosing (one end said
// kGoodbye) -> kNone again, or to kFailed from any state. Messages sent
// while there is no open connection wait in the peer's `pending` queue, in
// order, and go out first once one is open. endpoint.cc moves the bytes;
// endpoint_links.cc makes, closes and loses connections.
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/fd.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/directory.h"
#include "transport/tcp/handshake.h"
#include "transport/tcp/tcp_transport.h"

namespace mccl::transport::tcp {

enum class Link : std::uint8_t { kNone, kDialing, kOpen, kClosing, kFailed };

struct Peer {
  Link link = Link::kNone;
  std::unique_ptr<Connection> conn;            // kOpen, kClosing
  std::unique_ptr<Dialer> dial;                // kDialing while this rank's attempt lives
  common::TimePoint dial_by{};                 // kDialing: connected by then, or failed
  std::deque<std::vector<std::byte>> pending;  // waiting for a connection
  std::uint64_t last_used = 0;                 // LRU clock of the connection cache
  bool pinned = false;    // a ring neighbour: connected at creation, never closed
  bool epollout = false;  // EPOLLOUT is in the interest set
  bool listed = false;    // in backlog_ or in this poll's work list
  bool reported = false;  // on_peer_failure was called
  bool sent_goodbye = false;
  bool got_goodbye = false;
  bool leaving = false;             // it said kLeaving: its end is orderly, not news to spread
  std::string failure;              // kFailed: why
  std::vector<std::uint32_t> news;  // ranks lost, to tell this peer once connected
};

class TcpEndpoint final : public TcpTransport, public ControlSink {
 public:
  TcpEndpoint(const TcpReliableConfig& config, Directory directory, Fd listen);
  ~TcpEndpoint() override;

  // Opens the epoll set and connects both ring neighbours (the lower rank
  // of each pair dials). Blocking until both are open or config's
  // connect_timeout passes (kTimeout naming the missing ranks and why).
  common::Status init();

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  common::Status send(int peer, std::span<const std::span<const std::byte>> parts) override {
    return send_parts(peer, parts, 0);
  }
  common::Status send_lent(int peer, std::span<const std::span<const std::byte>> parts,
                           std::uint64_t lender) override {
    return send_parts(peer, parts, lender);
  }
  void reclaim(std::uint64_t lender) override;
  common::Status poll(ReliableHandler& handler, std::size_t max, std::size_t& delivered) override;
  int wait_fd() const override { return epoll_.get(); }
  bool awaiting_connection() const override;
  bool wait_fd_gates_poll() const override { return true; }  // see tcp_transport.h
  bool share_wait(int fd) override;
  bool shared_fd_readable() const override { return shared_readable_; }
  std::size_t landing_head_bytes() const override { return Connection::kLandingHeadBytes; }
  void abandon_landing(int peer) override;

  TcpCounters counters() const override { return counters_; }
  std::size_t queued_bytes(int peer) const override;
  std::uint16_t listen_port() const override { return dir_.listen_port; }
  int open_connections() const override { return open_; }
  std::string congestion_control(int peer) const override;

 private:
  // send() and send_lent(); `lender` 0: nothing lent.
  common::Status send_parts(int peer, std::span<const std::span<const std::byte>> parts,
                            std::uint64_t lender);
  std::string me() const { return "tcp: rank " + std::to_string(rank_) + ": "; }
  Peer& at(int peer) { return peers_[static_cast<std::size_t>(peer)]; }
  common::Status failure_of(int peer) const;
  void update_interest(int peer);
  void list(int peer, std::vector<int>& where);
  void set_pending(bool on);
  void deliver_self(ReliableHandler& handler, std::size_t max, std::size_t& delivered);
  void receive_listed(ReliableHandler& handler, std::size_t max, std::size_t& delivered);
  bool watch(int fd, std::uint32_t id, std::uint32_t events);

  // endpoint_links.cc: connections made, closed and lost.
  void on_control(int peer, wire::ControlKind kind, std::uint32_t arg) override;
  void on_event(std::uint32_t id, std::uint32_t events);
  void start_dial(int peer);
  void step_dial(int peer, short revents);
  void accept_all();
  void step_answer(Answerer& a);
  void open_link(int peer, Fd fd);
  void begin_close(int peer);
  void finish_closes();
  void evict_idle();
  void check_timers(common::TimePoint now);
  void arm_timer();
  void lose(int peer, std::string why, bool spread);
  void rewatch_dial(int peer);
  void unlink(int peer);
  void decide_parked();
  bool ring_open(const std::vector<int>& ring) const;
  // The destructor's first step: connects the peers that messages still
  // wait for (closing first what must close) until none is left or
  // `deadline`; messages that arrive meanwhile are dropped.
  void settle_pending(common::Deadline deadline);
  void report_lost(ReliableHandler& handler);
  void spread_news(int dead);
  int live_neighbour(int step) const;
  bool gone(const Dialer& d) const;
  common::Status ring_timeout(const std::vector<int>& ring) const;

  const int rank_;
  const int size_;
  const int max_open_;
  const std::chrono::milliseconds connect_timeout_;  // the ring's, at creation
  const std::chrono::milliseconds dial_timeout_;     // any later connection's
  const std::string congestion_;                     // TcpReliableConfig::congestion
  Directory dir_;
  Fd listen_;
  std::vector<Peer> peers_;  // O(size) small entries: the only per-peer state
  Fd epoll_;
  Fd pending_;  // eventfd in the epoll set: readable while poll() has work in memory
  Fd timer_;    // timerfd in the epoll set: a retry or a deadline of a connection is due
  bool pending_on_ = false;
  int shared_fd_ = -1;  // share_wait()'s descriptor, in the epoll set as kSharedId
  bool shared_readable_ = false;
  common::TimePoint timer_at_ = common::TimePoint::max();
  std::deque<std::vector<std::byte>> self_queue_;
  std::vector<int> lent_to_;  // peers whose connections may hold lent bytes
  std::vector<int> backlog_;  // peers with messages in memory, or broken and not reported
  std::vector<int> work_;
  std::vector<int> dialing_;  // peers in kDialing
  std::vector<int> closing_;  // peers in kClosing
  std::vector<int> lost_;     // peers lost, to report at the end of this poll
  std::vector<int> linked_;   // peers with a connection (kOpen or kClosing)
  std::list<Answerer> answering_;
  std::uint32_t next_answer_id_ = 0;
  std::vector<epoll_event> events_;
  std::uint64_t clock_ = 0;  // LRU ticks
  int open_ = 0;             // connections in kOpen or kClosing
  bool ready_ = false;       // init() is done: established connections are read
  TcpCounters counters_;
};

}  // namespace mccl::transport::tcp
