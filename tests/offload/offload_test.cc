// Multi-process tests of the offloaded progress engine: 1-4 application
// processes on this host share one mccl_offloadd, which runs their
// collectives over UDP loopback multicast and TCP. Byte-exact sweeps, a
// killed daemon (the applications get an error, never a hang), a client
// that dies (its peers get an error; the daemon exits once every client
// has gone) and the idle exit of a daemon no client ever reached.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "launcher.h"

namespace mccl::testing {
using namespace mccl::launch;
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

// Every socket path a test used; its log (and any lock or socket a killed
// daemon left) is removed when the tests end.
std::vector<std::string>& used_paths() {
  static std::vector<std::string> paths;
  return paths;
}

class RemoveFiles : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const auto& p : used_paths()) {
      for (const char* suffix : {"", ".lock", ".log"}) std::remove((p + suffix).c_str());
    }
  }
};
[[maybe_unused]] const auto* const kRemoveFiles =
    ::testing::AddGlobalTestEnvironment(new RemoveFiles);

std::string socket_path(const std::string& name) {
  std::string p = "/tmp/mccl-offload-test-" + std::to_string(::getpid()) + "-" + name + ".sock";
  used_paths().push_back(p);
  return p;
}

Env offload_env(const std::string& sock, int drop = 0) {
  return {{"MCCL_OFFLOAD_DAEMON", MCCL_OFFLOADD},
          {"MCCL_OFFLOAD_SOCKET", sock},
          {"MCCL_UDP_TEST_DROP_PERMILLE", std::to_string(drop)},
          {"MCCL_COLL_TIMEOUT_MS", "30000"}};
}

