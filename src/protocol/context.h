// The protocol's per-communicator context: it owns the two transports,
// routes every incoming datagram and message to the collective it belongs
// to (by sequence number), keeps what arrives early, and drives the
// collectives in flight. It knows nothing of which collectives exist: those
// are Operations built by the coll layer.
//
// Failure model: a mismatch between ranks, a dead neighbour or a missed
// deadline "poisons" the context. Every collective in flight and every later
// one fails with that error, and the context tells both ring neighbours
// (kAbort), who do the same, so the error reaches every rank instead of
// leaving some of them waiting.
//
// Threading: all methods but counters() are called from the progress
// engine's thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "protocol/check_batch.h"
#include "protocol/counters.h"
#include "protocol/early_messages.h"
#include "protocol/early_store.h"
#include "protocol/membership.h"
#include "protocol/operation.h"
#include "protocol/p2p.h"
#include "protocol/poll_gate.h"
#include "protocol/rate_control.h"
#include "protocol/wire.h"
#include "transport/datagram.h"
#include "transport/reliable.h"

namespace mccl::protocol {

struct ProtocolConfig {
  std::uint32_t chunk_bytes = 1460;  // payload of a full datagram (MTU minus header)
  std::size_t early_bytes = 8 << 20;
  std::size_t reorder_window = 64;
  double stall_factor = 16;
  common::Duration stall_min = std::chrono::microseconds(1000);
  common::Duration stall_max = std::chrono::milliseconds(20);
  common::Duration first_timeout = std::chrono::milliseconds(2);
  std::size_t repair_max_bytes = 64 << 10;
  std::size_t send_batch = 64;
  // Helper threads that take the per-byte passes (MACs or CRCs) off the
  // engine's core (helper_pool.h, MCCL_PROTO_HELPER_THREADS); 0: none.
  unsigned helper_threads = 0;
  // What all roots injecting at once may burst into one receiver's switch
  // port (MCCL_PROTO_INCAST_BYTES): the transport splits it among the
  // roots, and an allgather that lets every root inject (concurrent_roots
  // 0) admits at most incast_roots() of them at once. Off here (0).
  std::size_t incast_bytes = 0;
  // Eager completion: a collective whose right neighbour may still ask for
  // at most eager_bytes completes as soon as this rank holds everything,
  // leaving a copy of that much; all copies together stay under
  // eager_budget (beyond it a collective waits for its release as before).
  // Off here (0); setup::protocol_config_from_settings() gives the setting's
  // default. Whoever drives the context must keep driving it after the
  // collective completed (progress/linger.h).
  std::size_t eager_bytes = 0;
  std::size_t eager_budget = 8 << 20;
  bool checksum = true;
  // Set: every datagram carries a MAC under this key (protocol/auth.h) and
  // the CRC is not used. Set it with enable_auth(), which also makes room
  // for the MAC in every datagram.
  std::optional<AuthKey> auth_key;
  common::Duration op_timeout = std::chrono::seconds(60);
  // The roots' rate where the transport cannot tell the link's
  // (DatagramTransport::link_rate_unknown); see protocol/rate_control.h.
  RateConfig rate;
  // The context's time, read once per progress call and at each start.
  // Unset: the steady clock. Tests over an in-memory fabric with a virtual
  // clock hand it that one, so loss deadlines run on the links' time.
  std::function<common::TimePoint()> clock;
};

// Datagrams a root injects per progress call when MCCL_PROTO_SEND_BATCH is
// 0 (the default): a budget in bytes, so `mtu` decides.
std::size_t default_send_batch(std::size_t mtu);

// The most roots an allgather lets inject at once under
// ProtocolConfig::incast_bytes (0: no limit): each must be able to burst
// kIncastRootDatagrams datagrams, or its pacing costs more than turns do.
inline constexpr std::size_t kIncastRootDatagrams = 8;
int incast_roots(const ProtocolConfig& c);

// Authenticates datagrams under `key`: the MAC takes kMacBytes of each
// datagram from its payload (chunk_bytes shrinks by that much).
void enable_auth(ProtocolConfig& c, const AuthKey& key);

class Context final : private transport::DatagramHandler, private transport::ReliableHandler {
 public:
  Context(int rank, int size, std::uint32_t tag,
          std::unique_ptr<transport::DatagramTransport> dgram,
          std::unique_ptr<transport::ReliableTransport> reliable, const ProtocolConfig& config);
  ~Context() override;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int left() const { return (rank_ + size_ - 1) % size_; }
  int right() const { return (rank_ + 1) % size_; }
  std::uint32_t tag() const { return tag_; }
  const ProtocolConfig& config() const { return config_; }
  Counters& counters() { return counters_; }
  const Counters& counters() const { return counters_; }

