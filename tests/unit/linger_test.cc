// The reaper of progress/linger.h: a communicator handed over while it
// still keeps an eager copy stays alive, its engine still serving, until the
// right neighbour's release arrives; then it is destroyed. One that the
// neighbour never releases goes by its deadline.
#include "progress/linger.h"

#include <gtest/gtest.h>

#include <thread>

#include "progress/engine.h"
#include "protocol_rig.h"

namespace mccl::protocol::test {
namespace {

ProtocolConfig eager_on() {
  ProtocolConfig c = eager();
  c.eager_bytes = 64 << 10;
  return c;
}

// Rank 0 (a thread engine) completes a broadcast eagerly while rank 1 (driven
// here) has not started it, and is handed to the reaper.
bool wait_for(const std::function<bool()>& done) {
  auto deadline = common::Deadline::after(kDeadline);
  while (!done()) {
    if (deadline.expired()) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(Linger, TheReaperKeepsServingUntilTheRelease) {
  Fabric fabric(clean());
  auto ctx0 = std::make_unique<Context>(0, 2, kTag, fabric.join_datagram(kTag, 0),
                                        fabric.join_reliable(kTag, 0, 2), eager_on());
  Context ctx1(1, 2, kTag, fabric.join_datagram(kTag, 1), fabric.join_reliable(kTag, 1, 2),
               eager_on());
  const Bytes data = pattern(5000, 3);
  Bytes buf0 = data, buf1(data.size());
  auto op0 = std::make_shared<McastCollective>(
      *ctx0, McastSpec{"broadcast", 0xB1, {{0, buf0.data(), buf0.size()}}});
  auto engine = progress::make_thread_engine(*ctx0, {}, std::chrono::microseconds(0));
  engine->start(op0);
  ASSERT_TRUE(engine->wait(*op0, common::Deadline::after(kDeadline)).is_ok());
  ASSERT_TRUE(op0->status().is_ok());
  ASSERT_EQ(ctx0->serving(), 1u) << "rank 0 should have completed eagerly";
  buf0.assign(buf0.size(), std::byte{0});  // the user's buffer is reused

  const std::size_t before = progress::lingering();
  progress::linger(std::move(engine), std::move(ctx0), common::Deadline::after(kDeadline));
  EXPECT_EQ(progress::lingering(), before + 1);

  // Rank 1 starts late and is served by the lingering rank 0 (repairs of
  // whatever its datagrams did not bring, from the copy).
  auto op1 = std::make_shared<McastCollective>(
      ctx1, McastSpec{"broadcast", 0xB1, {{0, buf1.data(), buf1.size()}}});
  ctx1.start(op1);
  ASSERT_TRUE(wait_for([&] {
    ctx1.progress();
    return op1->done();
  }));
  EXPECT_TRUE(op1->status().is_ok()) << op1->status().message();
  EXPECT_TRUE(buf1 == data);
  EXPECT_TRUE(wait_for([&] { return progress::lingering() == before; }))
      << "the reaper did not let rank 0 go after the release";
}

TEST(Linger, AnUnreleasedCopyGoesByItsDeadline) {
  Fabric fabric(clean());
  auto ctx0 = std::make_unique<Context>(0, 2, kTag, fabric.join_datagram(kTag, 0),
                                        fabric.join_reliable(kTag, 0, 2), eager_on());
  auto ctx1 = fabric.join_reliable(kTag, 1, 2);  // rank 1 never runs the protocol
  Bytes buf0 = pattern(3000, 4);
  auto op0 = std::make_shared<McastCollective>(
      *ctx0, McastSpec{"broadcast", 0xB2, {{0, buf0.data(), buf0.size()}}});
  auto engine = progress::make_thread_engine(*ctx0, {}, std::chrono::microseconds(0));
  engine->start(op0);
  ASSERT_TRUE(engine->wait(*op0, common::Deadline::after(kDeadline)).is_ok());
  ASSERT_EQ(ctx0->serving(), 1u);
  const std::size_t before = progress::lingering();
  progress::linger(std::move(engine), std::move(ctx0), common::Deadline::after(200ms));
  EXPECT_TRUE(wait_for([&] { return progress::lingering() == before; }));
}

}  // namespace
}  // namespace mccl::protocol::test
