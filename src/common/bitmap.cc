#include "common/bitmap.h"

#include <algorithm>
#include <bit>

namespace mccl::common {

void Bitmap::resize(std::size_t bits) {
  bits_ = bits;
  ones_ = 0;
  words_.assign((bits + 63) / 64, 0);
}

bool Bitmap::set(std::size_t i) {
  std::uint64_t mask = std::uint64_t{1} << (i & 63);
  std::uint64_t& w = words_[i >> 6];
  if (w & mask) return false;
  w |= mask;
  ++ones_;
  return true;
}

bool Bitmap::reset(std::size_t i) {
  std::uint64_t mask = std::uint64_t{1} << (i & 63);
  std::uint64_t& w = words_[i >> 6];
  if (!(w & mask)) return false;
  w &= ~mask;
  --ones_;
  return true;
}

void Bitmap::set_all() {
  std::fill(words_.begin(), words_.end(), ~std::uint64_t{0});
  if (bits_ & 63) words_.back() = (std::uint64_t{1} << (bits_ & 63)) - 1;
  ones_ = bits_;
}

std::size_t Bitmap::find_zero(std::size_t from) const {
  if (from >= bits_) return bits_;
  std::size_t w = from >> 6;
  // Bits below `from` in the first word count as set so they are skipped.
  std::uint64_t inv = ~words_[w] & (~std::uint64_t{0} << (from & 63));
  while (true) {
    if (inv != 0) return std::min(bits_, (w << 6) + std::countr_zero(inv));
    if (++w >= words_.size()) return bits_;
    inv = ~words_[w];
  }
}

std::size_t Bitmap::find_one(std::size_t from) const {
  if (from >= bits_) return bits_;
  std::size_t w = from >> 6;
  std::uint64_t cur = words_[w] & (~std::uint64_t{0} << (from & 63));
  while (true) {
    if (cur != 0) return std::min(bits_, (w << 6) + std::countr_zero(cur));
    if (++w >= words_.size()) return bits_;
    cur = words_[w];
  }
}

BitRange Bitmap::next_gap(std::size_t from, std::size_t limit) const {
  limit = std::min(limit, bits_);
  std::size_t b = find_zero(from);
  if (b >= limit) return {};
  std::size_t e = std::min(find_one(b), limit);
  return {b, e};
}

}  // namespace mccl::common