  // Gives `op` the next sequence number, starts it and replays whatever
  // arrived early for it. When the context is poisoned the op fails at once.
  void start(const std::shared_ptr<Operation>& op);
  // Polls the transports and advances every collective in flight. Never
  // blocks. Returns how many datagrams and messages it handled, so an
  // engine can tell a busy network from a quiet one.
  std::size_t progress();
  // Collectives in flight and receives not yet complete: an engine
  // notices an operation's completion by this count falling.
  bool idle() const { return active() == 0; }
  std::size_t active() const { return active_.size() + mailbox_.pending() + membership_.pending(); }
  // Descriptors that turn readable when traffic arrives (may be empty, as
  // for the in-memory fabric), for engines that sleep. A value, not a
  // vector: an engine asks for them on every wait, and a small collective's
  // wait allocated them twice (here and for its pollfd list).
  class WaitFds {
   public:
    static constexpr std::size_t kMax = 2;  // one per transport
    void add(int fd) {
      if (fd >= 0) fds_[count_++] = fd;
    }
    const int* begin() const { return fds_.data(); }
    const int* end() const { return fds_.data() + count_; }

   private:
    std::array<int, kMax> fds_{};
    std::size_t count_ = 0;
  };
  WaitFds wait_fds() const;
  // Messages wait for a connection this rank must make
  // (ReliableTransport::awaiting_connection).
  bool awaiting_connection() const { return reliable_->awaiting_connection(); }

  // For composite operations (coll/schedule.h): gives `child` the sequence
  // number and deadline of `parent`, which has been started. The child is
  // not registered: the context routes that sequence number's traffic to
  // the parent, which hands every datagram and message to the child it
  // belongs to, and drives the child from its own progress().
  void adopt(Operation& child, const Operation& parent) const {
    child.seq_ = parent.seq_;
    child.deadline_ = parent.deadline_;
    child.adopted_ = true;
  }

