// What the offload wire (offload/wire.h) accepts from the other process:
// a frame claims no more than its type can need and allocates nothing on a
// claim, a message's timeout holds for the whole message, a message brings
// at most three descriptors, and a ring whose head was put past its
// capacity is refused instead of popped. Each test failed before its fix.
#include "offload/wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <new>
#include <thread>
#include <vector>

#include "common/clock.h"

namespace mccl::offload {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

struct SocketPair {
  int ours = -1, theirs = -1;
  SocketPair() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    ours = sv[0];
    theirs = sv[1];
  }
  ~SocketPair() {
    for (int fd : {ours, theirs}) {
      if (fd >= 0) ::close(fd);
    }
  }
  // A frame header as the peer would write it: {u32 type, u32 length}.
  void claim(MsgType type, std::uint32_t length) const {
    const std::uint32_t h[2] = {static_cast<std::uint32_t>(type), length};
    ASSERT_EQ(::write(theirs, h, sizeof h), static_cast<ssize_t>(sizeof h));
  }
};

// Found by reading: a frame's length was trusted up to 64 MiB whatever its
// type; a hello claiming 4 KiB had the reader allocate it and wait the
// whole timeout for bytes no hello has.
TEST(OffloadWire, AFrameLongerThanItsTypeCanNeedIsRefusedAtOnce) {
  SocketPair sp;
  sp.claim(MsgType::kHello, 4096);
  MsgType type{};
  std::vector<std::byte> body;
  const auto t0 = common::now();
  const auto st = recv_msg(sp.ours, type, body, nullptr, 5000);
  EXPECT_LT(common::now() - t0, 2s) << "refused at once, not at the 5 s timeout";
  EXPECT_EQ(st.code(), ErrorCode::kInternal) << st.message();
  EXPECT_THAT(st.message(), HasSubstr("claims 4096 bytes"));
  EXPECT_EQ(body.capacity(), 0u);
  EXPECT_EQ(max_body_bytes(MsgType::kHello), sizeof(HelloMsg));
  EXPECT_EQ(max_body_bytes(MsgType::kBye), 0u);
  EXPECT_EQ(max_body_bytes(static_cast<MsgType>(77)), 0u);
}

// Found by reading: recv_msg zero-filled a body as long as the frame
// claimed (60 MiB here) before a byte of it had arrived.
TEST(OffloadWire, ABodyGrowsAsItsBytesArriveNotToTheClaim) {
  SocketPair sp;
  sp.claim(MsgType::kAllgatherResult, 60u << 20);
  const std::vector<std::byte> some(100, std::byte{1});
  ASSERT_EQ(::write(sp.theirs, some.data(), some.size()), 100);
  ::close(sp.theirs);  // and nothing more: EOF
  sp.theirs = -1;
  MsgType type{};
  std::vector<std::byte> body;
  const auto st = recv_msg(sp.ours, type, body, nullptr, 5000);
  EXPECT_EQ(st.code(), ErrorCode::kPeerFailure) << st.message();
  EXPECT_LT(body.capacity(), std::size_t{1} << 20) << "bytes allocated for 100 received";
}

// Found by reading: the timeout held for each poll, not for the message,
// so a peer sending a byte now and then held the reader indefinitely.
TEST(OffloadWire, TheTimeoutHoldsForTheWholeMessage) {
  SocketPair sp;
  sp.claim(MsgType::kHello, sizeof(HelloMsg));
  std::atomic<bool> stop{false};
  std::thread trickle([fd = sp.theirs, &stop] {
    for (std::size_t i = 0; i < 40 && !stop; ++i) {  // up to 2 s: a byte every 50 ms
      const char b = 0;
      if (::write(fd, &b, 1) != 1) return;
      std::this_thread::sleep_for(50ms);
    }
  });
  MsgType type{};
  std::vector<std::byte> body;
  const auto t0 = common::now();
  const auto st = recv_msg(sp.ours, type, body, nullptr, 300);
  const auto took = common::now() - t0;
  stop = true;
  trickle.join();
  EXPECT_EQ(st.code(), ErrorCode::kTimeout) << st.message();
  EXPECT_LT(took, 1500ms);
}

// Found by reading: every descriptor that came with a message was kept, so
// a peer could fill the reader's descriptor table (a hello needs three).
TEST(OffloadWire, AMessageBringsAtMostThreeDescriptors) {
  SocketPair sp;
  int fds[4];
  for (int& fd : fds) fd = ::eventfd(0, EFD_CLOEXEC);
  ASSERT_TRUE(send_msg(sp.theirs, MsgType::kBye, {}, fds).is_ok());
  for (int fd : fds) ::close(fd);
  MsgType type{};
  std::vector<std::byte> body;
  std::vector<int> got;
  ASSERT_TRUE(recv_msg(sp.ours, type, body, &got, 1000).is_ok());
  EXPECT_EQ(type, MsgType::kBye);
  EXPECT_EQ(got.size(), 3u);
  for (int fd : got) ::close(fd);
}

class AlignedRings {
 public:
  explicit AlignedRings(std::uint32_t slots)
      : bytes_(SharedRings::bytes_for(slots)),
        base_(::operator new (bytes_, std::align_val_t{64})),
        rings_(base_, slots, true) {}
  ~AlignedRings() { ::operator delete (base_, std::align_val_t{64}); }
  SharedRings& rings() { return rings_; }
  // The submission ring's header: the first thing in the memory.
  RingHeader& submissions() { return *static_cast<RingHeader*>(base_); }
  RingHeader& completions() {
    return *reinterpret_cast<RingHeader*>(static_cast<std::byte*>(base_) + sizeof(RingHeader));
  }

 private:
  std::size_t bytes_;
  void* base_;
  SharedRings rings_;
};

// Found by reading: the consumer popped until the tail met the head, which
// the other process writes: a head put 2^40 ahead made the daemon pop
// stale slots for hours. A full ring is a correct producer's right; one
// entry more (or a head behind the tail) is refused and nothing is taken.
TEST(OffloadWire, AHeadPastTheRingsCapacityIsAnOverrun) {
  AlignedRings r(4);
  Submission s;
  for (std::uint64_t i = 0; i < 4; ++i) {
    s.id = i;
    ASSERT_TRUE(r.rings().push_submission(s));
  }
  ASSERT_EQ(r.rings().pop_submission(s), RingPop::kTaken);
  EXPECT_EQ(s.id, 0u);
  RingHeader& h = r.submissions();
  h.head.store(h.tail.load() + 5);
  EXPECT_EQ(r.rings().pop_submission(s), RingPop::kOverrun);
  h.head.store(h.tail.load() + (std::uint64_t{1} << 40));
  EXPECT_EQ(r.rings().pop_submission(s), RingPop::kOverrun);
  h.head.store(h.tail.load() - 1);
  EXPECT_EQ(r.rings().pop_submission(s), RingPop::kOverrun);
  EXPECT_EQ(h.tail.load(), 1u) << "an overrun takes nothing";
  h.head.store(4);
  for (std::uint64_t i = 1; i < 4; ++i) {
    ASSERT_EQ(r.rings().pop_submission(s), RingPop::kTaken);
    EXPECT_EQ(s.id, i);
  }
  EXPECT_EQ(r.rings().pop_submission(s), RingPop::kEmpty);

  // The client's side: an overrun completion ring reads as empty.
  RingHeader& c = r.completions();
  c.head.store(c.tail.load() + 5);
  Completion done;
  EXPECT_FALSE(r.rings().pop_completion(done));
  EXPECT_EQ(c.tail.load(), 0u);
}

}  // namespace
}  // namespace mccl::offload
