// The registration cache (src/transport/ibud/reg_cache.h) over the fake
// verbs: lookup by address range, page rounding, merging of overlapping
// ranges, LRU eviction by count and by bytes, invalidation, and
// registrations that outlive their entry while someone holds them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "transport/ibud/fake_verbs.h"
#include "transport/ibud/reg_cache.h"

namespace mccl::transport::ibud {
namespace {

constexpr std::size_t kPage = 4096;

struct Rig {
  Rig(RegCacheOptions o = {}) : verbs(fabric.add_host()) {
    EXPECT_TRUE(verbs->open_device("mlx5_0", dev).is_ok());
    EXPECT_TRUE(verbs->alloc_pd(*dev, pd).is_ok());
    mem.reset(static_cast<std::byte*>(std::aligned_alloc(kPage, 64 * kPage)));
    cache = std::make_unique<RegCache>(*verbs, *pd, o);
  }
  std::byte* page(std::size_t i) { return mem.get() + i * kPage; }
  std::size_t mrs() const { return fabric.live_objects() - 2; }  // minus device and PD

  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  FakeFabric fabric;
  std::shared_ptr<Verbs> verbs;
  std::unique_ptr<Device> dev;
  std::unique_ptr<Pd> pd;
  std::unique_ptr<std::byte, Free> mem;
  std::unique_ptr<RegCache> cache;
};

TEST(IbudRegCache, HitsInsideARegisteredRangeAndRoundsToPages) {
  Rig r;
  std::shared_ptr<const Mr> a, b;
  ASSERT_TRUE(r.cache->get(r.page(1) + 100, 200, a).is_ok());
  EXPECT_EQ(a->addr, r.page(1));
  EXPECT_EQ(a->length, kPage);
  ASSERT_TRUE(r.cache->get(r.page(1) + 3000, 1096, b).is_ok());
  EXPECT_EQ(a, b);
  EXPECT_EQ(r.cache->stats().hits, 1u);
  EXPECT_EQ(r.cache->stats().misses, 1u);
  EXPECT_EQ(r.cache->find(r.page(1), kPage), a);
  EXPECT_EQ(r.cache->find(r.page(1), kPage + 1), nullptr);
  EXPECT_EQ(r.cache->find(r.page(2), 1), nullptr);
  EXPECT_EQ(r.cache->stats().misses, 1u) << "find never registers";
}

TEST(IbudRegCache, OverlappingRangesMergeIntoOneRegistration) {
  Rig r;
  std::shared_ptr<const Mr> a, b, c;
  ASSERT_TRUE(r.cache->get(r.page(2), kPage, a).is_ok());
  ASSERT_TRUE(r.cache->get(r.page(5), kPage, b).is_ok());
  ASSERT_TRUE(r.cache->get(r.page(3), 2 * kPage + 1, c).is_ok());  // pages 3..5 overlaps b
  EXPECT_EQ(c->addr, r.page(3));
  EXPECT_EQ(c->length, 3 * kPage);
  EXPECT_EQ(r.cache->entries(), 2u);
  EXPECT_EQ(r.cache->stats().merged, 1u);
  ASSERT_TRUE(r.cache->get(r.page(2), 4 * kPage, c).is_ok());  // spans both: one entry
  EXPECT_EQ(c->addr, r.page(2));
  EXPECT_EQ(c->length, 4 * kPage);
  EXPECT_EQ(r.cache->entries(), 1u);
  EXPECT_EQ(r.cache->bytes(), 4 * kPage);
}

TEST(IbudRegCache, EvictsTheLeastRecentlyUsed) {
  Rig r(RegCacheOptions{3, 1 << 30});
  std::shared_ptr<const Mr> m;
  for (std::size_t i = 0; i < 3; ++i) ASSERT_TRUE(r.cache->get(r.page(2 * i), 1, m).is_ok());
  ASSERT_TRUE(r.cache->get(r.page(0), 1, m).is_ok());  // page 0 used again
  m.reset();
  ASSERT_TRUE(r.cache->get(r.page(10), 1, m).is_ok());
  EXPECT_EQ(r.cache->entries(), 3u);
  EXPECT_EQ(r.cache->stats().evicted, 1u);
  EXPECT_NE(r.cache->find(r.page(0), 1), nullptr);
  EXPECT_EQ(r.cache->find(r.page(2), 1), nullptr) << "page 2 was the least recently used";
  EXPECT_EQ(r.mrs(), 3u) << "an evicted registration nobody holds is deregistered";
}

TEST(IbudRegCache, EvictsByBytesButNeverTheNewEntry) {
  Rig r(RegCacheOptions{100, 4 * kPage});
  std::shared_ptr<const Mr> m;
  ASSERT_TRUE(r.cache->get(r.page(0), 2 * kPage, m).is_ok());
  ASSERT_TRUE(r.cache->get(r.page(4), 2 * kPage, m).is_ok());
  ASSERT_TRUE(r.cache->get(r.page(8), 8 * kPage, m).is_ok());  // alone above the limit
  EXPECT_EQ(r.cache->entries(), 1u);
  EXPECT_EQ(m->length, 8 * kPage);
}

TEST(IbudRegCache, InvalidateDropsOverlappingEntriesButHoldersKeepTheirs) {
  Rig r;
  std::shared_ptr<const Mr> held, other;
  ASSERT_TRUE(r.cache->get(r.page(1), 2 * kPage, held).is_ok());
  ASSERT_TRUE(r.cache->get(r.page(8), kPage, other).is_ok());
  other.reset();
  r.cache->invalidate(r.page(2) + 10, 1);  // inside the first entry
  EXPECT_EQ(r.cache->entries(), 1u);
  EXPECT_EQ(r.cache->find(r.page(1), 1), nullptr);
  EXPECT_EQ(r.mrs(), 2u) << "still held";
  held.reset();
  EXPECT_EQ(r.mrs(), 1u);
  r.cache->invalidate(r.page(0), 64 * kPage);
  EXPECT_EQ(r.cache->entries(), 0u);
  EXPECT_EQ(r.mrs(), 0u);
  EXPECT_EQ(r.cache->stats().invalidated, 2u);
}

TEST(IbudRegCache, ErrorsAreReported) {
  Rig r;
  std::shared_ptr<const Mr> m;
  EXPECT_EQ(r.cache->get(r.page(0), 0, m).code(), ErrorCode::kInvalidArgument);
  r.fabric.set_fail_call("reg_mr");
  EXPECT_FALSE(r.cache->get(r.page(0), 1, m).is_ok());
  EXPECT_EQ(r.cache->entries(), 0u);
}

}  // namespace
}  // namespace mccl::transport::ibud
