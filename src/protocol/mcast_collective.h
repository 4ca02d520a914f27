// The reliable multicast collective: one or more roots' streams under one
// sequence number. A broadcast is one stream; an allgather(v) is one stream
// per rank, with at most `concurrent_roots` roots injecting at once (0: as
// many as the incast budget, ProtocolConfig::incast_bytes, allows).
//
// The protocol (docs/wire-protocol.md has the diagrams):
// - A root injects its stream as MTU-sized datagrams on the group, at its
//   share of the link rate: k roots injecting at once each get 1/k of it
//   (1/(N-1) when all N ranks inject), so together they fill, and do not
//   overrun, every receiver's link.
// - Every rank repairs only from its left ring neighbour, which for any
//   stream sits one step closer to that stream's root (the root itself has
//   everything). Requests are sent as soon as loss is suspected; the left
//   neighbour serves what it has and remembers the rest until it arrives.
// - When a rank holds every byte (and has injected its own stream) it sends
//   kHave to its right neighbour (a hint: ask for whatever you miss now) and
//   kRelease to its left neighbour (I will ask you for nothing more).
// - A rank completes when it holds everything and its right neighbour has
//   released it, so its buffer is no longer needed for repairs; or, for a
//   small collective, as soon as it holds everything, leaving a copy of
//   what the neighbour may still ask for with the context, which serves the
//   neighbour from it until the release (eager completion).
// Without loss each rank sends at most two control messages, whatever N is.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "protocol/operation.h"
#include "protocol/seal_ahead.h"
#include "protocol/stream.h"
#include "transport/datagram.h"

namespace mccl::protocol {

struct McastSpec {
  std::string what;                 // for messages, e.g. "broadcast of 10 bytes from root 0"
  std::uint64_t signature = 0;      // digest of the arguments every rank must agree on
  std::vector<StreamSpec> streams;  // distinct roots, ascending
  // 0: as many as ProtocolConfig::incast_bytes allows (all where that is
  // 0), spread evenly over the turns; >= streams.size(): all at once.
  int concurrent_roots = 0;
  // Called once per stream as soon as every byte of it is held here (this
  // rank's own at start), on the engine's thread; an error fails the
  // collective. Lets a caller work on a stream (decode it) while the
  // others still arrive. Empty: nothing to call.
  std::function<common::Status(int root)> on_stream_complete;
  // Called as the part of a stream held from its first byte on, without a
  // gap, grows: `bytes` of it are here and final (this rank's own stream:
  // all of it, at start), on the engine's thread, before
  // on_stream_complete for the same stream; an error fails the collective.
  // Lets a caller decode a stream while it arrives. Empty: nothing to call.
  std::function<common::Status(int root, std::uint64_t bytes)> on_stream_prefix;
  // This rank's own stream, where its bytes are not in place at start (an
  // offload daemon copies them in from its client): called on the engine's
  // thread with consecutive ranges, from byte 0 on, each before any byte of
  // it is read, so the copy runs just ahead of the injection instead of
  // before all of it; an error fails the collective. The helpers do not
  // seal such a stream ahead (they would read bytes not yet there). Empty:
  // the bytes are in place at start.
  std::function<common::Status(std::uint64_t begin, std::uint64_t end)> fill_own;
};

class McastCollective final : public Operation {
 public:
  McastCollective(Context& ctx, McastSpec spec);
  ~McastCollective() override;

  std::string describe() const override { return spec_.what; }
  std::string describe_wait() const override;
  void on_start(common::TimePoint now) override;
  void on_datagram(const DataHeader& h, std::span<const std::byte> payload,
                   common::TimePoint now) override;
  // The chunks of `root`'s stream from `first` on that are still missing,
  // up to the first one held: the root sends them in order.
  std::size_t landings(std::uint32_t root, std::uint64_t first,
                       std::span<transport::Landing> out) override;
  void on_control(int peer, const ControlHeader& h, std::span<const std::byte> body,
                  common::TimePoint now) override;
  void progress(common::TimePoint now) override;
  bool needs(int peer) const override;
  std::uint64_t moved_bytes() const override;  // every stream's bytes together
  void stop_helpers() override;                // the sealing helpers leave own_'s bytes

