// The fake verbs (src/transport/ibud/fake_verbs.h) behave as an HCA does on
// every point the ibud transport relies on: drops without a posted
// receive, the GRH in front of received payloads, LOC_LEN_ERR above the
// MTU, in-order completions, multicast loopback to the sender's own QP,
// Q_Key filtering, inline limits, selective signaling, late reads of send
// buffers, completion channels, and resource accounting.
#include <gtest/gtest.h>
#include <poll.h>

#include <cstring>
#include <vector>

#include "transport/ibud/fake_verbs.h"

namespace mccl::transport::ibud {
namespace {

constexpr std::uint32_t kQkey = 0x1234;
const Gid kMgid{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};

// One UD QP on a fake host, joined to and attached to kMgid, with `rx`
// receive buffers of `slot` bytes posted.
struct RawQp {
  RawQp(FakeFabric& fabric, std::size_t rx, std::uint32_t qkey = kQkey, std::uint32_t send_wr = 64,
        std::uint32_t inline_max = 64, std::size_t slot = kGrhBytes + 4096)
      : verbs(fabric.add_host()), slot_bytes(slot), mem(rx * slot + kSendArea) {
    EXPECT_TRUE(verbs->open_device("mlx5_0", dev).is_ok());
    EXPECT_TRUE(verbs->alloc_pd(*dev, pd).is_ok());
    EXPECT_TRUE(verbs->create_comp_channel(*dev, channel).is_ok());
    EXPECT_TRUE(verbs->create_cq(*dev, 256, channel.get(), scq).is_ok());
    EXPECT_TRUE(verbs->create_cq(*dev, 256, channel.get(), rcq).is_ok());
    EXPECT_TRUE(verbs->reg_mr(*pd, mem.data(), mem.size(), mr).is_ok());
    QpInit init{send_wr, 1024, 2, inline_max};
    EXPECT_TRUE(verbs->create_qp(*pd, *scq, *rcq, init, qp).is_ok());
    for (auto s : {QpState::kInit, QpState::kRtr, QpState::kRts}) {
      EXPECT_TRUE(verbs->modify_qp(*qp, QpModify{s, 1, 0, qkey, 0}).is_ok());
    }
    post_recvs(rx);
    IpoibIface ipoib;
    EXPECT_TRUE(verbs->find_ipoib("mlx5_0", 1, "", ipoib).is_ok());
    JoinRequest req{"mlx5_0", 1, ipoib.addr, 0, kMgid};
    EXPECT_TRUE(verbs->join_multicast(req, join).is_ok());
    EXPECT_TRUE(verbs->attach_mcast(*qp, kMgid, join->address.mlid, attachment).is_ok());
    EXPECT_TRUE(verbs->create_ah(*pd, join->address, ah).is_ok());
    PortAttr pa;
    EXPECT_TRUE(verbs->query_port(*dev, 1, pa).is_ok());
    lid = pa.lid;
  }

  void post_recvs(std::size_t n) {
    std::vector<RecvWr> wrs;
    for (std::size_t i = 0; i < n; ++i, ++next_slot) {
      wrs.push_back(RecvWr{next_slot, Sge{addr(next_slot * slot_bytes),
                                          static_cast<std::uint32_t>(slot_bytes), mr->lkey}});
    }
    std::size_t posted = 0;
    EXPECT_TRUE(verbs->post_recv(*qp, wrs, posted).is_ok());
  }
  static constexpr std::size_t kSendArea = 8192;  // at the end of mem
  std::byte* send_area() { return mem.data() + mem.size() - kSendArea; }
  std::uint64_t addr(std::size_t off) { return reinterpret_cast<std::uintptr_t>(mem.data() + off); }

  // A send of `len` bytes from the end of `mem` (registered), filled with `fill`.
  common::Status send(std::size_t len, bool signaled, std::byte fill = std::byte{0x5A},
                      std::uint32_t qkey = kQkey, bool inl = false) {
    std::byte* src = send_area();
    std::memset(src, static_cast<int>(fill), std::min(len, kSendArea));
    SendWr w;
    w.wr_id = next_wr++;
    w.sge[0] =
        Sge{reinterpret_cast<std::uintptr_t>(src), static_cast<std::uint32_t>(len), mr->lkey};
    w.num_sge = 1;
    w.signaled = signaled;
    w.inline_data = inl;
    w.ah = ah.get();
    w.remote_qkey = qkey;
    std::size_t posted = 0;
    return verbs->post_send(*qp, std::span(&w, 1), posted);
  }

