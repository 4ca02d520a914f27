// The fabric's fault decisions. Every decision is a pure hash of who sent
// what to whom, never a draw from a shared generator: a shared generator
// would make the faults depend on which thread got there first, and a test
// that names its seed must see the same faults on every run.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/hash.h"

namespace mccl::transport::sim {

enum class FaultKind : std::uint64_t {
  kLoss = 1,
  kDuplicate = 2,
  kReorder = 3,
  kCorrupt = 4,
  kReorderDelay = 5,
  kCorruptPosition = 6,
  kCorruptMask = 7,
};

// Sender id of datagrams injected by Fabric::inject: no rank can have it.
inline constexpr int kStrangerRank = -1;

// Names one (datagram, receiver) pair; the kind is mixed in last so each
// kind of fault is an independent coin.
struct FaultKey {
  std::uint64_t seed;
  std::uint64_t group;
  int sender;
  std::uint64_t counter;  // the sender's datagram number in this group
  int receiver;
};

inline std::uint64_t fault_hash(const FaultKey& k, FaultKind kind) {
  std::uint64_t h = common::splitmix64(k.seed);
  h = common::splitmix64(h ^ k.group);
  h = common::splitmix64(h ^ static_cast<std::uint32_t>(k.sender));
  h = common::splitmix64(h ^ k.counter);
  h = common::splitmix64(h ^ static_cast<std::uint32_t>(k.receiver));
  return common::splitmix64(h ^ static_cast<std::uint64_t>(kind));
}

// True with probability `p`, decided by the top 53 bits of the hash.
inline bool fault_happens(const FaultKey& k, FaultKind kind, double p) {
  if (p <= 0.0) return false;
  if (p >= 1.0) return true;
  double u = static_cast<double>(fault_hash(k, kind) >> 11) * 0x1.0p-53;
  return u < p;
}

// How long a reordered datagram is held back: 20 to 200 microseconds, long
// enough for datagrams sent after it to overtake it.
inline std::chrono::nanoseconds reorder_delay(const FaultKey& k) {
  constexpr std::uint64_t kMinNs = 20'000;
  constexpr std::uint64_t kSpanNs = 180'000;
  return std::chrono::nanoseconds(kMinNs + fault_hash(k, FaultKind::kReorderDelay) % kSpanNs);
}

}  // namespace mccl::transport::sim
