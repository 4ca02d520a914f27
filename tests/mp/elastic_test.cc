// Elastic membership with real processes (docs/elastic.md): 4 and 8
// processes on UDP loopback multicast and TCP; ranks SIGKILLed in the
// middle of a collective, rank 0 among them, and during a shrink
// (MCCL_TEST_KILL_AT); every survivor shrinks, redoes the step, and every
// step's state is checked bit for bit on every rank (tests/mp/
// elastic_worker.cc). Under every engine; under offload the daemon runs
// the protocol and the shrink, so the kill points reached there
// (datagrams:N, collective:N, shrink-agreed) do not apply.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "launcher.h"

namespace mccl::testing {
using namespace mccl::launch;
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

double number_after(const std::string& text, const std::string& key) {
  const auto at = text.find(key);
  return at == std::string::npos ? -1 : std::strtod(text.c_str() + at + key.size(), nullptr);
}

// The text after `key` up to the end of its line ("" when absent).
std::string rest_of_line(const std::string& text, const std::string& key) {
  const auto at = text.find(key);
  if (at == std::string::npos) return "";
  const auto from = at + key.size();
  return text.substr(from, text.find('\n', from) - from);
}

class Elastic : public ::testing::TestWithParam<const char*> {
 protected:
  bool offload() const { return std::string(GetParam()) == "offload"; }

  // Runs `ranks` workers for `steps` steps with `kills`; expects exactly
  // `dead` to have died and every other rank to finish on the survivors
  // with the same state. Prints how long each survivor took from the
  // kill at `step_victim` (-1: none timed) to holding its shrunk
  // communicator.
  void run(int ranks, int steps, const std::vector<std::string>& kills, std::set<int> dead,
           int step_victim, int final_size = -1, const std::string& pad = "allgather") {
    std::vector<std::string> args = {std::to_string(steps)};
    args.insert(args.end(), kills.begin(), kills.end());
    // A grow's rendezvous of this job's own: jobs of tests running beside
    // it take ports too.
    // The daemon keeps its log when a client vanished: not wanted here.
    const Env env = {{"MCCL_PROGRESS", GetParam()},
                     {"MCCL_COLL_TIMEOUT_MS", "20000"},
                     {"MCCL_OFFLOAD_LOG", "/dev/null"},
                     {"ELASTIC_PAD", pad},
                     {"ELASTIC_GROW_ADDR", "127.0.0.1:" + std::to_string(free_port())}};
    JobResult job = run_job(MCCL_ELASTIC_WORKER, args, ranks, env, std::chrono::seconds(120));
    ASSERT_FALSE(job.timed_out) << describe(job);
    if (final_size < 0) final_size = ranks - static_cast<int>(dead.size());
    const std::string done = "done: " + std::to_string(steps) + " steps on " +
                             std::to_string(final_size) + " ranks, state ";
    std::string state;
    const double killed_at =
        step_victim >= 0 ? number_after(job.ranks[step_victim].output, "killed at ") : -1;
    for (int r = 0; r < ranks; ++r) {
      if (dead.contains(r)) {
        EXPECT_EQ(job.ranks[r].output.find("done:"), std::string::npos) << describe(job);
        continue;
      }
      ASSERT_EQ(job.ranks[r].exit_code, 0) << describe(job);
      const std::string mine = rest_of_line(job.ranks[r].output, done);
      ASSERT_FALSE(mine.empty()) << describe(job);
      if (state.empty()) state = mine;
      EXPECT_EQ(mine, state) << "rank " << r << "\n" << describe(job);
      if (killed_at > 0) {
        const double shrunk_at = number_after(job.ranks[r].output, "shrunk at ");
        ASSERT_GT(shrunk_at, 0) << describe(job);
        std::printf(
            "%s: rank %d of %d held its shrunk communicator %.3f s after rank %d was "
            "killed\n",
            GetParam(), r, ranks, shrunk_at - killed_at, step_victim);
      }
    }
  }
};

TEST_P(Elastic, ARankKilledMidCollectiveIsShrunkAway) { run(4, 8, {"2@3"}, {2}, 2); }

// The victim dies in the middle of each kind of collective (the step's
// 1 MiB-per-rank one, ELASTIC_PAD), at 4 and 8 ranks.
TEST_P(Elastic, ARankKilledInEachCollectiveIsShrunkAway) {
  for (const char* pad : {"broadcast", "reduce_scatter", "allreduce", "allgather"}) {
    SCOPED_TRACE(pad);
    run(4, 3, {"1@1"}, {1}, 1, -1, pad);
    run(8, 3, {"6@1"}, {6}, 6, -1, pad);
  }
}

TEST_P(Elastic, EightRanksLoseRankZeroThenAnother) { run(8, 8, {"0@2", "5@5"}, {0, 5}, 0); }

// Two ranks die in the same collective, ring neighbours of one survivor.
TEST_P(Elastic, TwoRanksKilledInOneCollective) { run(8, 4, {"2@1", "4@1"}, {2, 4}, 2); }

TEST_P(Elastic, ARankKilledDuringTheShrinkIsAgreedOnAgain) {
  // Rank 1 dies at step 2; rank 3 dies in the shrink that follows, after
  // the agreement (its creation of the survivors' communicator fails) and
  // rank 0 in the next one, once that communicator exists.
  // Under offload the agreement runs in the daemon, which the hook never
  // kills; shrink-created is reached in the application process.
  if (!offload()) run(5, 6, {"1@2", "3@shrink-agreed"}, {1, 3}, -1);
  run(5, 6, {"1@2", "0@shrink-created"}, {0, 1}, -1);
}

// Rank 1 of the first three dies at step 2; at step 4 the two survivors
// grow with the job's last two processes, which get the state by
// broadcast; all four finish with the same state.
TEST_P(Elastic, SurvivorsGrowWithReplacements) { run(5, 8, {"1@2", "join:2@4"}, {1}, -1, 4); }

// Deterministic deaths (MCCL_TEST_KILL_AT, common/test_kill.h): rank 1
// dies once its roots have sent 60 datagrams (64 KB each on lo: inside the
// first step's 1 MiB allgather), rank 3 when it starts its 7th collective
// (the shrink's hand-over counted: right after the first shrink).
TEST_P(Elastic, RanksKilledAtACountedPoint) {
  if (offload()) {
    GTEST_SKIP() << "datagrams and collectives are counted where the protocol runs: under "
                    "offload, in the daemon, which the hook never kills";
  }
  run(5, 6, {"1@datagrams:60", "3@collective:7"}, {1, 3}, -1);
}

// A joiner dies as soon as the grown communicator exists: the members'
// and the other joiner's hand-over fails, they shrink the grown
// communicator, agree on the step and hand the state over again.
TEST_P(Elastic, AJoinerKilledDuringTheGrowIsShrunkAway) {
  run(5, 6, {"4@created", "join:2@2"}, {4}, -1, 4);
}

INSTANTIATE_TEST_SUITE_P(Engines, Elastic, ::testing::Values("inline", "thread", "offload"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           return std::string(p.param);
                         });

}  // namespace
}  // namespace mccl::testing
