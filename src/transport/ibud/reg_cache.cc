#include "transport/ibud/reg_cache.h"

#include <algorithm>
#include <vector>

namespace mccl::transport::ibud {

using common::Status;

namespace {
constexpr std::uintptr_t kPage = 4096;
std::uintptr_t page_down(std::uintptr_t a) { return a & ~(kPage - 1); }
std::uintptr_t page_up(std::uintptr_t a) { return (a + kPage - 1) & ~(kPage - 1); }
}  // namespace

RegCache::RegCache(Verbs& verbs, Pd& pd, RegCacheOptions options)
    : verbs_(verbs), pd_(pd), options_(options) {}

RegCache::Map::iterator RegCache::covering(std::uintptr_t lo, std::uintptr_t hi) {
  auto it = entries_.upper_bound(lo);
  if (it == entries_.begin()) return entries_.end();
  --it;
  return hi <= it->second.end ? it : entries_.end();
}

void RegCache::erase(Map::iterator it) {
  bytes_ -= it->second.end - it->first;
  entries_.erase(it);
}

void RegCache::evict(std::uintptr_t keep) {
  while (entries_.size() > options_.max_entries || bytes_ > options_.max_bytes) {
    auto victim = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == keep) continue;
      if (victim == entries_.end() || it->second.used < victim->second.used) victim = it;
    }
    if (victim == entries_.end()) return;  // only the new one is left
    erase(victim);
    stats_.evicted++;
  }
}

Status RegCache::get(const void* addr, std::size_t len, std::shared_ptr<const Mr>& out) {
  if (addr == nullptr || len == 0) {
    return common::invalid_argument("registration cache: empty range");
  }
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  std::lock_guard lock(mu_);
  if (auto it = covering(a, a + len); it != entries_.end()) {
    it->second.used = ++tick_;
    stats_.hits++;
    out = it->second.mr;
    return Status::ok();
  }
  // Whole pages, grown over every entry the range overlaps.
  std::uintptr_t lo = page_down(a);
  std::uintptr_t hi = page_up(a + len);
  auto it = entries_.upper_bound(lo);
  if (it != entries_.begin() && std::prev(it)->second.end > lo) --it;
  std::vector<Map::iterator> absorbed;
  for (; it != entries_.end() && it->first < hi; ++it) {
    lo = std::min(lo, it->first);
    hi = std::max(hi, it->second.end);
    absorbed.push_back(it);
  }
  std::unique_ptr<Mr> mr;
  if (Status st = verbs_.reg_mr(pd_, reinterpret_cast<void*>(lo), hi - lo, mr); !st) return st;
  for (auto e : absorbed) erase(e);
  stats_.merged += absorbed.size();
  stats_.misses++;
  std::shared_ptr<const Mr> shared(std::move(mr));
  entries_[lo] = Entry{hi, shared, ++tick_};
  bytes_ += hi - lo;
  evict(lo);
  out = std::move(shared);
  return Status::ok();
}

std::shared_ptr<const Mr> RegCache::find(const void* addr, std::size_t len) {
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  std::lock_guard lock(mu_);
  auto it = covering(a, a + std::max<std::size_t>(len, 1));
  return it == entries_.end() ? nullptr : it->second.mr;
}

void RegCache::invalidate(const void* addr, std::size_t len) {
  const auto lo = reinterpret_cast<std::uintptr_t>(addr);
  const std::uintptr_t hi = lo + std::max<std::size_t>(len, 1);
  std::lock_guard lock(mu_);
  auto it = entries_.upper_bound(lo);
  if (it != entries_.begin() && std::prev(it)->second.end > lo) --it;
  while (it != entries_.end() && it->first < hi) {
    auto next = std::next(it);
    erase(it);
    stats_.invalidated++;
    it = next;
  }
}

std::size_t RegCache::entries() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

std::size_t RegCache::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

RegCacheStats RegCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace mccl::transport::ibud
