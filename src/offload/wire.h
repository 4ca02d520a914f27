// The offload wire: what the application process (client) and the offload
// daemon (mccl_offloadd) exchange. Two channels:
//
//  - a unix stream socket for setup and liveness: framed messages (Hello
//    with three descriptors, the relayed bootstrap allgathers, Ready). After
//    Ready: shared-buffer (un)registrations, each with a memfd, answered
//    while the client waits, a revoke, a shrink (answered when the
//    survivors' communicator exists), and the client's Bye; EOF without a Bye means
//    the other side died, which is how either side detects death.
//  - a shared-memory region (a memfd made by the client, passed with
//    SCM_RIGHTS) holding two single-producer single-consumer rings:
//    submissions (client -> daemon) and completions (daemon -> client), each
//    with an eventfd that the producer writes after a push, so the consumer
//    sleeps instead of spinning.
//
// A submission carries addresses in the client's address space; the daemon
// moves the bytes with process_vm_readv/process_vm_writev, the host-process
// analogue of a SmartNIC's DMA into host memory. All fields are fixed-width
// so a daemon built for another architecture reads the same layout.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "common/coll_config.h"
#include "common/status.h"

namespace mccl::offload {

inline constexpr std::uint32_t kMagic = 0x4d43'4f46;  // "MCOF"
inline constexpr std::uint32_t kVersion = 8;

enum class MsgType : std::uint32_t {
  kHello = 1,            // client -> daemon, with fds: memfd, submit eventfd, complete eventfd
  kAllgather = 2,        // daemon -> client: allgather these bytes through your bootstrap
  kAllgatherResult = 3,  // client -> daemon: the result (or kAllgatherFailed)
  kAllgatherFailed = 4,  // client -> daemon: the message
  kReady = 5,            // daemon -> client: ReadyMsg + message
  kBye = 6,              // client -> daemon: orderly close (EOF without it = a crash)
  kRegister = 7,         // client -> daemon, with a memfd: RegionMsg (zero-copy buffer)
  kRegistered = 8,       // daemon -> client: i32 ErrorCode, then a message
  kUnregister = 9,       // client -> daemon: RegionMsg (no answer)
  kRevoke = 10,          // client -> daemon: revoke the communicator (no answer)
  kShrink = 11,          // client -> daemon: shrink it (docs/elastic.md), answered by kShrunk
  kShrunk = 12,          // daemon -> client: ShrunkMsg, the failed ranks (i32 each), a message
};

// The application's resolved collective choices (coll::CollConfig), so the
// daemon runs the algorithms the inline and thread engines would. Enums as
// their numeric values; the defaults are coll::CollConfig's.
struct CollChoices {
  common::CollConfig coll;         // as the client resolved it, whole
  std::int32_t authenticate = -1;  // CommOptions::authenticate: -1 unset, 0 off, 1 on
  // ResolvedOptions::setup_timeout (> 0); 0: the communicator's whole
  // timeout (the daemon reads no setting of its own for a client).
  std::int32_t setup_timeout_ms = 0;
};

struct HelloMsg {
  std::uint32_t magic = kMagic;
  std::uint32_t version = kVersion;
  std::int32_t pid = 0;
  std::int32_t rank = 0;
  std::int32_t size = 0;
  std::uint32_t ring_slots = 0;
  std::int64_t timeout_ms = 0;
  CollChoices coll;
  // The client's MCCL_UDP_IFACE, NUL-terminated; empty: not set (the
  // daemon's own setting applies). A rank-local choice, so it travels with
  // the rank: a daemon started by another rank would not see it.
  char udp_iface[64] = {};
  std::uint32_t epoch = 0;  // the membership epoch the client proposes (setup::Proposal)
  std::uint32_t pad = 0;
};

// A shared buffer: where the client mapped it and how long it is.
struct RegionMsg {
  std::uint64_t addr = 0;
  std::uint64_t bytes = 0;
};

// The outcome of a shrink: on success the session's communicator is the
// survivors' (this rank is `rank` of `size` there) and `failed` old ranks
// follow; on failure none follow, and the message says why.
struct ShrunkMsg {
  std::int32_t code = 0;  // mccl::ErrorCode
  std::int32_t rank = 0;
  std::int32_t size = 0;
  std::uint32_t failed = 0;
  std::uint32_t epoch = 0;      // the survivors' communicator's
  common::Placement placement;  // the survivors' (setup::Agreement)
};

struct ReadyMsg {
  std::int32_t code = 0;  // mccl::ErrorCode
  std::int32_t daemon_pid = 0;
  std::uint32_t epoch = 0;      // the communicator's, as the ranks agreed
  common::Placement placement;  // as the ranks agreed (setup::Agreement)
};

enum class OpKind : std::uint32_t {
  kBroadcast = 1,
  kAllgatherv = 2,
  kBarrier = 3,
  kReduceScatterv = 4,  // counts (elements) as for allgatherv; displs unused
  kAllreduce = 5,       // `bytes` holds the element count
  kStats = 6,           // not a collective: mccl::Stats written to `buffer` at once
};

struct Submission {
  std::uint64_t id = 0;
  std::uint32_t kind = 0;  // OpKind
  std::int32_t root = 0;
  std::uint64_t buffer = 0;  // broadcast buffer / allgatherv, reduce recv
  std::uint64_t bytes = 0;   // broadcast bytes
  std::uint64_t send = 0;    // allgatherv send (ignored when in_place)
  std::uint64_t counts = 0;  // allgatherv: size() uint64 counts in client memory
  std::uint64_t displs = 0;  // allgatherv: size() uint64 displacements in client memory
  std::uint32_t in_place = 0;
  std::uint32_t dtype = 0;  // mccl::DataType (reductions)
  std::uint32_t redop = 0;  // mccl::ReduceOp (reductions)
  std::uint32_t pad = 0;
};

struct Completion {
  std::uint64_t id = 0;
  std::int32_t code = 0;  // mccl::ErrorCode
  std::uint32_t length = 0;
  char message[496] = {};
};

// Single producer, single consumer, in memory shared between processes.
struct RingHeader {
  alignas(64) std::atomic<std::uint64_t> head;  // written by the producer
  alignas(64) std::atomic<std::uint64_t> tail;  // written by the consumer
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
// Fixed layouts: a daemon built for another architecture (aarch64 on a
// SmartNIC) must read what an x86-64 client wrote.
static_assert(std::is_trivially_copyable_v<common::CollConfig>);
static_assert(sizeof(common::CollConfig) == 80);
static_assert(sizeof(CollChoices) == 88);
static_assert(sizeof(HelloMsg) == 192);
static_assert(sizeof(ShrunkMsg) == 28);
static_assert(sizeof(ReadyMsg) == 20);
static_assert(sizeof(Submission) == 72);
static_assert(sizeof(Completion) == 512);

// What a pop found. kOverrun: the producer's head is more than the ring's
// slots ahead of the tail (or behind it), which no correct producer does;
// nothing was taken. The other process writes both heads and tails at
// will, so a consumer must not trust the head to say how much to pop.
enum class RingPop { kEmpty, kTaken, kOverrun };

// The memfd: [RingHeader sub][RingHeader comp][Submission x n][Completion x n].
class SharedRings {
 public:
  static std::size_t bytes_for(std::uint32_t slots);
  // `base` is mapped and bytes_for(slots) long; `init` zeroes the heads.
  SharedRings(void* base, std::uint32_t slots, bool init);

