// Bad input to the reductions: invalid arguments throw on the calling rank
// before anything starts; arguments that disagree between ranks (counts,
// datatype, op, algorithm) end in kMismatch on every rank, never a hang.
// Each runs under every progress engine (EngineTest).
#include <gtest/gtest.h>

#include <thread>

#include "harness.h"

namespace mccl::testing {
namespace {

using namespace std::chrono_literals;

constexpr DataType kF32 = DataType::kFloat32;
constexpr ReduceOp kSum = ReduceOp::kSum;

using ReduceInvalidArgument = EngineTest;

TEST_P(ReduceInvalidArgument, NamesTheProblem) {
  InProcessWorld world(3);
  auto comms = create_communicators(world, options());
  std::vector<float> send(300), recv(100);
  std::string msg;
  auto& c = comms[1];
  EXPECT_EQ(
      code_of([&] { c.reduce_scatter(send.data(), recv.data(), 100, DataType(9), kSum); }, &msg),
      ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("datatype 9"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 1"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { c.allreduce(send.data(), recv.data(), 100, kF32, ReduceOp(-1)); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("reduction op -1"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { c.reduce_scatter(nullptr, recv.data(), 100, kF32, kSum); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("send buffer is null"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { c.reduce_scatter(send.data(), nullptr, 100, kF32, kSum); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("receive buffer is null"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { c.reduce_scatter(kInPlace, recv.data(), 100, kF32, kSum); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("kInPlace"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { c.reduce_scatter(send.data(), send.data() + 50, 50, kF32, kSum); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("overlap"), std::string::npos) << msg;
  std::vector<std::size_t> two{1, 2};
  EXPECT_EQ(code_of([&] { c.reduce_scatterv(send.data(), recv.data(), two, kF32, kSum); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("3 entries"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { c.allreduce(nullptr, recv.data(), 10, kF32, kSum); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { c.allreduce(send.data(), send.data() + 5, 10, kF32, kSum); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("overlap"), std::string::npos) << msg;
  // Zero elements with null buffers is fine. Fresh communicators: each
  // refused call above counts as rank 1's part of a collective the other
  // ranks never called.
  auto fresh = create_communicators(world, options());
  run_on_threads(fresh, [](Communicator& comm) {
    comm.reduce_scatter(nullptr, nullptr, 0, kF32, kSum);
    comm.allreduce(nullptr, nullptr, 0, DataType::kInt64, ReduceOp::kMax);
    float x = 1.0f;
    comm.allreduce(kInPlace, &x, 1, kF32, kSum);
    EXPECT_EQ(x, 3.0f);
  });
}

// Every rank fails with kMismatch; with `must_say`, every rank's message
// names the argument that differs (the detecting rank's text reaches all).
class ReduceMismatch : public EngineTest {
 protected:
  void expect_mismatch_everywhere(int n, const CommOptions& opts,
                                  const std::function<void(Communicator&)>& bad_call,
                                  const char* must_say = nullptr);
};

void ReduceMismatch::expect_mismatch_everywhere(int n, const CommOptions& opts,
                                                const std::function<void(Communicator&)>& bad_call,
                                                const char* must_say) {
  mirror_loss(0.05);
  InProcessWorld world(n, {.loss = 0.05, .seed = 37});
  CommOptions o = options(opts);
  o.timeout = 20s;
  auto comms = create_communicators(world, o);
  std::vector<ErrorCode> first(n, ErrorCode::kOk), second(n, ErrorCode::kOk);
  std::vector<std::string> msgs(n);
  run_on_threads(comms, [&](Communicator& c) {
    const int r = c.rank();
    first[r] = code_of([&] { bad_call(c); }, &msgs[r]);
    second[r] = code_of([&] { c.barrier(); }, first[r] == ErrorCode::kOk ? &msgs[r] : nullptr);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(first[r] == ErrorCode::kMismatch || second[r] == ErrorCode::kMismatch)
        << "rank " << r << ": " << to_string(first[r]) << " / " << to_string(second[r]) << ": "
        << msgs[r];
    if (must_say != nullptr) {
      EXPECT_NE(msgs[r].find(must_say), std::string::npos) << "rank " << r << ": " << msgs[r];
    }
  }
}

TEST_P(ReduceMismatch, ReduceScatterCountsDiffer) {
  expect_mismatch_everywhere(
      5, {},
      [](Communicator& c) {
        const std::size_t count = c.rank() == 2 ? 900 : 1000;
        std::vector<float> send(count * 5), recv(count);
        c.reduce_scatter(send.data(), recv.data(), count, kF32, kSum);
      },
      "passed other counts");
}

TEST_P(ReduceMismatch, ReduceScatterZeroAgainstNonzero) {
  // Rank 3 thinks there is nothing to reduce: it must still find out.
  expect_mismatch_everywhere(
      4, {},
      [](Communicator& c) {
        const std::size_t count = c.rank() == 3 ? 0 : 10;
        std::vector<float> send(40), recv(10);
        c.reduce_scatter(send.data(), recv.data(), count, kF32, kSum);
      },
      "passed other counts");
}

TEST_P(ReduceMismatch, ReduceScattervCountsDisagree) {
  expect_mismatch_everywhere(3, {}, [](Communicator& c) {
    std::vector<std::size_t> counts{100, 200, 300};
    if (c.rank() == 0) counts = {100, 300, 200};
    std::vector<float> send(600), recv(300);
    c.reduce_scatterv(send.data(), recv.data(), counts, kF32, kSum);
  });
}

TEST_P(ReduceMismatch, DatatypesDiffer) {
  expect_mismatch_everywhere(
      3, {},
      [](Communicator& c) {
        std::vector<std::int32_t> send(3000), recv(1000);
        c.reduce_scatter(send.data(), recv.data(), 1000, c.rank() == 1 ? DataType::kInt32 : kF32,
                         kSum);
      },
      "passed datatype");
}

TEST_P(ReduceMismatch, AllreduceOpsDiffer) {
  for (auto algo : {AllreduceAlgorithm::kRsMulticast, AllreduceAlgorithm::kRing,
                    AllreduceAlgorithm::kRecursiveDoubling}) {
    SCOPED_TRACE(static_cast<int>(algo));
    expect_mismatch_everywhere(
        5, {.allreduce_algorithm = algo},
        [](Communicator& c) {
          std::vector<float> send(5000), recv(5000);
          c.allreduce(send.data(), recv.data(), 5000, kF32, c.rank() == 4 ? ReduceOp::kMax : kSum);
        },
        "passed op");
  }
}

TEST_P(ReduceMismatch, AllreduceCountsDiffer) {
  expect_mismatch_everywhere(
      6, {},
      [](Communicator& c) {
        const std::size_t count = c.rank() == 0 ? 100000 : 100001;
        std::vector<double> send(count), recv(count);
        c.allreduce(send.data(), recv.data(), count, DataType::kFloat64, kSum);
      },
      "passed other counts");
}

TEST_P(ReduceMismatch, EmptyAllreduceDatatypesDiffer) {
  expect_mismatch_everywhere(
      4, {},
      [](Communicator& c) {
        c.allreduce(nullptr, nullptr, 0, c.rank() == 2 ? DataType::kUInt8 : kF32, kSum);
      },
      "passed datatype");
}

TEST_P(ReduceMismatch, ReduceScatterAgainstAllreduce) {
  expect_mismatch_everywhere(
      3, {},
      [](Communicator& c) {
        std::vector<float> send(3000), recv(3000);
        if (c.rank() == 0) {
          c.allreduce(send.data(), recv.data(), 3000, kF32, kSum);
        } else {
          c.reduce_scatter(send.data(), recv.data(), 1000, kF32, kSum);
        }
      },
      "where this rank called");
}

TEST_P(ReduceMismatch, AllreduceAlgorithmsDiffer) {
  // A rank with another algorithm pinned is found out, not waited out.
  const int n = 4;
  InProcessWorld world(n, {.seed = 3});
  std::vector<Communicator> comms;
  std::vector<std::thread> threads;
  comms.reserve(n);
  std::vector<std::unique_ptr<Communicator>> made(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      auto boot = world.bootstrap(r);
      CommOptions o = options({.timeout = 20s});
      o.allreduce_algorithm = r == 1 ? AllreduceAlgorithm::kRing : AllreduceAlgorithm::kRsMulticast;
      made[r] = std::make_unique<Communicator>(*boot, o);
    });
  }
  for (auto& t : threads) t.join();
  for (auto& m : made) comms.push_back(std::move(*m));
  std::vector<ErrorCode> codes(n);
  run_on_threads(comms, [&](Communicator& c) {
    std::vector<float> send(40000), recv(40000);
    codes[c.rank()] = code_of([&] {
      c.allreduce(send.data(), recv.data(), 40000, kF32, kSum);
      c.barrier();
    });
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(codes[r], ErrorCode::kMismatch) << "rank " << r;
}

MCCL_TEST_EVERY_ENGINE(ReduceInvalidArgument);
MCCL_TEST_EVERY_ENGINE(ReduceMismatch);

}  // namespace
}  // namespace mccl::testing
