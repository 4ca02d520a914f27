#include "coll/algorithm_text.h"

#include <functional>

namespace mccl::coll {

namespace {

// Sizes up to this are described; past it every row of the tables is
// multicast (or the chain and the ring without it), but the rows that say
// kNeverMulticast, whose point-to-point algorithm serves every size.
constexpr std::size_t kLargest = std::size_t{1} << 30;

// The sizes at which `choose` changes its answer, found by doubling and
// then bisecting (each choice is a step function of the size), written as
// "a below X, b below Y, c from Y". Two changes within one doubling would
// show as one; the table's steps are at least a factor of 2 apart.
template <class Algorithm>
std::string describe(const std::function<Algorithm(std::size_t)>& choose) {
  std::string out;
  Algorithm current = choose(0);
  std::size_t low = 0;  // current serves [low, ...)
  for (std::size_t probe = 1; probe <= kLargest; probe *= 2) {
    if (choose(probe) == current) continue;
    // The first size in (probe / 2, probe] whose answer differs.
    std::size_t lo = probe / 2;
    std::size_t hi = probe;
    while (hi - lo > 1) {
      const std::size_t mid = lo + (hi - lo) / 2;
      (choose(mid) == current ? lo : hi) = mid;
    }
    out += std::string(algorithm_name(current)) + " below " + size_text(hi) + ", ";
    current = choose(hi);
    low = hi;
    probe = hi;  // doubling goes on from the change
  }
  out += algorithm_name(current);
  if (low > 0) out += " from " + size_text(low);
  return out;
}

}  // namespace

std::string size_text(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string describe_broadcast_choice(int ranks, const Placement& where,
                                      const MulticastFrom& from) {
  return describe<BroadcastAlgorithm>([&](std::size_t bytes) {
    return choose_broadcast(BroadcastAlgorithm::kAuto, true, ranks, bytes, from, where);
  });
}

std::string describe_allgather_choice(int ranks, const Placement& where,
                                      const MulticastFrom& from) {
  return describe<AllgatherAlgorithm>([&](std::size_t bytes) {
    return choose_allgather(AllgatherAlgorithm::kAuto, true, ranks, bytes, from, where);
  });
}

}  // namespace mccl::coll
