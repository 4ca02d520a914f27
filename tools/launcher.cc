#include "launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "bootstrap/secret.h"

namespace mccl::launch {

namespace {
// How long the other ranks may go on after one failed: long enough for them
// to report their own error (a peer failure arrives within milliseconds).
constexpr auto kFailureGrace = std::chrono::seconds(10);
}  // namespace

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

std::string describe(const JobResult& job) {
  std::string s;
  for (std::size_t r = 0; r < job.ranks.size(); ++r) {
    s += "--- rank " + std::to_string(r) + " exit " + std::to_string(job.ranks[r].exit_code) +
         "\n" + job.ranks[r].output;
  }
  return s;
}

JobResult run_job(const std::string& program, const std::vector<std::string>& args, int ranks,
                  const std::vector<std::pair<std::string, std::string>>& env,
                  std::chrono::seconds deadline, bool capture) {
  const std::string addr = "127.0.0.1:" + std::to_string(free_port());
  // Only these ranks can join the store (docs/security.md); empty without
  // randomness, when rank 0 generates one for them on this host.
  const std::string secret = bootstrap::random_secret();
  char dir_template[] = "/tmp/mccl-mp-XXXXXX";
  std::string dir = mkdtemp(dir_template);
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    std::string out = dir + "/rank" + std::to_string(r);
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      if (capture) {
        std::FILE* f = std::freopen(out.c_str(), "w", stdout);
        if (f == nullptr) _exit(120);
        dup2(fileno(stdout), STDERR_FILENO);
      }
      setenv("MCCL_BOOTSTRAP_ADDR", addr.c_str(), 1);
      setenv("MCCL_RANK", std::to_string(r).c_str(), 1);
      setenv("MCCL_WORLD_SIZE", std::to_string(ranks).c_str(), 1);
      if (!secret.empty()) setenv("MCCL_BOOTSTRAP_SECRET", secret.c_str(), 1);
      for (auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> argv{const_cast<char*>(program.c_str())};
      for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(program.c_str(), argv.data());
      _exit(127);
    }
    pids.push_back(pid);
  }
  JobResult job;
  job.ranks.resize(ranks);
  const auto t0 = std::chrono::steady_clock::now();
  int left = ranks;
  std::vector<bool> done(ranks, false);
  bool failed = false;
  std::chrono::steady_clock::time_point failed_at{};
  while (left > 0) {
    for (int r = 0; r < ranks; ++r) {
      if (done[r]) continue;
      int status = 0;
      if (waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        done[r] = true;
        --left;
        job.ranks[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        failed = failed || job.ranks[r].exit_code != 0;
      }
    }
    const bool late = std::chrono::steady_clock::now() - t0 > deadline;
    // A failed rank leaves the others waiting for it until their own
    // timeouts: stop them after a grace period instead.
    if (failed && failed_at == std::chrono::steady_clock::time_point{}) {
      failed_at = std::chrono::steady_clock::now();
    }
    const bool give_up = failed && std::chrono::steady_clock::now() - failed_at > kFailureGrace;
    if (left > 0 && (late || give_up)) {
      job.timed_out = late;
      for (int r = 0; r < ranks; ++r) {
        if (!done[r]) kill(-pids[r], SIGKILL);
      }
      for (int r = 0; r < ranks; ++r) {
        if (!done[r]) waitpid(pids[r], nullptr, 0);
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  job.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int r = 0; r < ranks && capture; ++r) {
    std::string out = dir + "/rank" + std::to_string(r);
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    job.ranks[r].output = ss.str();
    std::remove(out.c_str());
  }
  rmdir(dir.c_str());
  return job;
}

}  // namespace mccl::launch