bool alive(int pid) {
  if (::kill(pid, 0) != 0) return false;
  // A zombie (reparented, not yet reaped) has exited too.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

// Every rank printed the same daemon pid; the daemon must be gone shortly
// after its last client.
void expect_daemon_exits(const JobResult& job) {
  std::regex re("daemon_pid=([0-9]+)");
  std::smatch m;
  const std::string out = job.ranks[0].output;
  ASSERT_TRUE(std::regex_search(out, m, re)) << describe(job);
  const int pid = std::stoi(m[1]);
  for (const auto& r : job.ranks) {
    EXPECT_NE(r.output.find("daemon_pid=" + m[1].str()), std::string::npos) << describe(job);
  }
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (alive(pid) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(alive(pid)) << "daemon " << pid << " still running after its clients left";
}

using SweepParam = std::tuple<int, int>;  // ranks, drop per mille
class OffloadSweep : public ::testing::TestWithParam<SweepParam> {};

TEST_P(OffloadSweep, ByteExactThroughTheDaemon) {
  auto [ranks, drop] = GetParam();
  const std::string sock =
      socket_path("sweep" + std::to_string(ranks) + "_" + std::to_string(drop));
  JobResult job = run_job(MCCL_OFFLOAD_WORKER, {"sweep"}, ranks, offload_env(sock, drop),
                          std::chrono::seconds(240));
  ASSERT_FALSE(job.timed_out) << describe(job);
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(job.ranks[r].exit_code, 0) << describe(job);
  expect_daemon_exits(job);
}

// The same sweep on shared buffers (OffloadComm::allocate): the daemon
// runs the collectives in place, with loss.
TEST(OffloadZeroCopy, ByteExactOnSharedBuffers) {
  const int ranks = 3;
  JobResult job = run_job(MCCL_OFFLOAD_WORKER, {"sweep-shm"}, ranks,
                          offload_env(socket_path("shm"), 10), std::chrono::seconds(240));
  ASSERT_FALSE(job.timed_out) << describe(job);
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(job.ranks[r].exit_code, 0) << describe(job);
  expect_daemon_exits(job);
}

// The public API: MCCL_PROGRESS=offload with Communicator::allocate.
TEST(OffloadZeroCopy, PublicApiOnAllocatedBuffers) {
  const int ranks = 3;
  Env env = offload_env(socket_path("api"), 10);
  env.push_back({"MCCL_PROGRESS", "offload"});
  JobResult job = run_job(MCCL_OFFLOAD_WORKER, {"api-shm"}, ranks, env, std::chrono::seconds(120));
  ASSERT_FALSE(job.timed_out) << describe(job);
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(job.ranks[r].exit_code, 0) << describe(job);
}

// The daemon runs UDP + TCP only: asking for InfiniBand under the offload
// engine is refused with an error naming the setting, not ignored.
TEST(OffloadErrors, OtherTransportsAreRefusedClearly) {
  Env env = offload_env(socket_path("ib"));
  env.push_back({"MCCL_PROGRESS", "offload"});
  env.push_back({"MCCL_TRANSPORT", "ib"});
  JobResult job = run_job(MCCL_OFFLOAD_WORKER, {"api-shm"}, 2, env, std::chrono::seconds(60));
  ASSERT_FALSE(job.timed_out) << describe(job);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(job.ranks[r].exit_code, 3) << describe(job);
    EXPECT_NE(job.ranks[r].output.find("rank " + std::to_string(r) + ": MCCL_PROGRESS=offload"),
              std::string::npos)
        << describe(job);
    EXPECT_NE(job.ranks[r].output.find("MCCL_TRANSPORT"), std::string::npos) << describe(job);
  }
}

INSTANTIATE_TEST_SUITE_P(Loopback, OffloadSweep,
                         ::testing::Values(SweepParam{1, 0}, SweepParam{2, 0}, SweepParam{3, 0},
                                           SweepParam{4, 10}));

TEST(OffloadFailure, KilledDaemonFailsTheApplicationsQuickly) {
  const int ranks = 3;
  JobResult job = run_job(MCCL_OFFLOAD_WORKER, {"kill-daemon"}, ranks,
                          offload_env(socket_path("killd")), std::chrono::seconds(60));
  ASSERT_FALSE(job.timed_out) << describe(job);
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(job.ranks[r].exit_code, 0) << describe(job);
  std::printf("%s", describe(job).c_str());
}

TEST(OffloadFailure, StoppedDaemonGivesATimeoutThenAnError) {
  const int ranks = 2;
  JobResult job = run_job(MCCL_OFFLOAD_WORKER, {"stop-daemon"}, ranks,
                          offload_env(socket_path("stopd")), std::chrono::seconds(60));
  ASSERT_FALSE(job.timed_out) << describe(job);
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(job.ranks[r].exit_code, 0) << describe(job);
}

TEST(OffloadFailure, DeadClientIsReleasedAndTheDaemonExits) {
  const int ranks = 3;
  JobResult job = run_job(MCCL_OFFLOAD_WORKER, {"die", "1"}, ranks, offload_env(socket_path("die")),
                          std::chrono::seconds(60));
  ASSERT_FALSE(job.timed_out) << describe(job);
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(job.ranks[r].exit_code, 0) << describe(job);
  expect_daemon_exits(job);
  std::printf("%s", describe(job).c_str());
}

// Started beforehand (as a service manager would): the job uses it, starts
// none of its own (the binary it would start does not exist), and the
// daemon exits after its last client.
TEST(OffloadDaemon, StartedBeforehandServesTheJobThenExits) {
  const std::string sock = socket_path("pre");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string arg = "--socket=" + sock;
    ::execl(MCCL_OFFLOADD, MCCL_OFFLOADD, arg.c_str(), "--idle-timeout-ms=30000",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  Env env = offload_env(sock);
  env[0].second = "/nonexistent/mccl_offloadd";
  JobResult job = run_job(MCCL_OFFLOAD_WORKER, {"sweep"}, 2, env, std::chrono::seconds(120));
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 500 && done == 0; ++i) {
    done = ::waitpid(pid, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  ASSERT_FALSE(job.timed_out) << describe(job);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(job.ranks[r].exit_code, 0) << describe(job);
    EXPECT_NE(job.ranks[r].output.find("daemon_pid=" + std::to_string(pid)), std::string::npos)
        << describe(job);
  }
  EXPECT_NE(done, 0) << "the daemon started beforehand did not exit after its clients left";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(OffloadDaemon, ExitsWhenNoClientComes) {
  const std::string cmd = std::string("timeout 20 ") + MCCL_OFFLOADD +
                          " --socket=" + socket_path("idle") + " --idle-timeout-ms=300 2>/dev/null";
  // 0, not timeout's 124: the daemon left by itself once idle, not killed.
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

TEST(OffloadDaemon, SelfTest) {
  const std::string cmd = std::string("timeout 30 ") + MCCL_OFFLOADD + " --self-test";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

TEST(OffloadDaemon, SimSelfTest) {
  const std::string cmd = std::string("timeout 60 ") + MCCL_OFFLOADD + " --self-test-sim";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

TEST(OffloadDaemon, RingsSelfTest) {
  const std::string cmd = std::string("timeout 30 ") + MCCL_OFFLOADD + " --self-test-rings";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

}  // namespace
}  // namespace mccl::testing
