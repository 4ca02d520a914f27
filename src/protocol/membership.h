// What the survivors of a communicator exchange to shrink it
// (docs/elastic.md): an agreement on the set of failed ranks, then the
// exchanges that create the survivors' communicator (setup/bring_up.h), all
// over the old communicator's reliable transport, rank to rank. No rank
// coordinates, so none (rank 0 included) needs to be alive.
//
// These operations run on a revoked (poisoned) context: they take no
// collective sequence number, their messages (kMembership) are routed by
// the exchange number every survivor gives them in the same order, and a
// peer's failure is news to them, not an error of the communicator.
//
// Threading: everything here runs on the progress engine's thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "protocol/operation.h"
#include "protocol/wire.h"

namespace mccl::protocol {

// The handlers each exchange of MembershipOp writes for itself, declared in
// one place as MCCL_OPERATION_HANDLERS (operation.h) declares a collective's.
#define MCCL_MEMBERSHIP_HANDLERS                                                            \
  std::string describe_wait() const override;                                               \
  void on_start(common::TimePoint now) override;                                            \
  void on_member_message(int peer, const ControlHeader& h, std::span<const std::byte> body) \
      override;                                                                             \
  void on_peer_failure(int peer) override;                                                  \
  void progress(common::TimePoint now) override

class MembershipOp : public Operation {
 public:
  // `attempt`: which try of a shrink this operation belongs to (from 1),
  // the same on every survivor. A death can end one survivor's try an
  // exchange earlier than another's; numbering each try's exchanges
  // afresh keeps the next try aligned, and a late message of an earlier
  // try is dropped, never taken for one of this try.
  MembershipOp(Context& ctx, std::uint32_t attempt) : Operation(ctx), attempt_(attempt) {}
  bool membership() const final { return true; }
  std::uint32_t attempt() const { return attempt_; }
  std::uint32_t exchange() const { return exchange_; }
  // Whether every survivor runs this operation, in the same order: then it
  // takes the next exchange number. One that involves no other rank does not.
  virtual bool numbered() const { return true; }
  // A kMembership message of this exchange from `peer`.
  virtual void on_member_message(int peer, const ControlHeader& h,
                                 std::span<const std::byte> body) = 0;
  // `peer`'s connection ended; it will send nothing more.
  virtual void on_peer_failure(int peer) = 0;

  // Unused: membership traffic comes through on_member_message.
  void on_datagram(const DataHeader&, std::span<const std::byte>, common::TimePoint) override {}
  void on_control(int, const ControlHeader&, std::span<const std::byte>,
                  common::TimePoint) override {}
  bool needs(int) const override { return false; }
  bool latency_bound() const override { return true; }

 protected:
  // Sends this exchange's message to `peer`; false when the peer is gone.
  bool send_to(int peer, std::uint32_t round, std::uint32_t flags, std::span<const std::byte> body);

 private:
  friend class Membership;
  std::uint32_t attempt_;
  std::uint32_t exchange_ = 0;
  common::TimePoint due_{};  // the exchange fails with kTimeout after this
};

// Revokes the communicator (Context::revoke) on the engine's thread, and
// is done.
class Revoke final : public MembershipOp {
 public:
  explicit Revoke(Context& ctx) : MembershipOp(ctx, 0) {}
  bool numbered() const override { return false; }
  std::string describe() const override { return "revoke"; }
  std::string describe_wait() const override { return "nothing"; }
  void on_start(common::TimePoint now) override;
  void on_member_message(int, const ControlHeader&, std::span<const std::byte>) override {}
  void on_peer_failure(int) override {}
  void progress(common::TimePoint) override {}
};

// Agrees with every other survivor on the ranks that failed. Each rank
// sends its set to every rank it believes alive, round after round, adding
// what it hears and the failures it sees, until a round in which every set
// it heard equals its own: it has decided, tells the others so (they adopt
// the decision) and finishes. Every survivor that finishes returns the
// same set. A rank that dies after a decision may be missing from it: the
// creation that follows fails on it, and the caller agrees again.
class AgreeOnFailed final : public MembershipOp {
 public:
  // `failed` receives the agreed ranks, ascending, once done.
  AgreeOnFailed(Context& ctx, std::uint32_t attempt, std::vector<int>& failed);
  std::string describe() const override { return "the agreement on failed ranks (shrink)"; }
  MCCL_MEMBERSHIP_HANDLERS;

 private:
  using Set = std::vector<std::uint8_t>;  // a bit per rank
  bool has(const Set& s, int r) const { return (s[r / 8] >> (r % 8)) & 1; }
  void add(Set& s, int r) const { s[r / 8] |= static_cast<std::uint8_t>(1u << (r % 8)); }
  void send_round(std::uint32_t flags);
  void decide(const Set& s);

  std::vector<int>& out_;
  int size_;
  int rank_;
  Set failed_;
  std::uint32_t round_ = 0;
  bool changed_ = false;                               // failed_ grew during this round
  std::map<std::uint32_t, std::map<int, Set>> heard_;  // round -> peer -> its set
};

// An allgather of equal-sized contributions among `members` (ranks of this
// communicator, ascending, this rank among them): the out-of-band exchange
// that creates the survivors' communicator. Fails with kPeerFailure naming
// a member that dies before it contributed, kMismatch on a size mismatch.
class SurvivorExchange final : public MembershipOp {
 public:
  SurvivorExchange(Context& ctx, std::uint32_t attempt, std::vector<int> members,
                   std::span<const std::byte> mine, std::vector<std::byte>& out);
  std::string describe() const override { return "a creation exchange among the survivors"; }
  MCCL_MEMBERSHIP_HANDLERS;

 private:
  std::vector<int> members_;
  std::vector<std::byte> mine_;
  std::vector<std::byte>& out_;
  std::map<int, std::vector<std::byte>> got_;
};

// The context's membership operations and the messages that came before
// their exchange started here.
class Membership {
 public:
  explicit Membership(Context& ctx) : ctx_(ctx) {}
  // Gives `op` the next exchange number of its attempt (attempt << 16, plus
  // its place in the attempt) and its deadline, starts it and replays what
  // arrived early for it.
  void start(const std::shared_ptr<MembershipOp>& op, common::TimePoint now);
  void on_message(int peer, const ControlHeader& h, std::span<const std::byte> body);
  void on_peer_failure(int peer);
  // Deadlines; retires finished operations.
  void progress(common::TimePoint now);
  std::size_t pending() const { return ops_.size(); }

 private:
  struct Early {
    int peer;
    ControlHeader h;
    std::vector<std::byte> body;
  };
  // Early messages kept in all: a peer runs at most a few exchanges ahead
  // of this rank (each needs this rank's part), so more means a bug or
  // someone else's traffic.
  static constexpr std::size_t kMaxEarly = 4096;
  Context& ctx_;
  std::map<std::uint32_t, std::shared_ptr<MembershipOp>> ops_;
  std::map<std::uint32_t, std::vector<Early>> early_;
  std::size_t early_count_ = 0;
  std::uint32_t next_ = 1;  // the next exchange number; lower ones are over
};

}  // namespace mccl::protocol
