// A cache of memory registrations keyed by address range, so a buffer used
// again and again (the user's collective buffers, read by one-sided
// repair) is registered once. Not used by the datagram path yet: sends go
// through the transport's registered staging ring.
//
// - get() returns a registration covering [addr, addr + len): an existing
//   one (hit) or a new one of the whole pages around the range (miss).
//   Entries never overlap: a new registration absorbs every entry it
//   overlaps, so one lookup (the entry starting at or before addr) decides.
// - Past max_entries or max_bytes the least recently used entries are
//   evicted (never the one just made).
// - invalidate() drops the entries overlapping a range: call it before
//   memory is freed or remapped, or a later get() of the same addresses
//   would return a registration of the old pages. (Catching free() and
//   munmap() by themselves needs memory hooks; that is future work.)
// - Registrations are shared: an evicted or invalidated one stays
//   registered until the last holder lets it go.
//
// Thread-safe (one mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "common/status.h"
#include "transport/ibud/verbs.h"

namespace mccl::transport::ibud {

struct RegCacheOptions {
  std::size_t max_entries = 256;
  std::size_t max_bytes = std::size_t{1} << 32;
};

struct RegCacheStats {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;   // registrations made
  std::uint64_t merged = 0;   // entries absorbed by a larger registration
  std::uint64_t evicted = 0;  // least recently used, over a limit
  std::uint64_t invalidated = 0;
};

class RegCache {
 public:
  // `verbs` and `pd` must outlive the cache and every registration it hands out.
  RegCache(Verbs& verbs, Pd& pd, RegCacheOptions options = {});
  RegCache(const RegCache&) = delete;
  RegCache& operator=(const RegCache&) = delete;

  // kInvalidArgument for an empty range; a failed registration's status.
  common::Status get(const void* addr, std::size_t len, std::shared_ptr<const Mr>& out);
  // The entry covering the range, or nullptr; never registers.
  std::shared_ptr<const Mr> find(const void* addr, std::size_t len);
  void invalidate(const void* addr, std::size_t len);

  std::size_t entries() const;
  std::size_t bytes() const;  // registered by the cache's entries
  RegCacheStats stats() const;

 private:
  struct Entry {
    std::uintptr_t end = 0;
    std::shared_ptr<const Mr> mr;
    std::uint64_t used = 0;  // tick of the last get()
  };
  using Map = std::map<std::uintptr_t, Entry>;  // by start address

  Map::iterator covering(std::uintptr_t lo, std::uintptr_t hi);  // end() if none
  void erase(Map::iterator it);
  void evict(std::uintptr_t keep);

  Verbs& verbs_;
  Pd& pd_;
  RegCacheOptions options_;
  mutable std::mutex mu_;
  Map entries_;
  std::size_t bytes_ = 0;
  std::uint64_t tick_ = 0;
  RegCacheStats stats_;
};

}  // namespace mccl::transport::ibud
