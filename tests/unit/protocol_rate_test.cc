// The rate from loss (protocol/rate_control.h) where the link rate is
// unknown: the controller's rules on their own, then on the in-memory
// fabric with switch ports whose endpoints hide the link rate, as a NIC
// that reports no speed does. There, unadapted roots each send at the whole
// link rate and an 8-rank allgather floods every receiver's port; adapted
// roots find the link within a few collectives and the flood stops.
#include <gtest/gtest.h>

#include "protocol/rate_control.h"
#include "protocol_rig.h"

namespace mccl::protocol::test {
namespace {

constexpr double kMbit = 1e6 / 8;  // bytes per second in one Mbit/s
constexpr bool kPaced = true;      // the transport refused part of the batch

RateConfig controller_config() {
  RateConfig c;
  c.initial_bytes_per_s = 1000 * kMbit;
  c.floor_bytes_per_s = 100 * kMbit;
  c.ceiling_bytes_per_s = 2000 * kMbit;
  c.decrease = 0.5;
  c.recovery = 0.25;
  c.recovery_bytes = 1000;
  c.plateau = 0.95;
  c.probe = 0.1;
  c.plateau_expiry = 1.1;
  return c;
}

TEST(RateController, LossCutsOncePerEpisode) {
  RateController r(controller_config());
  EXPECT_FALSE(r.on_loss(1, 0)) << "nothing injected yet: no overrun of ours";
  r.on_injected(1, 100, 10, kPaced);
  EXPECT_TRUE(r.on_loss(1, 40));
  EXPECT_DOUBLE_EQ(r.bytes_per_s(), 500 * kMbit);
  // Chunks sent before the cut: the same episode, already answered.
  EXPECT_FALSE(r.on_loss(1, 99));
  EXPECT_FALSE(r.on_loss(1, 150)) << "a chunk never sent";
  r.on_injected(1, 200, 10, kPaced);
  EXPECT_TRUE(r.on_loss(1, 100)) << "sent after the cut: a new episode";
  EXPECT_DOUBLE_EQ(r.bytes_per_s(), 250 * kMbit);
  r.on_injected(2, 10, 10, kPaced);  // the next collective
  EXPECT_FALSE(r.on_loss(1, 199));
  EXPECT_TRUE(r.on_loss(2, 5));
  EXPECT_EQ(r.decreases(), 3u);
}

TEST(RateController, StaysWithinFloorAndCeiling) {
  RateController r(controller_config());
  for (std::uint32_t seq = 1; seq < 20; ++seq) {
    r.on_injected(seq, 1, 1, kPaced);
    r.on_loss(seq, 0);
  }
  EXPECT_DOUBLE_EQ(r.bytes_per_s(), 100 * kMbit);
  for (std::uint32_t seq = 20; seq < 60; ++seq) r.on_injected(seq, 1, 1000, kPaced);
  EXPECT_DOUBLE_EQ(r.bytes_per_s(), 2000 * kMbit);
}

TEST(RateController, RecoversFastUpToThePlateauBelowTheRateThatOverran) {
  RateController r(controller_config());
  r.on_injected(1, 1, 1, kPaced);
  ASSERT_TRUE(r.on_loss(1, 0));  // overran at 1000: the plateau is 950
  EXPECT_FALSE(r.on_injected(1, 2, 999, kPaced)) << "not a whole recovery step yet";
  EXPECT_TRUE(r.on_injected(1, 3, 1, kPaced));
  EXPECT_DOUBLE_EQ(r.bytes_per_s(), 625 * kMbit);
  EXPECT_TRUE(r.on_injected(1, 4, 3000, kPaced));  // 781, 977: held at the plateau
  EXPECT_DOUBLE_EQ(r.bytes_per_s(), 950 * kMbit);
  EXPECT_FALSE(r.on_injected(1, 100, 100000, kPaced)) << "on the plateau bytes raise nothing";
}

TEST(RateController, ProbesOncePerCleanCollectiveFromThePlateau) {
  RateController r(controller_config());
  r.on_injected(1, 1, 1, kPaced);
  ASSERT_TRUE(r.on_loss(1, 0));
  r.on_injected(1, 2, 4000, kPaced);
  ASSERT_DOUBLE_EQ(r.bytes_per_s(), 950 * kMbit);
  EXPECT_FALSE(r.on_injected(2, 1, 1, kPaced)) << "collective 1 had a cut: no probe";
  EXPECT_TRUE(r.on_injected(3, 1, 1, kPaced));
  EXPECT_DOUBLE_EQ(r.bytes_per_s(), 1045 * kMbit);
  EXPECT_FALSE(r.on_injected(3, 2, 100000, kPaced))
      << "one probe per collective, whatever its size";
  // A probe that overruns is answered in its own collective: cut, and the
  // next collective starts from the new plateau without a probe.
  ASSERT_TRUE(r.on_loss(3, 1));
  EXPECT_DOUBLE_EQ(r.bytes_per_s(), 522.5 * kMbit);
  r.on_injected(3, 3, 100000, kPaced);
  EXPECT_NEAR(r.bytes_per_s(), 0.95 * 1045 * kMbit, 1e-3);
  EXPECT_FALSE(r.on_injected(4, 1, 1, kPaced));
}

TEST(RateController, ForgetsThePlateauOnceProbesPassItByTheExpiry) {
  RateController r(controller_config());
  r.on_injected(1, 1, 1, kPaced);
  ASSERT_TRUE(r.on_loss(1, 0));
  r.on_injected(1, 2, 4000, kPaced);
  r.on_injected(2, 1, 1, kPaced);
  r.on_injected(3, 1, 100000, kPaced);  // 1045; the bytes on the plateau count for nothing
  r.on_injected(4, 1, 1, kPaced);       // 1149.5: over 1.1 × 1000, the link has grown
  EXPECT_DOUBLE_EQ(r.bytes_per_s(), 1149.5 * kMbit);
  EXPECT_TRUE(r.on_injected(4, 2, 1000, kPaced)) << "bytes raise it again, one step per 1000";
  EXPECT_NEAR(r.bytes_per_s(), 1149.5 * 1.25 * kMbit, 1e-3);
}

TEST(RateController, GrowsOnlyWhereTheRateSetThePace) {
  RateController r(controller_config());
  // Everything accepted: the root sent no faster than it could, which
  // says nothing about the link.
  EXPECT_FALSE(r.on_injected(1, 100, 100000, false));
  EXPECT_DOUBLE_EQ(r.bytes_per_s(), 1000 * kMbit);
  r.on_injected(1, 101, 1, kPaced);
  ASSERT_TRUE(r.on_loss(1, 0));
  r.on_injected(1, 102, 4000, kPaced);
  ASSERT_DOUBLE_EQ(r.bytes_per_s(), 950 * kMbit);  // the plateau
  r.on_injected(2, 1, 100000, false);              // a clean collective, never paced
  EXPECT_FALSE(r.on_injected(3, 1, 1, kPaced)) << "no probe after an unpaced collective";
  EXPECT_TRUE(r.on_injected(4, 1, 1, kPaced)) << "collective 3 was paced and clean";
}

TEST(RateController, OrdersCollectivesAcrossTheSequenceWrap) {
  RateController r(controller_config());
  r.on_injected(0xFFFFFFFFu, 10, 1, kPaced);
  ASSERT_TRUE(r.on_loss(0xFFFFFFFFu, 5));
  r.on_injected(0, 10, 1, kPaced);  // the collective after 0xFFFFFFFF
  EXPECT_FALSE(r.on_loss(0xFFFFFFFFu, 9)) << "before the cut";
  EXPECT_TRUE(r.on_loss(0, 0));
}

// ---- on the sim fabric -------------------------------------------------------

constexpr int kRanks = 8;
constexpr std::size_t kBlock = 1 << 20;

// protocol_incast_test.cc's switch: 1 Gbit/s links, 64 KiB ports; here
// the endpoints cannot tell the rate.
FabricConfig hidden_rate() {
  FabricConfig f;
  f.link_gbit_per_s = 1.0;
  f.port_buffer_bytes = 64 << 10;
  f.virtual_time = true;
  f.hide_link_rate = true;
  f.seed = 89;
  return f;
}

// An estimate 8 times the link to start from, so the adaptation has a
// flood to stop (the default start, 1 Gbit/s, would fit this link).
ProtocolConfig adapting(bool adapt, double initial_mbit = 8000) {
  ProtocolConfig c = patient();
  c.rate.adapt = adapt;
  c.rate.initial_bytes_per_s = initial_mbit * kMbit;
  return c;
}

struct Series {
  std::vector<std::uint64_t> port_drops;           // per collective
  std::vector<std::uint64_t> repair_bytes;         // per collective, all ranks
  std::vector<std::uint64_t> estimate_mbit_rank0;  // after each collective
  std::vector<std::uint64_t> fabric_us;            // per collective, on the fabric's clock
};

void run_allgathers(Rig& rig, int count, Series& out) {
  for (int i = 0; i < count; ++i) {
    const std::uint64_t drops_before = rig.fabric().counters().port_drops;
    std::uint64_t repairs_before = 0;
    for (int r = 0; r < rig.size(); ++r) repairs_before += rig.stats(r).repair_bytes_requested;
    const auto start = rig.fabric().now();
    Allgather a(rig, kBlock, 17 + static_cast<std::uint64_t>(i));
    a.start_all(rig);
    ASSERT_TRUE(rig.run(a.ops, 60s)) << "allgather " << i;
    out.fabric_us.push_back(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(rig.fabric().now() - start).count()));
    a.expect_exact();
    std::uint64_t repairs = 0;
    for (int r = 0; r < rig.size(); ++r) repairs += rig.stats(r).repair_bytes_requested;
    out.port_drops.push_back(rig.fabric().counters().port_drops - drops_before);
    out.repair_bytes.push_back(repairs - repairs_before);
    out.estimate_mbit_rank0.push_back(rig.stats(0).link_estimate_mbit);
  }
}

std::uint64_t sum_from(const std::vector<std::uint64_t>& v, std::size_t first) {
  std::uint64_t s = 0;
  for (std::size_t i = first; i < v.size(); ++i) s += v[i];
  return s;
}

std::string show(const std::vector<std::uint64_t>& v) {
  std::string s;
  for (auto x : v) s += std::to_string(x) + " ";
  return s;
}

// Measured here (seed 89; the fabric and the contexts on one virtual
// clock, so the same on any machine): unadapted, 34,176 port drops and
// 50 MB of repairs in every collective; adapted from 8 Gbit/s, 34k, 31k,
// 27k and 16k drops in the first four, then 1,345, 204 and 0 (at most
// 2 MB of repairs) while the estimate settles between 860 and 1,060 Mbit/s.
constexpr int kAdapted = 7;
constexpr std::size_t kSettled = 4;  // collectives the adaptation may take
constexpr int kFlood = 3;            // the flood is the same in every collective

TEST(ProtocolRate, AdaptedRootsStopTheFloodAUnknownLinkRateCauses) {
  Series adapted, flood;
  {
    Rig rig(kRanks, hidden_rate(), adapting(true));
    run_allgathers(rig, kAdapted, adapted);
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_GT(rig.stats(r).rate_decreases, 0u) << "rank " << r;
      EXPECT_LT(rig.stats(r).link_estimate_mbit, 8000u) << "rank " << r;
    }
  }
  {
    Rig rig(kRanks, hidden_rate(), adapting(false));
    run_allgathers(rig, kFlood, flood);
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_EQ(rig.stats(r).rate_decreases, 0u);
      EXPECT_EQ(rig.stats(r).loss_reports_sent, 0u);
    }
  }
  const std::uint64_t settled = kAdapted - kSettled;
  const std::uint64_t adapted_drops = sum_from(adapted.port_drops, kSettled) / settled;
  const std::uint64_t flood_drops = sum_from(flood.port_drops, 0) / kFlood;
  const std::uint64_t adapted_repairs = sum_from(adapted.repair_bytes, kSettled) / settled;
  const std::uint64_t flood_repairs = sum_from(flood.repair_bytes, 0) / kFlood;
  const std::string detail = "port drops per collective: adapted " + show(adapted.port_drops) +
                             "/ flood " + show(flood.port_drops) + "; rank 0's estimate " +
                             show(adapted.estimate_mbit_rank0) + "; repair bytes: adapted " +
                             show(adapted.repair_bytes) + "/ flood " + show(flood.repair_bytes) +
                             "; fabric us: adapted " + show(adapted.fabric_us) + "/ flood " +
                             show(flood.fabric_us);
  // Unadapted, the receivers' ports drop most of what 7 roots send at the
  // whole rate, collective after collective, and repairs carry it.
  EXPECT_GT(flood_drops, 10000u) << detail;
  EXPECT_GT(flood_repairs, kRanks * kBlock) << detail;
  // Adapted, a small fraction of that once the estimate found the link.
  EXPECT_LT(adapted_drops * 50, flood_drops) << detail;
  EXPECT_LT(adapted_repairs * 50, flood_repairs) << detail;
}

