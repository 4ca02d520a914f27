// The reductions through the C API (mccl/mccl.h only, as a C program would
// use them): blocking and nonblocking forms, the allreduce algorithm option,
// and the argument checks.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "mccl/mccl.h"

namespace {

#define EXPECT_MCCL_OK(call) EXPECT_EQ((call), MCCL_OK) << mccl_last_error()
#define ASSERT_MCCL_OK(call) ASSERT_EQ((call), MCCL_OK) << mccl_last_error()

void run_ranks(int n, int32_t allreduce_algorithm,
               const std::function<void(mccl_comm_t, int)>& body) {
  mccl_world_t world = nullptr;
  mccl_sim_options_t sim = MCCL_SIM_OPTIONS_INIT;
  sim.loss = 0.05;
  sim.seed = 11;
  ASSERT_MCCL_OK(mccl_world_create(n, &sim, &world));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      mccl_comm_options_t opts = MCCL_COMM_OPTIONS_INIT;
      opts.timeout_ms = 20000;
      opts.allreduce_algorithm = allreduce_algorithm;
      mccl_comm_t comm = nullptr;
      ASSERT_MCCL_OK(mccl_comm_create_inprocess(world, r, &opts, &comm));
      body(comm, r);
      EXPECT_MCCL_OK(mccl_comm_destroy(comm));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_MCCL_OK(mccl_world_destroy(world));
}

class CApiReduce : public ::testing::TestWithParam<int32_t> {};

TEST_P(CApiReduce, AllreduceAndReduceScatterOfIntegers) {
  const int n = 3;
  const size_t count = 10007;
  run_ranks(n, GetParam(), [&](mccl_comm_t comm, int r) {
    std::vector<int64_t> send(count), recv(count);
    for (size_t i = 0; i < count; ++i) send[i] = static_cast<int64_t>(i) * (r + 1);
    EXPECT_MCCL_OK(mccl_allreduce(comm, send.data(), recv.data(), count, MCCL_INT64, MCCL_SUM));
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(recv[i], static_cast<int64_t>(i) * 6) << i;

    // In place, nonblocking.
    std::vector<int32_t> v(count, r + 1);
    mccl_request_t req = nullptr;
    ASSERT_MCCL_OK(
        mccl_iallreduce(comm, MCCL_IN_PLACE, v.data(), count, MCCL_INT32, MCCL_PROD, &req));
    EXPECT_MCCL_OK(mccl_wait(req, -1));
    EXPECT_MCCL_OK(mccl_request_free(req));
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(v[i], 6) << i;

    // reduce_scatter: block b of rank r holds b + 10 r; rank r gets 3 r + 30.
    std::vector<uint8_t> rs_send(n * 100), rs_recv(100);
    for (int b = 0; b < n; ++b) {
      for (int i = 0; i < 100; ++i) rs_send[b * 100 + i] = static_cast<uint8_t>(b + 10 * r);
    }
    EXPECT_MCCL_OK(
        mccl_reduce_scatter(comm, rs_send.data(), rs_recv.data(), 100, MCCL_UINT8, MCCL_SUM));
    for (int i = 0; i < 100; ++i) ASSERT_EQ(rs_recv[i], 3 * r + 30) << i;

    // reduce_scatterv, nonblocking: the counts array need not outlive the call.
    std::vector<float> fs(6, 1.0f), fr(3);
    {
      std::vector<size_t> counts{1, 2, 3};
      ASSERT_MCCL_OK(mccl_ireduce_scatterv(comm, fs.data(), fr.data(), counts.data(), MCCL_FLOAT32,
                                           MCCL_MAX, &req));
    }
    EXPECT_MCCL_OK(mccl_wait(req, -1));
    EXPECT_MCCL_OK(mccl_request_free(req));
    for (int i = 0; i <= r; ++i) EXPECT_EQ(fr[i], 1.0f);
  });
}

INSTANTIATE_TEST_SUITE_P(Algorithms, CApiReduce,
                         ::testing::Values(MCCL_ALLREDUCE_ALGO_UNSET, MCCL_ALLREDUCE_ALGO_RS_MCAST,
                                           MCCL_ALLREDUCE_ALGO_RING,
                                           MCCL_ALLREDUCE_ALGO_RECURSIVE_DOUBLING));

TEST(CApiReduceErrors, BadArgumentsAreInvalid) {
  run_ranks(1, MCCL_ALLREDUCE_ALGO_UNSET, [](mccl_comm_t comm, int) {
    float x = 1, y = 0;
    EXPECT_EQ(mccl_allreduce(comm, &x, &y, 1, static_cast<mccl_datatype_t>(42), MCCL_SUM),
              MCCL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mccl_last_error()).find("datatype 42"), std::string::npos)
        << mccl_last_error();
    EXPECT_EQ(mccl_allreduce(comm, &x, &y, 1, MCCL_FLOAT32, static_cast<mccl_reduce_op_t>(9)),
              MCCL_INVALID_ARGUMENT);
    EXPECT_EQ(mccl_allreduce(comm, nullptr, &y, 1, MCCL_FLOAT32, MCCL_SUM), MCCL_INVALID_ARGUMENT);
    EXPECT_EQ(mccl_reduce_scatter(comm, MCCL_IN_PLACE, &y, 1, MCCL_FLOAT32, MCCL_SUM),
              MCCL_INVALID_ARGUMENT);
    EXPECT_EQ(mccl_reduce_scatterv(comm, &x, &y, nullptr, MCCL_FLOAT32, MCCL_SUM),
              MCCL_INVALID_ARGUMENT);
    EXPECT_EQ(mccl_iallreduce(comm, &x, &y, 1, MCCL_FLOAT32, MCCL_SUM, nullptr),
              MCCL_INVALID_ARGUMENT);
    EXPECT_EQ(mccl_allreduce(nullptr, &x, &y, 1, MCCL_FLOAT32, MCCL_SUM), MCCL_INVALID_ARGUMENT);
    // One rank: the identity, whatever the op.
    EXPECT_MCCL_OK(mccl_allreduce(comm, &x, &y, 1, MCCL_FLOAT32, MCCL_PROD));
    EXPECT_EQ(y, 1.0f);
  });
  mccl_world_t world = nullptr;
  ASSERT_MCCL_OK(mccl_world_create(1, nullptr, &world));
  mccl_comm_options_t opts = MCCL_COMM_OPTIONS_INIT;
  opts.allreduce_algorithm = 5;
  mccl_comm_t comm = nullptr;
  EXPECT_EQ(mccl_comm_create_inprocess(world, 0, &opts, &comm), MCCL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mccl_last_error()).find("allreduce_algorithm"), std::string::npos);
  opts.allreduce_algorithm = MCCL_ALLREDUCE_ALGO_UNSET;
  opts.reduce_scatter_send_share = 1.5;
  EXPECT_EQ(mccl_comm_create_inprocess(world, 0, &opts, &comm), MCCL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mccl_last_error()).find("reduce_scatter_send_share"), std::string::npos)
      << mccl_last_error();
  opts.reduce_scatter_send_share = 0.25;
  ASSERT_MCCL_OK(mccl_comm_create_inprocess(world, 0, &opts, &comm));
  EXPECT_MCCL_OK(mccl_comm_destroy(comm));
  EXPECT_MCCL_OK(mccl_world_destroy(world));
}

}  // namespace
