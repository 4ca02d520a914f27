// A root's datagram headers sealed ahead of its sends by the helper
// threads (helper_pool.h, MCCL_PROTO_HELPER_THREADS). Sealing a header
// (its MAC, or its CRC where there is none) is the one pass over the
// payload a root makes besides the kernel's copy, and about a quarter of
// its time (docs/benchmarks.md, "The MAC's loop, helper threads for the
// per-byte passes"). It depends on nothing but the chunk (a chunk's header
// never changes), so helpers on other cores can seal the chunks the root
// sends next while it sends: the root's core is then left with the send.
//
// The root never waits for a helper: a chunk whose header is not sealed
// when the root reaches it is sealed by the root itself, as without
// helpers, and no helper starts on it afterwards. The datagrams are the
// same bytes either way.
//
// Helpers seal ranges of kRangeChunks chunks into a ring that holds
// kWindowRanges ranges: at most that far ahead of the root, so the ring's
// memory does not grow with the message.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "protocol/helper_pool.h"
#include "protocol/wire.h"

namespace mccl::protocol {

// What a helper needs to seal any chunk of one root's stream.
struct SealPlan {
  // The stream's (total_bytes and chunk_bytes give its chunks);
  // chunk_index and payload_len are set per chunk.
  DataHeader header;
  const std::byte* data = nullptr;  // the stream's bytes: read by helpers until stop()
  std::size_t header_bytes = 0;     // of one datagram, the tag included
  bool checksum = false;
  DataAuth auth;  // its lane is ignored: helper i seals with lane i + 1
};

class SealJob final : public HelperJob {
 public:
  static constexpr std::uint64_t kRangeChunks = 16;
  static constexpr std::uint64_t kWindowRanges = 32;
  // A shorter stream is sealed by its root: posting a job and waking a
  // helper cost more than a few ranges' tags.
  static constexpr std::uint64_t kMinChunks = 8 * kRangeChunks;

  explicit SealJob(const SealPlan& plan);
  SealJob(const SealJob&) = delete;
  SealJob& operator=(const SealJob&) = delete;

  // The root's side, from one thread. Copies chunk `c`'s sealed header to
  // `out` (header_bytes) and returns true where a helper sealed it;
  // otherwise returns false, and no helper starts on `c`'s range later.
  // The root takes chunks in ascending order.
  bool take(std::uint64_t c, std::byte* out);
  // The root has taken every header it needs below chunk `next`: the window
  // moves on.
  void advance(std::uint64_t next);
  // Once it returns, no helper reads the stream's bytes or this job again.
  // Waits at most for the ranges helpers are sealing right now.
  void stop();

  // The helpers' side: one range sealed with the MAC lane `lane`.
  bool work(unsigned lane) override;
  // Stopped, or every range claimed.
  bool finished() const override;
  // How many ranges helpers sealed (tests, statistics).
  std::uint64_t sealed_ranges() const { return sealed_.load(std::memory_order_relaxed); }

 private:
  // A slot's owner word: the range it holds plus one (0: none yet), with
  // kWriting set while a helper fills it.
  static constexpr std::uint64_t kWriting = std::uint64_t{1} << 63;

  bool claim(std::uint64_t& range);
  void seal(std::uint64_t range, unsigned lane);
  std::byte* slot(std::uint64_t range) {
    return ring_.data() + (range % kWindowRanges) * kRangeChunks * plan_.header_bytes;
  }

  const SealPlan plan_;
  // The MAC's lanes, read once: a stopped job's MAC may be gone while a
  // helper still looks at the job.
  const unsigned lanes_;
  const std::uint64_t chunks_;
  const std::uint64_t ranges_;
  std::vector<std::byte> ring_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> owner_;  // by slot
  std::atomic<std::uint64_t> next_range_{0};             // the next range a helper may claim
  std::atomic<std::uint64_t> root_range_{0};             // ranges below it are the root's past
  std::atomic<int> busy_{0};                             // helpers inside work()
  std::atomic<bool> stopped_{false};
  std::atomic<std::uint64_t> sealed_{0};
};

}  // namespace mccl::protocol