 private:
  std::size_t header_bytes() const;  // of this communicator's datagrams
  Stream* stream_of(std::uint32_t root);
  bool injection_allowed(common::TimePoint now);
  void inject(common::TimePoint now);
  // The header every datagram of own_ carries, but for its chunk's index
  // and length.
  DataHeader own_header() const;
  // Hands the sealing of own_'s datagrams to the process's helpers
  // (ProtocolConfig::helper_threads), where the stream is long enough.
  void start_sealing();
  // Has spec_.fill_own make own_'s bytes valid through `end`, a step ahead
  // where the stream is longer, before they are sent or served; false when
  // the collective is finished (a fill failed: finished with its error).
  bool fill_own_through(std::uint64_t end);
  // How far fill_own runs ahead of the injection: a few batches, and little
  // enough to stay in a core's cache until they are sent.
  static constexpr std::uint64_t kFillAheadBytes = 256 * 1024;
  // Loss and repair (mcast_collective_repair.cc).
  void detect_loss(common::TimePoint now);
  // At most this many chunks (or 2% of all) missing count as "a few" for
  // detect_loss's short deadline.
  static constexpr std::uint64_t kFewChunks = 8;
  bool few_missing() const;
  void request_missing(Stream& s, std::uint64_t begin, std::uint64_t end, common::TimePoint now);
  void on_repair_request(const ControlHeader& h, std::span<const std::byte> body);
  void on_repair_data(const ControlHeader& h, std::span<const std::byte> body,
                      common::TimePoint now);
  void serve(Stream& s, std::uint64_t begin, std::uint64_t end);
  void serve_deferred();

  // Calls spec_.on_stream_prefix for `s` when the part held from its start
  // grew, and spec_.on_stream_complete once it is complete.
  void note_progress(Stream& s);

  bool holds_everything() const;
  // Holds everything, the right neighbour has not released it yet: leave a
  // copy of what it may ask for with the context and complete now, where
  // the copy is small enough (ProtocolConfig::eager_bytes, eager_budget).
  bool complete_eagerly();
  // Completes with success and publishes the steps' times (Stats::last_mcast).
  void complete(common::TimePoint now);
  void mismatch(const std::string& detail);
  void send(ControlKind kind, int peer);

  McastSpec spec_;
  std::vector<Stream> streams_;
  std::vector<bool> announced_;        // by stream: on_stream_complete was called
  std::vector<std::uint64_t> prefix_;  // by stream: chunks held from chunk 0 without a gap
  std::vector<int> stream_index_;      // by root; -1 when the root has no stream here
  Stream* own_ = nullptr;              // this rank's stream, if it is a root

  bool pull_from_left_ = false;  // some stream is not ours: repairs come from the left
  bool right_pulls_ = false;     // the right neighbour may repair from us
  bool injection_open_ = false;
  bool left_has_all_ = false;
  bool right_released_ = false;
  bool sent_have_ = false;
  bool sent_release_ = false;
  bool deferred_ready_ = false;  // a chunk someone waits for may have arrived
  bool late_chunk_ = false;      // a chunk asked for came by multicast too (told once)
  unsigned senders_ = 1;         // roots sharing each receiver's link (set once)
  int turns_ = 0;                // roots injecting at once; 0: all of them
  int latest_ended_ = -1;        // the last stream (index) whose last chunk arrived here
  common::TimePoint start_{};
  common::TimePoint last_activity_{};
  // When each step happened here (McastTimeline); TimePoint{}: not yet.
  struct Steps {
    common::TimePoint first_sent, last_sent, first_arrival, last_arrival, held, released;
  } steps_;
  std::vector<std::byte> headers_;  // encode space for one injection batch
  // headers_ holds the encoded headers of own_'s chunks [encoded_first_,
  // encoded_first_ + encoded_count_), from the last injection call.
  std::uint64_t encoded_first_ = 0;
  std::size_t encoded_count_ = 0;
  std::vector<transport::OutDatagram> batch_;
  // own_'s headers sealed ahead by helpers while it injects; null: none.
  std::shared_ptr<SealJob> seal_;
  std::uint64_t filled_ = 0;  // own_'s bytes spec_.fill_own made valid
};

}  // namespace mccl::protocol