  // ---- for operations ----
  // Sends a control message (the tag is filled in). Counts it.
  common::Status send_control(int peer, ControlHeader h, std::span<const std::byte> body = {});
  // The same, with `body` lent to the transport (ReliableTransport::
  // send_lent) by `op`, whose memory it lies in: what the socket does not
  // take at once is written from there, not copied, and copied only if
  // still unwritten when `op` (or any operation under its sequence number)
  // finishes. `body` must stay as it is until then.
  common::Status send_control_lent(int peer, ControlHeader h, std::span<const std::byte> body,
                                   const Operation& op);
  // Sends `data` to `peer` as one point-to-point message under `tag`, in
  // segments of at most `segment_bytes` (protocol/p2p.h); to itself, it is
  // delivered at once. Never blocks: the transport copies.
  common::Status send_p2p(int peer, std::uint32_t tag, std::span<const std::byte> data,
                          std::size_t segment_bytes);
  // Multicasts `batch` (see DatagramTransport::send). `senders` roots of
  // the caller's collective inject at once and share the receivers' links
  // (DatagramTransport::share_link).
  common::Status send_datagrams(std::span<const transport::OutDatagram> batch,
                                std::size_t& accepted, unsigned senders = 1);
  // Rate from loss (protocol/rate_control.h), a no-op where the link rate
  // is known. A root injected `bytes` of collective `seq`'s stream, up to
  // chunk `next` (exclusive); `paced`: the transport refused part of the
  // batch.
  void note_injected(std::uint32_t seq, std::uint64_t next, std::uint64_t bytes, bool paced);
  // This rank asked for `count` chunks of `root`'s stream in collective
  // `seq`, from chunk `first` on: tells the root (kLossReport), at most once
  // per stall deadline per root and collective.
  void report_loss(std::uint32_t root, std::uint32_t seq, std::uint64_t signature,
                   std::uint64_t first, std::uint64_t count);
  // How this communicator's datagrams are authenticated (protocol/wire.h).
  DataAuth data_auth() const { return {mac_.get(), next_seq_, next_seq64_}; }
  // The loss deadline: silence longer than this means the rest was lost.
  // Never below the floor that late chunks taught (note_late_chunk).
  common::Duration stall_deadline() const;
  // A chunk this rank asked its left neighbour for came by multicast after
  // all, `lateness` after the request: it was late (its root, or this rank,
  // descheduled on a busy host), not lost, and the request was spent in
  // vain. Raises the deadline's floor to twice the silence that chunk needed
  // (the floor plus its lateness), at least doubling it, up to stall_max, so
  // that later collectives wait that long before asking; each collective
  // this rank then receives without a late chunk takes a sixteenth of the
  // rise back (note_no_late_chunk), down to stall_min. Measured at 32 hosts
  // on 16 cores (docs/scale.md): repairs 0.2·m per rank at the fixed 1 ms
  // floor, 0.003·m at 4 ms, same time.
  void note_late_chunk(common::Duration lateness);
  void note_no_late_chunk();
  // More datagrams were waiting than one progress call takes: whatever
  // seems missing may simply not have been read yet.
  bool backlogged() const { return backlogged_; }
  // Fails everything, now and later, and tells the neighbours. `why` by
  // value: it often lies in failed_peers_, which the reliable poll inside
  // may grow (and reallocate) before `why` is stored.
  void poison(common::Status why);
  // Poisons the context with `why` and tells every other rank still
  // connected (not only the neighbours, as poison() does), so that every
  // rank's collectives fail at once. For shrink (docs/elastic.md).
  void revoke(const common::Status& why);
  // Ranks whose connection to this one ended, ascending.
  std::vector<int> failed_peer_ranks() const;

  // ---- eager completion (context_eager.cc) ----
  // A stream the right neighbour may still ask for, copied.
  struct EagerStream {
    std::uint32_t root = 0;
    std::vector<std::byte> data;
  };
  // Whether copies of `bytes` more fit the eager budget.
  bool eager_fits(std::size_t bytes) const;
  // Keeps `streams` of collective `op` (which completes now, before its
  // right neighbour released it) and serves the neighbour's repair requests
  // from them until its kRelease, its failure or `op`'s deadline.
  void keep_for_right(const Operation& op, std::uint64_t signature,
                      std::vector<EagerStream> streams);
  // Copies still kept; any thread may ask. A communicator is destroyed
  // once this is 0 (Engine::drain), so a neighbour that lags behind is
  // still served.
  std::size_t serving() const { return eager_count_.load(std::memory_order_acquire); }
  // Bytes those copies hold (at most ProtocolConfig::eager_budget); only
  // for the thread that drives the context.
  std::size_t eager_bytes_kept() const { return eager_bytes_; }
  // Blocks: drives progress() from the calling thread, sleeping on
  // wait_fds() between calls, until serving() is 0 or `deadline` passes.
  // For whoever drives the context itself (the inline engine, the offload
  // daemon) when its communicator goes.
  void serve_until_released(common::Deadline deadline);
  const common::Status& poisoned() const { return poison_; }

