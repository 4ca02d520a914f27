// The UCX reliable transport's implementation class (ucx_transport.h has
// the contract). Split over setup.cc (context, worker, address exchange,
// endpoints, hello), endpoint.cc (send, poll, wake-up, destruction),
// receive.cc (the UCX callbacks and the reorder window) and teardown.cc.
//
// Invariants:
//  - Every UCX callback only records what happened (a slot filled, a peer
//    failed, an operation finished); the handler and user callbacks run
//    later from poll(). ucp_worker_progress is never called from a callback.
//  - peers_ never changes size after construction: callbacks hold Peer*.
//  - Operations handed to UCX (SendOp, RecvOp) are owned by the
//    sets below until their completion callback runs; whatever UCX never
//    completes is freed after ucp_worker_destroy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "transport/ucx/ucx_api.h"
#include "transport/ucx/ucx_transport.h"
#include "transport/ucx/wire.h"

namespace mccl::transport::ucx {

class UcxEndpoint;

// A received message waiting for its turn.
struct Held {
  std::unique_ptr<std::byte[]> owned;  // our copy, or the rendezvous buffer
  void* ucx_data = nullptr;            // UCX's eager buffer, released after delivery
  const std::byte* data = nullptr;
  std::size_t size = 0;
};

enum class SlotState : std::uint8_t {
  kEmpty,        // not arrived yet
  kRndvWaiting,  // rendezvous announced; poll() will post the receive
  kRndvPosted,   // ucp_am_recv_data_nbx in flight
  kReady,        // whole, waiting for delivery
  kLost,         // the receive failed: the stream of this peer ends here
};

struct Slot {
  SlotState state = SlotState::kEmpty;
  Held msg;
  void* rndv_desc = nullptr;  // kRndvWaiting only
};

struct Peer {
  UcxEndpoint* owner = nullptr;
  int rank = -1;
  ucp_ep_h ep = nullptr;
  // Sending.
  std::uint64_t next_seq = 0;
  std::size_t outstanding_bytes = 0;
  // Receiving: window[i] holds sequence number next_deliver + i.
  std::uint64_t next_deliver = 0;
  std::deque<Slot> window;
  std::size_t rndv_in_flight = 0;
  std::uint64_t ready_mark = 0;  // 1 + the highest sequence number that became whole
  // Failure.
  bool failed = false;    // known dead: sends refused
  bool closed = false;    // endpoint force-closed (or never opened)
  bool reported = false;  // on_peer_failure called, window dropped
  std::string why;
  common::TimePoint failed_at{};
  // Setup handshake.
  bool hello = false;    // its hello arrived
  bool ack_due = false;  // our acknowledgement of it is not sent yet
  bool acked = false;    // its acknowledgement of our hello arrived
};

struct SendOp {
  UcxEndpoint* owner;
  int peer;
  std::byte header[wire::kAmHeaderBytes];
  std::unique_ptr<std::byte[]> data;
  std::size_t size;
};

struct RecvOp {
  UcxEndpoint* owner;
  int peer;
  std::uint64_t seq;
  std::unique_ptr<std::byte[]> buffer;
  std::size_t size;
  bool orphaned = false;  // its peer's window was dropped: discard on completion
};

class UcxEndpoint final : public UcxTransport {
 public:
  explicit UcxEndpoint(const UcxReliableConfig& config);
  ~UcxEndpoint() override;
  UcxEndpoint(const UcxEndpoint&) = delete;
  UcxEndpoint& operator=(const UcxEndpoint&) = delete;

  // setup.cc
  common::Status init_ucx();
  // Blocking and collective: the three steps below, in order.
  common::Status connect(const OobAllgather& oob);
  // Round 1: every rank's fixed-size header (flags, rank, size, address
  // length, nonce), checked; sets session_ and `longest`, the longest
  // worker address.
  common::Status exchange_headers(const OobAllgather& oob, std::size_t address_length,
                                  std::uint32_t& longest);
  // Round 2: the worker addresses, padded to `longest`; an endpoint to each.
  common::Status create_endpoints(const OobAllgather& oob, std::vector<std::byte> my_address,
                                  std::uint32_t longest);
  // A hello each way on every endpoint, acknowledged, then a worker flush,
  // within the connect timeout.
  common::Status prove_endpoints();

  // ReliableTransport
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  common::Status send(int peer, std::span<const std::span<const std::byte>> parts) override;
  common::Status poll(ReliableHandler& handler, std::size_t max, std::size_t& delivered) override;
  int wait_fd() const override { return efd_; }

  // UcxTransport
  UcxCounters counters() const override;
  using UcxTransport::outstanding_bytes;
  std::size_t outstanding_bytes(int peer) const override;
  std::string describe_peer(int peer) const override;

  // Called by the UCX callbacks (receive.cc); record only.
  ucs_status_t on_am(const void* header, std::size_t header_length, void* data, std::size_t length,
                     const ucp_am_recv_param_t* param);
  void on_send_done(SendOp* op, ucs_status_t status);
  void on_recv_done(RecvOp* op, ucs_status_t status, std::size_t length);
  void on_ep_error(Peer& p, ucs_status_t status);
  void on_flush_done(ucs_status_t status) { flush_status_ = status; }

 private:
  std::string me() const { return "ucx: rank " + std::to_string(rank_) + ": "; }
  common::Status failure_of(int peer) const;
  void mark_failed(Peer& p, std::string why);

  // endpoint.cc
  unsigned progress();
  common::Status send_control(int peer, wire::Kind kind);
  common::Status post(Peer& p, const wire::AmHeader& h,
                      std::span<const std::span<const std::byte>> parts, std::size_t total);
  void send_due_acks();
  void close_failed_endpoints();
  void close_endpoint(Peer& p, bool force);
  void reap_closes();
  void deliver(ReliableHandler& handler, std::size_t max, std::size_t& delivered);
  void report_failures(ReliableHandler& handler);
  bool work_in_memory() const;
  common::Status rearm();
  void wait_idle(common::Deadline until);
  void release(Held& m);
  void became_ready(Peer& p, std::uint64_t seq, Slot& s);

  // receive.cc
  void post_rendezvous();
  void drop_window(Peer& p);

  const UcxReliableConfig config_;
  const int rank_;
  const int size_;
  std::vector<Peer> peers_;
  std::uint64_t session_ = 0;

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int efd_ = -1;
  bool signalled_ = false;  // ucp_worker_signal since the last arm
  bool in_poll_ = false;
  bool destroying_ = false;

  std::unordered_set<SendOp*> send_ops_;
  std::unordered_set<RecvOp*> recv_ops_;
  std::vector<std::pair<int, std::uint64_t>> rndv_to_post_;  // (peer, seq)
  std::vector<void*> closing_;  // ucp_ep_close_nbx requests, freed once done (or abandoned)
  ucs_status_t flush_status_ = UCS_INPROGRESS;

  std::uint64_t next_region_ = 0;

  std::vector<std::byte> scratch_;  // gather buffer of the immediate send path
  std::size_t rr_ = 0;              // first peer of the next delivery round
  UcxCounters counters_;
};

}  // namespace mccl::transport::ucx