  std::vector<Wc> poll(Cq& cq) {
    std::vector<Wc> out(64);
    std::size_t n = 0;
    EXPECT_TRUE(verbs->poll_cq(cq, out, n).is_ok());
    out.resize(n);
    return out;
  }

  std::shared_ptr<Verbs> verbs;
  std::size_t slot_bytes;
  std::vector<std::byte> mem;
  std::uint64_t next_slot = 0, next_wr = 0;
  std::uint16_t lid = 0;
  std::unique_ptr<Device> dev;
  std::unique_ptr<CompChannel> channel;
  std::unique_ptr<Pd> pd;
  std::unique_ptr<Cq> scq, rcq;
  std::unique_ptr<Mr> mr;
  std::unique_ptr<Qp> qp;
  std::unique_ptr<McastJoin> join;
  std::unique_ptr<McastAttachment> attachment;
  std::unique_ptr<Ah> ah;
};

TEST(IbudFakeVerbs, NoKernelSupportIsEnosys) {
  FakeFabric fabric;
  FakeHost h;
  h.no_kernel_support = true;
  auto v = fabric.add_host(h);
  std::vector<std::string> names;
  auto st = v->device_names(names);
  EXPECT_EQ(st.code(), ErrorCode::kUnavailable);
  EXPECT_NE(st.message().find("ibv_get_device_list: ENOSYS"), std::string::npos) << st.message();
}

TEST(IbudFakeVerbs, MulticastReachesEveryAttachedQpWithGrhIncludingTheSender) {
  FakeFabric fabric;
  RawQp a(fabric, 4), b(fabric, 4), c(fabric, 4);
  EXPECT_EQ(fabric.attached(kMgid), 3u);
  ASSERT_TRUE(a.send(100, true, std::byte{0x42}).is_ok());
  for (RawQp* q : {&a, &b, &c}) {
    auto wcs = q->poll(*q->rcq);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
    EXPECT_TRUE(wcs[0].recv && wcs[0].grh);
    EXPECT_EQ(wcs[0].byte_len, kGrhBytes + 100);
    EXPECT_EQ(wcs[0].src_qp, a.qp->qp_num);
    EXPECT_EQ(wcs[0].slid, a.lid);
    const std::byte* buf = q->mem.data() + wcs[0].wr_id * q->slot_bytes;
    EXPECT_EQ(std::memcmp(buf + 24, kMgid.data(), 16), 0) << "GRH destination GID";
    for (std::size_t i = 0; i < 100; ++i) ASSERT_EQ(buf[kGrhBytes + i], std::byte{0x42});
  }
  EXPECT_EQ(fabric.counters().self_delivered, 1u);
  auto sent = a.poll(*a.scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_FALSE(sent[0].recv);
}

TEST(IbudFakeVerbs, DatagramsFindingNoReceiveAreDroppedAndCounted) {
  FakeFabric fabric;
  RawQp a(fabric, 8), b(fabric, 2);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(a.send(10, false).is_ok());
  EXPECT_EQ(b.poll(*b.rcq).size(), 2u);
  EXPECT_EQ(fabric.counters().no_recv_dropped, 3u);
  b.post_recvs(1);
  ASSERT_TRUE(a.send(10, false).is_ok());
  EXPECT_EQ(b.poll(*b.rcq).size(), 1u);
}

TEST(IbudFakeVerbs, QkeyMismatchDrops) {
  FakeFabric fabric;
  RawQp a(fabric, 4), b(fabric, 4, /*qkey=*/0x999);
  ASSERT_TRUE(a.send(10, false).is_ok());
  EXPECT_EQ(b.poll(*b.rcq).size(), 0u);
  EXPECT_EQ(fabric.counters().qkey_dropped, 1u);
  // The high bit of remote_qkey means "the sender QP's own Q_Key".
  ASSERT_TRUE(a.send(10, false, std::byte{1}, 0x80000000u).is_ok());
  EXPECT_EQ(a.poll(*a.rcq).size(), 2u);
}

TEST(IbudFakeVerbs, SendAboveMtuCompletesWithLocLenErrThenFlushes) {
  FakeFabric fabric;
  RawQp a(fabric, 4), b(fabric, 4);
  ASSERT_TRUE(a.send(4097, /*signaled=*/false).is_ok());  // posting succeeds, as on hardware
  ASSERT_TRUE(a.send(10, true).is_ok());
  auto wcs = a.poll(*a.scq);
  ASSERT_EQ(wcs.size(), 2u);  // the error completes although unsignaled
  EXPECT_EQ(wcs[0].status, IBV_WC_LOC_LEN_ERR);
  EXPECT_EQ(wcs[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(b.poll(*b.rcq).size(), 0u);
  EXPECT_EQ(fabric.counters().send_len_errors, 1u);
}

TEST(IbudFakeVerbs, ReceiveBufferTooSmallIsLocLenErr) {
  FakeFabric fabric;
  RawQp a(fabric, 4), b(fabric, 4, kQkey, 64, 64, /*slot=*/kGrhBytes + 50);
  ASSERT_TRUE(a.send(51, false).is_ok());
  auto wcs = b.poll(*b.rcq);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_LOC_LEN_ERR);
}

TEST(IbudFakeVerbs, InlineLimitsAreEnforced) {
  FakeFabric fabric;  // max_inline 220
  RawQp a(fabric, 4, kQkey, 64, /*inline_max=*/64), b(fabric, 4);
  EXPECT_TRUE(a.send(64, false, std::byte{1}, kQkey, true).is_ok());
  EXPECT_FALSE(a.send(65, false, std::byte{1}, kQkey, true).is_ok());
  EXPECT_EQ(fabric.counters().inline_sends, 1u);
  std::unique_ptr<Qp> big;
  EXPECT_FALSE(a.verbs->create_qp(*a.pd, *a.scq, *a.rcq, QpInit{8, 8, 2, 221}, big).is_ok());
}

TEST(IbudFakeVerbs, UnsignaledSendsHoldSlotsUntilASignaledOneCompletes) {
  FakeFabric fabric;
  RawQp a(fabric, 64, kQkey, /*send_wr=*/4);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(a.send(10, false).is_ok());
  EXPECT_TRUE(a.poll(*a.scq).empty());
  auto st = a.send(10, true);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("ENOMEM"), std::string::npos) << st.message();

  RawQp b(fabric, 64, kQkey, 4);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(b.send(10, false).is_ok());
  ASSERT_TRUE(b.send(10, true).is_ok());
  auto wcs = b.poll(*b.scq);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].wr_id, 3u);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(b.send(10, i == 3).is_ok()) << i;
}

TEST(IbudFakeVerbs, SendBuffersAreReadWhenExecutedNotWhenPosted) {
  FakeFabric fabric;
  RawQp a(fabric, 4), b(fabric, 4);
  ASSERT_TRUE(a.send(8, false, std::byte{0x11}).is_ok());
  std::memset(a.send_area(), 0x22, 8);  // reused before any completion
  auto wcs = b.poll(*b.rcq);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(b.mem[kGrhBytes], std::byte{0x22});
  // Inline data is copied at post time.
  ASSERT_TRUE(a.send(8, false, std::byte{0x33}, kQkey, true).is_ok());
  std::memset(a.send_area(), 0x44, 8);
  wcs = b.poll(*b.rcq);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(b.mem[wcs[0].wr_id * b.slot_bytes + kGrhBytes], std::byte{0x33});
}

TEST(IbudFakeVerbs, CompletionsArriveInOrder) {
  FakeFabric fabric;
  RawQp a(fabric, 64), b(fabric, 64);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(a.send(10, true).is_ok());
  auto sent = a.poll(*a.scq);
  auto got = b.poll(*b.rcq);
  ASSERT_EQ(sent.size(), 20u);
  ASSERT_EQ(got.size(), 20u);
  for (std::size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(sent[i].wr_id, i);
    EXPECT_EQ(got[i].wr_id, i);
  }
}

TEST(IbudFakeVerbs, UnregisteredSendMemoryIsLocProtErr) {
  FakeFabric fabric;
  RawQp a(fabric, 4), b(fabric, 4);
  std::vector<std::byte> unregistered(64);
  SendWr w;
  w.sge[0] = Sge{reinterpret_cast<std::uintptr_t>(unregistered.data()), 64, a.mr->lkey};
  w.num_sge = 1;
  w.ah = a.ah.get();
  w.remote_qkey = kQkey;
  std::size_t posted = 0;
  ASSERT_TRUE(a.verbs->post_send(*a.qp, std::span(&w, 1), posted).is_ok());
  auto wcs = a.poll(*a.scq);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_LOC_PROT_ERR);
}