 private:
  // ProtocolConfig::clock, else the steady clock.
  common::TimePoint read_clock() const { return config_.clock ? config_.clock() : common::now(); }

  // The collective the previous datagram of a batch went to (no op: not
  // an active one), so a run of one collective's datagrams costs one lookup.
  struct Route {
    std::uint32_t seq = 0;
    Operation* op = nullptr;
  };
  void on_datagrams(transport::DatagramBatch batch) override;
  void on_foreign_datagrams(std::size_t count) override;
  transport::LandingLayout landing_layout() const override;
  std::size_t landings(std::span<const std::byte> header, bool inclusive,
                       std::span<transport::Landing> out) override;
  void on_landed(std::span<const transport::LandedDatagram> batch) override;
  void on_copied_back(std::size_t bytes) override;
  void on_datagram(std::span<const std::byte> datagram, Route& route);
  // Where checking_ (this poll's batch) carries CheckBatch::kMinBytes or
  // more: checks it with the helpers, routes it in order and returns true.
  bool routed_with_helpers();
  // A datagram decode_data() checked as `check`, to its collective.
  // `datagram` is the whole of it where it lies in one piece (landed: empty;
  // then it is never kept for later, as no collective waits for it).
  void route_datagram(DataCheck check, const DataHeader& h, std::span<const std::byte> payload,
                      std::span<const std::byte> datagram, Route& route);
  void on_message(int peer, std::span<const std::byte> message) override;
  transport::MessageLanding message_landing(int peer, std::span<const std::byte> head,
                                            std::size_t length) override;
  void on_message_landed(int peer, std::span<const std::byte> head,
                         std::span<const std::byte> body) override;
  // A decoded message (landed or not) to whoever takes it. `early`: the
  // message lies there whole (landed early), kept as it is if no
  // collective takes it yet, and recycled otherwise.
  void dispatch(int peer, const ControlHeader& h, std::span<const std::byte> body,
                std::span<const std::byte> message, EarlyMessages::Message* early = nullptr);
  void on_peer_failure(int peer, const common::Status& why) override;
  friend void abandon_landings(Context& ctx, Operation& op);
  friend void reclaim_lent(Context& ctx, const Operation& op);
  // send_control() and send_control_lent(): the header encoded, the message
  // handed to the reliable transport, lent by `lender` unless 0.
  common::Status send_message(int peer, ControlHeader h, std::span<const std::byte> body,
                              std::uint64_t lender);
  void check_deadlines(common::TimePoint now);
  void start_point_to_point(const std::shared_ptr<Operation>& op, common::TimePoint now);
  // A message for collective `h.seq` that is no longer active: true when an
  // eager copy of it took the message (a repair request or the release).
  bool on_eager_message(int peer, const ControlHeader& h, std::span<const std::byte> body);
  void expire_eager(common::TimePoint now);
  void clear_eager();
  void note_arrival(common::TimePoint now);
  // Polls the transports that have work (`n` datagrams and `m` messages
  // handled) and records which must be polled next time regardless.
  void poll_transports(std::size_t& n, std::size_t& m);
  void check_failed_peers();
  // Tells `peer` that this context is poisoned with `why` (kAbort).
  void send_abort(int peer, const common::Status& why);
  void refused_by_peer(Operation& op, const ControlHeader& h, std::span<const std::byte> body);
  void on_loss_report(int peer, const ControlHeader& h, std::span<const std::byte> body);
  void apply_rate();  // hands the estimate to the transport and the counters
  void retire_finished();

  const int rank_;
  const int size_;
  const std::uint32_t tag_;
  std::unique_ptr<transport::DatagramTransport> dgram_;
  std::unique_ptr<transport::ReliableTransport> reliable_;
  // The reliable transport's poll also checks the datagram socket
  // (share_wait), so the gate is not asked: see poll_transports().
  const bool shared_wait_;
  PollGate gate_;
  // Bits of PollGate::select: transports whose last poll stopped at its
  // budget, so more is waiting.
  unsigned due_ = 0;
  ProtocolConfig config_;
  Counters counters_;

