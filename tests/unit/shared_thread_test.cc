// The host progress thread (progress/shared_thread.h) and a blocking call's
// collective (progress::CallerWaits): the caller that will wait starts it
// itself, and the sleeping thread is not woken for it; a collective started
// without the promise still wakes the thread, which runs it on its own.
#include "progress/shared_thread.h"

#include <gtest/gtest.h>

#include <thread>

#include "protocol_rig.h"

namespace mccl::protocol::test {
namespace {

// Finishes as soon as the context registers it, noting the thread that did.
class Instant final : public Operation {
 public:
  explicit Instant(Context& ctx) : Operation(ctx) {}
  std::string describe() const override { return "instant"; }
  std::string describe_wait() const override { return "nothing"; }
  void on_start(common::TimePoint) override {
    started_on = std::this_thread::get_id();
    finish(common::Status::ok());
  }
  void on_datagram(const DataHeader&, std::span<const std::byte>, common::TimePoint) override {}
  void on_control(int, const ControlHeader&, std::span<const std::byte>,
                  common::TimePoint) override {}
  void progress(common::TimePoint) override {}
  bool needs(int) const override { return false; }

  std::thread::id started_on;
};

class SharedThreadTest : public ::testing::Test {
 protected:
  SharedThreadTest()
      : ctx_(0, 1, kTag, fabric_.join_datagram(kTag, 0), fabric_.join_reliable(kTag, 0, 1),
             eager()) {
    progress::ThreadEngineConfig cfg;
    cfg.spin = std::chrono::microseconds(0);  // asleep as soon as nothing happens
    thread_ = progress::make_shared_thread(cfg);
    engine_ = progress::make_shared_thread_engine(ctx_, thread_, std::chrono::microseconds(0));
  }

  // Long past the thread's last pass: it sleeps.
  static void let_it_fall_asleep() { std::this_thread::sleep_for(20ms); }

  Fabric fabric_{clean()};
  Context ctx_;
  std::shared_ptr<progress::SharedThread> thread_;
  std::unique_ptr<progress::Engine> engine_;
};

TEST_F(SharedThreadTest, ABlockingCallsCollectiveWakesNoThreadAndRunsOnItsCaller) {
  for (int round = 0; round < 5; ++round) {
    let_it_fall_asleep();
    const std::uint64_t before = progress::wake_ups(*thread_);
    auto op = std::make_shared<Instant>(ctx_);
    {
      const progress::CallerWaits caller_waits;
      engine_->start(op);
      ASSERT_TRUE(engine_->wait(*op, common::Deadline::after(kDeadline)).is_ok());
    }
    EXPECT_EQ(op->started_on, std::this_thread::get_id()) << "round " << round;
    EXPECT_EQ(progress::wake_ups(*thread_), before) << "round " << round;
  }
}

TEST_F(SharedThreadTest, ACollectiveNobodyWaitsForWakesTheThread) {
  let_it_fall_asleep();
  const std::uint64_t before = progress::wake_ups(*thread_);
  auto op = std::make_shared<Instant>(ctx_);
  engine_->start(op);
  const auto deadline = common::Deadline::after(kDeadline);
  while (!op->done() && !deadline.expired()) std::this_thread::sleep_for(100us);
  ASSERT_TRUE(op->done()) << "the thread did not run a collective nobody waits for";
  EXPECT_NE(op->started_on, std::this_thread::get_id());
  // Woken by start(), unless it was between two sleeps just then (then
  // its next pass found the collective): one wake-up at most.
  EXPECT_LE(progress::wake_ups(*thread_), before + 1);
}

TEST(CallerWaits, ScopesNestAndEndWithTheOutermost) {
  EXPECT_FALSE(progress::CallerWaits::active());
  {
    const progress::CallerWaits outer;
    {
      const progress::CallerWaits inner;
      EXPECT_TRUE(progress::CallerWaits::active());
    }
    EXPECT_TRUE(progress::CallerWaits::active());
    bool elsewhere = true;
    std::thread([&] { elsewhere = progress::CallerWaits::active(); }).join();
    EXPECT_FALSE(elsewhere) << "the promise is the calling thread's alone";
  }
  EXPECT_FALSE(progress::CallerWaits::active());
}

}  // namespace
}  // namespace mccl::protocol::test