TEST(ProtocolRate, RateRisesAgainOnceLossStops) {
  Rig rig(kRanks, hidden_rate(), adapting(true));
  Series s;
  run_allgathers(rig, 3, s);  // the flood cuts every root's estimate
  ASSERT_GT(rig.stats(0).rate_decreases, 0u);
  const std::uint64_t cut = rig.stats(0).link_estimate_mbit;
  const std::uint64_t decreases = rig.stats(0).rate_decreases;
  // Broadcasts from rank 0 alone: one root cannot overrun a port at the
  // link's own rate (its link is no faster), so nothing is lost any more,
  // and its estimate climbs.
  // Fast back to just under where it overran (1 MiB is four recovery
  // steps: two broadcasts get there from a 70% cut), then a probe per
  // collective.
  std::vector<std::uint64_t> estimates;
  for (int i = 0; i < 4; ++i) {
    Broadcast b(rig, kBlock, 0, 300 + static_cast<std::uint64_t>(i));
    b.start_all(rig);
    ASSERT_TRUE(rig.run(b.ops, 60s));
    b.expect_exact();
    estimates.push_back(rig.stats(0).link_estimate_mbit);
  }
  EXPECT_EQ(rig.stats(0).rate_decreases, decreases);
  const std::string detail =
      "after a cut to " + std::to_string(cut) + " Mbit/s: " + show(estimates);
  EXPECT_GE(estimates[1], cut * 13 / 10) << detail;
  EXPECT_GT(estimates.back(), estimates[1]) << detail;
}