  // Point-to-point: receives and the messages they match (protocol/p2p.h),
  // and the next message number towards each peer.
  P2pMailbox mailbox_;
  std::unordered_map<int, std::uint32_t> p2p_next_to_;  // by peer sent to (none: 0)

  std::uint32_t next_seq_ = 1;
  // next_seq_ counted without wrapping: the nonces of datagram MACs.
  std::uint64_t next_seq64_ = 1;
  // Sequence numbers further ahead than this are not early but garbage.
  static constexpr std::uint32_t kFutureWindow = 1u << 16;
  std::unique_ptr<DatagramMac> mac_;
  bool warned_forgery_ = false;
  // The helpers' share of checking received batches (helper_pool.h); null
  // without helpers. checking_ is the batch's space, kept between polls.
  std::shared_ptr<CheckBatch> checker_;
  std::vector<CheckedDatagram> checking_;
  std::map<std::uint32_t, std::shared_ptr<Operation>> active_;
  // Messages being read into an operation's memory, by the peer sending
  // them (one at a time each: a connection reads in order).
  std::vector<std::pair<int, Operation*>> landings_;
  // Sequence numbers whose operations lent the transport bytes that may
  // still be queued (send_control_lent): reclaimed when one of them
  // finishes, and at destruction.
  std::vector<std::uint32_t> lent_seqs_;
  EarlyStore early_;
  EarlyMessages early_messages_;

  // Observed inter-arrival gap of datagrams (EWMA, microseconds).
  double gap_us_ = 0;
  common::Duration stall_floor_{config_.stall_min};  // raised by late chunks
  common::TimePoint last_arrival_{};
  common::TimePoint now_{};  // the time of the current progress() call

  struct EagerCopy {
    std::uint64_t signature = 0;
    std::vector<EagerStream> streams;
    std::size_t bytes = 0;
    common::TimePoint deadline{};
  };
  std::map<std::uint32_t, EagerCopy> eager_;  // by sequence number
  std::size_t eager_bytes_ = 0;
  std::atomic<std::size_t> eager_count_{0};

  // Rate from loss: on where the setting asks for it and the transport
  // cannot tell the link rate; then this rank both adapts its own rate and
  // reports its loss to the roots.
  bool adapt_rate_ = false;
  RateController rate_;
  struct LossReported {
    bool sent = false;
    std::uint32_t seq = 0;
    common::TimePoint at{};
  };
  // By root, only the roots this rank reported loss to: a vector by rank
  // cost every rank 16·N bytes (16 KiB each at 1,024 ranks) for a hint.
  std::unordered_map<std::uint32_t, LossReported> loss_reported_;

  bool in_reliable_poll_ = false;  // reliable_->poll() is running: poison() must not re-enter it
  bool seeking_abort_ = false;     // poison() reads only kAbort messages
  common::Status poison_;
  // Peers whose connection ended, and why; fatal once a collective needs one.
  std::vector<std::pair<int, common::Status>> failed_peers_;
  bool in_progress_ = false;
  bool backlogged_ = false;
  // Shrink's exchanges (membership.h), which run on a poisoned context.
  Membership membership_{*this};
};

// One Context::progress() call; returns what it received, plus one when
// this rank sent data (multicast datagrams, repairs served, point-to-point
// payload), so that whoever sleeps after a quiet pass treats sending as
// activity too: a root that only injects receives nothing, yet must not
// sleep between batches (a 1 ms sleep after each batch capped the offload
// daemon's unpaced loopback broadcast at 3 Gbit/s).
std::size_t progress_counting_sends(Context& ctx);

}  // namespace mccl::protocol
