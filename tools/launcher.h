// Runs N copies of a program as the ranks of one job on this host, joined
// by the TCP-store bootstrap on a free loopback port; collects their exit
// codes (and, if asked, their output); kills all of them at a deadline, or
// as soon as one fails, and passes a signal that stops the launcher on to
// them. Used by mccl_run and the multi-process tests.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace mccl::launch {

struct RankResult {
  int exit_code = -1;  // -1: killed at the deadline or by a signal
  std::string output;  // stdout and stderr, when captured
};

struct JobResult {
  std::vector<RankResult> ranks;
  bool timed_out = false;
  // The signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) that stopped the job from
  // outside, 0 if none: run_job passed it to every rank, killed those still
  // running 2 s later, and returned.
  int stopped_by = 0;
  double seconds = 0;
};

// With `capture` false the ranks write to this process's stdout/stderr.
JobResult run_job(const std::string& program, const std::vector<std::string>& args, int ranks,
                  const std::vector<std::pair<std::string, std::string>>& env,
                  std::chrono::seconds deadline, bool capture = true);

// Every rank's exit code and captured output, for test failure messages.
std::string describe(const JobResult& job);

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_port();

}  // namespace mccl::launch
