// The digest of a collective's arguments that every rank must agree on
// (kind, root, per-rank sizes; for reductions also the datatype, the op and
// the algorithm). It travels in every control message, so two
// neighbours that disagree find out at their first exchange.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/hash.h"

namespace mccl::coll {

enum class CollKind : std::uint64_t {
  kBroadcast = 1,
  kAllgather = 2,
  kBarrier = 3,
  kReduceScatter = 4,
  kAllreduce = 5,
  kAlltoall = 6,
};

class Signature {
 public:
  explicit Signature(CollKind kind) { mix(static_cast<std::uint64_t>(kind)); }
  Signature& mix(std::uint64_t v) {
    h_.add(v);  // FNV-1a over the value's bytes, then a final avalanche in value()
    return *this;
  }
  Signature& mix(std::span<const std::size_t> values) {
    mix(values.size());
    for (auto v : values) mix(v);
    return *this;
  }
  std::uint64_t value() const {
    std::uint64_t x = h_.value();
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
  }

 private:
  common::Fnv1a64 h_;
};

}  // namespace mccl::coll