TEST(IbudFakeVerbs, CompletionChannelFiresOncePerArming) {
  FakeFabric fabric;
  RawQp a(fabric, 4), b(fabric, 4);
  auto readable = [&] {
    pollfd p{b.channel->fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  };
  ASSERT_TRUE(a.send(10, false).is_ok());
  (void)b.poll(*b.rcq);
  EXPECT_FALSE(readable()) << "not armed: no event";
  ASSERT_TRUE(b.verbs->req_notify_cq(*b.rcq).is_ok());
  ASSERT_TRUE(a.send(10, false).is_ok());
  ASSERT_TRUE(a.send(10, false).is_ok());
  (void)a.poll(*a.scq);  // the "HCA" runs
  EXPECT_TRUE(readable());
  Cq* cq = nullptr;
  ASSERT_TRUE(b.verbs->get_cq_event(*b.channel, cq).is_ok());
  EXPECT_EQ(cq, b.rcq.get());
  EXPECT_FALSE(readable()) << "one event for two completions";
  ASSERT_TRUE(b.verbs->get_cq_event(*b.channel, cq).is_ok());
  EXPECT_EQ(cq, nullptr);
}

TEST(IbudFakeVerbs, CqOverrunFails) {
  FakeFabric fabric;
  RawQp a(fabric, 4, kQkey, /*send_wr=*/512), b(fabric, 300);  // CQs of 256 entries
  for (int i = 0; i < 257; ++i) ASSERT_TRUE(a.send(10, false).is_ok()) << i;
  std::vector<Wc> out(8);
  std::size_t n = 0;
  EXPECT_FALSE(b.verbs->poll_cq(*b.rcq, out, n).is_ok());
}

TEST(IbudFakeVerbs, PortsThatDidNotJoinGetNothing) {
  FakeFabric fabric;
  RawQp a(fabric, 4), b(fabric, 4);
  b.join.reset();  // left the group, still attached
  ASSERT_TRUE(a.send(10, false).is_ok());
  EXPECT_EQ(b.poll(*b.rcq).size(), 0u);
}

TEST(IbudFakeVerbs, SeededLossIsReproducible) {
  auto run = [](std::uint64_t seed) {
    FakeFabricConfig c;
    c.loss = 0.3;
    c.seed = seed;
    FakeFabric fabric(c);
    RawQp a(fabric, 4), b(fabric, 200);
    for (int i = 0; i < 100; ++i) EXPECT_TRUE(a.send(10, true).is_ok());
    (void)b.poll(*b.rcq);
    return fabric.counters().lost;
  };
  const auto lost = run(7);
  EXPECT_GT(lost, 20u);
  EXPECT_LT(lost, 100u);
  EXPECT_EQ(run(7), lost);
}

TEST(IbudFakeVerbs, CountsObjectsAndDestroysBeforeTheirChildren) {
  FakeFabric fabric;
  {
    RawQp a(fabric, 4);
    EXPECT_EQ(fabric.live_objects(), 10u);
  }
  EXPECT_EQ(fabric.live_objects(), 0u);
  EXPECT_EQ(fabric.counters().destroy_errors, 0u);
  auto v = fabric.add_host();
  std::unique_ptr<Device> dev;
  std::unique_ptr<Pd> pd;
  ASSERT_TRUE(v->open_device("mlx5_0", dev).is_ok());
  ASSERT_TRUE(v->alloc_pd(*dev, pd).is_ok());
  dev.reset();  // before its PD: EBUSY on hardware
  EXPECT_EQ(fabric.counters().destroy_errors, 1u);
}

}  // namespace
}  // namespace mccl::transport::ibud