  bool push_submission(const Submission& s);
  RingPop pop_submission(Submission& s);
  bool push_completion(const Completion& c);
  // An overrun completion ring (a daemon that broke the protocol) reads as
  // empty: the client's waits then end at their deadlines.
  bool pop_completion(Completion& c);
  std::uint32_t slots() const { return slots_; }

 private:
  RingHeader* sub_;
  RingHeader* comp_;
  Submission* subs_;
  Completion* comps_;
  std::uint32_t slots_;
};

// Framed messages on the unix socket: {u32 type, u32 length, bytes}, with
// up to three descriptors attached to the first byte of a frame.
common::Status send_msg(int sock, MsgType type, std::span<const std::byte> body,
                        std::span<const int> fds = {});
// The longest status message a kReady, kRegistered or kAllgatherFailed
// carries (a creation failure names every failing rank and its reason);
// senders cut longer ones.
inline constexpr std::size_t kMaxTextBytes = std::size_t{1} << 20;
// The longest body a message of `type` can need (0 for an unknown type):
// its fixed layout, a status message, or a relayed bootstrap exchange.
std::size_t max_body_bytes(MsgType type);
// recv_msg's timeout while a communicator is created: the other side may
// spend the whole collective timeout on the setup, and then some. Capped
// before adding, so a timeout of INT64_MAX ms does not wrap.
int setup_answer_timeout_ms(std::int64_t collective_timeout_ms);
// recv_msg's timeout for a shrink's answer: the daemon may agree and create
// several times, each exchange within the collective timeout. A daemon
// that dies ends the wait at once (EOF).
int shrink_answer_timeout_ms(std::int64_t collective_timeout_ms);
// Blocks at most `timeout_ms` for the whole message (-1: forever).
// kPeerFailure on EOF, kTimeout when nothing complete arrived in time. A
// frame claiming more than max_body_bytes(type) is refused (kInternal)
// before its body is read; the body grows as its bytes arrive, never to
// the length claimed. At most three descriptors per message go to `fds`;
// any beyond are closed.
common::Status recv_msg(int sock, MsgType& type, std::vector<std::byte>& body,
                        std::vector<int>* fds, int timeout_ms);

Completion make_completion(std::uint64_t id, const common::Status& st);
common::Status completion_status(const Completion& c);

}  // namespace mccl::offload
