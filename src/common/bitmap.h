// A fixed-size bitmap with fast gap search: which chunks of a stream have
// arrived, which were asked for, which a peer still wants.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mccl::common {

// A half-open range of bit indices [begin, end).
struct BitRange {
  std::size_t begin = 0;
  std::size_t end = 0;
  bool empty() const { return begin >= end; }
  std::size_t size() const { return end - begin; }
};

class Bitmap {
 public:
  Bitmap() = default;
  explicit Bitmap(std::size_t bits) { resize(bits); }

  // Clears every bit and sets the size.
  void resize(std::size_t bits);
  std::size_t size() const { return bits_; }
  std::size_t count() const { return ones_; }
  bool all() const { return ones_ == bits_; }
  bool none() const { return ones_ == 0; }

  bool test(std::size_t i) const { return (words_[i >> 6] >> (i & 63)) & 1u; }
  // Returns true when the bit was clear before (the chunk is new).
  bool set(std::size_t i);
  bool reset(std::size_t i);
  void set_all();

  // First clear bit at or after `from`, or size() when none.
  std::size_t find_zero(std::size_t from) const;
  // First set bit at or after `from`, or size() when none.
  std::size_t find_one(std::size_t from) const;
  // The first run of clear bits starting at or after `from` and ending at or
  // before `limit` (clamped to size()); empty when there is none.
  BitRange next_gap(std::size_t from, std::size_t limit) const;

 private:
  std::size_t bits_ = 0;
  std::size_t ones_ = 0;
  std::vector<std::uint64_t> words_;
};

}  // namespace mccl::common
