// The TCP reliable transport's endpoint (tcp_transport.h says what it
// guarantees): one Connection per peer, one epoll set over all of them, and
// the bookkeeping that reports each peer failure exactly once.
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/fd.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/mesh.h"
#include "transport/tcp/tcp_transport.h"

namespace mccl::transport::tcp {

struct Peer {
  std::unique_ptr<Connection> conn;  // null for self
  std::string name;                  // "ip:port"
  bool epollout = false;             // EPOLLOUT is in the interest set
  bool listed = false;               // in backlog_ or in this poll's work list
  bool reported = false;             // on_peer_failure was called
};

class TcpEndpoint final : public TcpTransport {
 public:
  TcpEndpoint(int rank, int size)
      : rank_(rank), size_(size), peers_(static_cast<std::size_t>(size)) {}
  ~TcpEndpoint() override;

  common::Status init(Mesh mesh);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  common::Status send(int peer, std::span<const std::span<const std::byte>> parts) override;
  common::Status poll(ReliableHandler& handler, std::size_t max, std::size_t& delivered) override;
  int wait_fd() const override { return epoll_.get(); }
  bool wait_fd_gates_poll() const override { return true; }  // see tcp_transport.h

  TcpCounters counters() const override { return counters_; }
  std::size_t queued_bytes(int peer) const override {
    if (peer < 0 || peer >= size_) return 0;
    const Peer& p = peers_[static_cast<std::size_t>(peer)];
    return p.conn ? p.conn->queued_bytes() : 0;
  }
  std::uint16_t listen_port() const override { return listen_port_; }

 private:
  std::string me() const { return "tcp: rank " + std::to_string(rank_) + ": "; }
  common::Status failure_of(int peer) const;
  void update_interest(int peer);
  void list(int peer, std::vector<int>& where);
  void set_pending(bool on);
  void report(int peer, ReliableHandler& handler);

  const int rank_;
  const int size_;
  std::uint16_t listen_port_ = 0;
  std::vector<Peer> peers_;
  Fd epoll_;
  Fd pending_;  // eventfd in the epoll set: readable while poll() has work in memory
  bool pending_on_ = false;
  std::deque<std::vector<std::byte>> self_queue_;
  std::vector<int> backlog_;  // peers with messages in memory, or broken and not reported
  std::vector<int> work_;
  std::vector<epoll_event> events_;
  TcpCounters counters_;
};

}  // namespace mccl::transport::tcp