TEST(ProtocolRate, AKnownLinkRateIsNeitherAdaptedNorReported) {
  FabricConfig f = hidden_rate();
  f.hide_link_rate = false;
  f.loss = 0.01;  // loss the rate has no part in: repaired, never reported
  Rig rig(kRanks, f, adapting(true));
  Series s;
  run_allgathers(rig, 2, s);
  std::uint64_t repairs = 0;
  for (int r = 0; r < kRanks; ++r) {
    repairs += rig.stats(r).repairs_requested;
    EXPECT_EQ(rig.stats(r).loss_reports_sent, 0u) << "rank " << r;
    EXPECT_EQ(rig.stats(r).rate_decreases, 0u) << "rank " << r;
    EXPECT_EQ(rig.stats(r).link_estimate_mbit, 0u) << "rank " << r;
  }
  EXPECT_GT(repairs, 0u);
}

TEST(ProtocolRate, StartsAtTheInitialEstimateWhereTheRateIsUnknown) {
  Rig rig(2, hidden_rate(), adapting(true, 1000));
  EXPECT_EQ(rig.stats(0).link_estimate_mbit, 1000u);
  EXPECT_EQ(rig.stats(0).rate_decreases, 0u);
}

TEST(ProtocolRate, LossReportsAreValidated) {
  Rig rig(3, hidden_rate(), adapting(true));
  ControlHeader h;
  h.kind = ControlKind::kLossReport;
  h.seq = 1;
  h.root = 2;  // not the rank it is sent to
  ASSERT_TRUE(rig.ctx(1).send_control(0, h).is_ok());
  h.root = 0;  // well addressed, but with a body
  const std::byte junk[4] = {};
  ASSERT_TRUE(rig.ctx(1).send_control(0, h, junk).is_ok());
  // Well formed, about a collective rank 0 has not started: no overrun of
  // its own, ignored without a word.
  h.seq = 7;
  ASSERT_TRUE(rig.ctx(1).send_control(0, h).is_ok());
  rig.progress_all(10);
  EXPECT_EQ(rig.stats(0).dropped_invalid, 2u);
  EXPECT_EQ(rig.stats(0).rate_decreases, 0u);
  EXPECT_EQ(rig.stats(0).link_estimate_mbit, 8000u);
}

}  // namespace
}  // namespace mccl::protocol::test
