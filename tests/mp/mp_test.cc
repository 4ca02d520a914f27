// Multi-process tests: 2-8 processes on this host over UDP loopback
// multicast and the TCP reliable transport, bootstrapped by the TCP store,
// under every progress engine (inline, thread, offload), with and without
// injected loss.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>

#include "launcher.h"

namespace mccl::testing {
using namespace mccl::launch;
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

// The sum over every rank's output of each number that follows `key`
// (e.g. "repairs_requested=" in the workers' stats lines).
std::uint64_t total_counter(const JobResult& job, const std::string& key) {
  std::uint64_t total = 0;
  for (const auto& rank : job.ranks) {
    for (auto at = rank.output.find(key); at != std::string::npos;
         at = rank.output.find(key, at + key.size())) {
      total += std::strtoull(rank.output.c_str() + at + key.size(), nullptr, 10);
    }
  }
  return total;
}

using SweepParam = std::tuple<int, const char*, int>;  // ranks, progress, drop per mille
class MultiProcess : public ::testing::TestWithParam<SweepParam> {};

TEST_P(MultiProcess, SweepIsByteExact) {
  auto [ranks, progress, drop] = GetParam();
  Env env = {{"MCCL_PROGRESS", progress},
             {"MCCL_UDP_TEST_DROP_PERMILLE", std::to_string(drop)},
             {"MCCL_COLL_TIMEOUT_MS", "30000"}};
  JobResult job = run_job(MCCL_MP_WORKER, {"sweep"}, ranks, env, std::chrono::seconds(120));
  ASSERT_FALSE(job.timed_out) << describe(job);
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(job.ranks[r].exit_code, 0) << describe(job);
  if (drop > 0) {
    // Loss was injected, so repairs must have happened somewhere: the
    // counter is printed whatever its value, so its number is what counts.
    EXPECT_GT(total_counter(job, "repairs_requested="), 0u) << describe(job);
  }
}

// Stable test names ("n4_thread_drop10"): the default prints the string's address.
std::string sweep_name(const ::testing::TestParamInfo<SweepParam>& param) {
  const auto& [ranks, progress, drop] = param.param;
  return "n" + std::to_string(ranks) + "_" + progress + "_drop" + std::to_string(drop);
}

INSTANTIATE_TEST_SUITE_P(Loopback, MultiProcess,
                         ::testing::Values(SweepParam{2, "inline", 0}, SweepParam{3, "thread", 0},
                                           SweepParam{4, "inline", 10}, SweepParam{4, "thread", 10},
                                           SweepParam{5, "thread", 0}, SweepParam{8, "thread", 10},
                                           SweepParam{3, "offload", 0},
                                           SweepParam{4, "offload", 10}),
                         sweep_name);

// The same sweep with UCX as the reliable transport (over tcp on lo: UCX
// refuses shared memory when peer failures must be detected).
TEST(MultiProcessUcx, SweepIsByteExact) {
  for (const char* progress : {"inline", "thread"}) {
    Env env = {{"MCCL_PROGRESS", progress},
               {"MCCL_RELIABLE", "ucx"},
               {"UCX_TLS", "tcp"},
               {"UCX_NET_DEVICES", "lo"},
               {"MCCL_UDP_TEST_DROP_PERMILLE", "10"}};
    JobResult job = run_job(MCCL_MP_WORKER, {"sweep"}, 3, env, std::chrono::seconds(120));
    ASSERT_FALSE(job.timed_out) << describe(job);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(job.ranks[r].exit_code, 0) << progress << describe(job);
  }
}

TEST(MultiProcessFailure, KilledRankGivesPeerFailureEverywhere) {
  const int ranks = 4;
  // Under the offload engine the dying process's daemon session is what
  // must turn its exit into the peers' error.
  for (const char* progress : {"thread", "offload"}) {
    // The daemon keeps its log when a client vanished: not wanted here.
    Env env = {{"MCCL_PROGRESS", progress},
               {"MCCL_COLL_TIMEOUT_MS", "20000"},
               {"MCCL_OFFLOAD_LOG", "/dev/null"}};
    JobResult job = run_job(MCCL_MP_WORKER, {"die", "2"}, ranks, env, std::chrono::seconds(60));
    ASSERT_FALSE(job.timed_out) << progress << describe(job);
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(job.ranks[r].exit_code, 0) << progress << describe(job);
      // The error arrives (well before the 20 s collective timeout, or the
      // job would have been killed) and names the dead rank.
      if (r != 2) {
        EXPECT_NE(job.ranks[r].output.find("rank 2"), std::string::npos) << describe(job);
      }
    }
    std::printf("%s", describe(job).c_str());
  }
}

}  // namespace
}  // namespace mccl::testing
