#include "launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "bootstrap/secret.h"

namespace mccl::launch {

namespace {
// How long the other ranks may go on after one failed: long enough for them
// to report their own error (a peer failure arrives within milliseconds).
constexpr auto kFailureGrace = std::chrono::seconds(10);
// How long ranks may take to end after the launcher passed them a signal,
// before they are killed.
constexpr auto kSignalGrace = std::chrono::seconds(2);

// The signals that stop a job from outside: Ctrl-C, timeout(1), kill, a
// closed terminal. Each rank runs in a process group of its own (so that a
// failed rank's children die with it), which is also why the terminal's
// Ctrl-C and timeout(1)'s SIGTERM reach only the launcher: it holds them
// blocked while the job runs, takes them with sigtimedwait, and passes
// them on to every rank. Without that, a launcher stopped so leaves its
// ranks running (and spinning) with no parent.
class StopSignals {
 public:
  StopSignals() {
    sigemptyset(&stop_);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&stop_, s);
    pthread_sigmask(SIG_BLOCK, &stop_, &before_);
  }
  ~StopSignals() { pthread_sigmask(SIG_SETMASK, &before_, nullptr); }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // In a forked child before exec: the program starts with the signal mask
  // the launcher's caller had.
  void restore_in_child() const { sigprocmask(SIG_SETMASK, &before_, nullptr); }

  // Waits up to `d` for one of them; returns it, or 0.
  int wait_for(std::chrono::milliseconds d) const {
    const timespec ts{static_cast<time_t>(d.count() / 1000),
                      static_cast<long>(d.count() % 1000) * 1000000L};
    const int s = sigtimedwait(&stop_, nullptr, &ts);
    return s > 0 ? s : 0;
  }

 private:
  sigset_t stop_{};
  sigset_t before_{};
};

// Collects the exit codes of the ranks not yet `done`, passing again every
// 5 ms until none is left or `until` (once, for a time already past);
// returns how many are still running.
int reap_until(const std::vector<pid_t>& pids, std::vector<bool>& done, JobResult& job,
               std::chrono::steady_clock::time_point until) {
  for (;;) {
    int left = 0;
    for (std::size_t r = 0; r < pids.size(); ++r) {
      int status = 0;
      if (done[r]) continue;
      if (waitpid(pids[r], &status, WNOHANG) != pids[r]) {
        ++left;
        continue;
      }
      done[r] = true;
      job.ranks[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    if (left == 0 || std::chrono::steady_clock::now() >= until) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}
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
  const StopSignals stop;
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    std::string out = dir + "/rank" + std::to_string(r);
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      stop.restore_in_child();
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
  std::vector<bool> done(ranks, false);
  std::chrono::steady_clock::time_point failed_at{};
  const auto stop_all = [&](int signal) {
    for (int r = 0; r < ranks; ++r) {
      if (!done[r]) kill(-pids[r], signal);
    }
  };
  while (reap_until(pids, done, job, {}) > 0) {
    const auto now = std::chrono::steady_clock::now();
    const bool late = now - t0 > deadline;
    // A failed rank leaves the others waiting for it until their own
    // timeouts: stop them after a grace period instead.
    bool failed = false;
    for (int r = 0; r < ranks; ++r) failed = failed || (done[r] && job.ranks[r].exit_code != 0);
    if (failed && failed_at == std::chrono::steady_clock::time_point{}) failed_at = now;
    const bool give_up = failed && now - failed_at > kFailureGrace;
    if (late || give_up) {
      job.timed_out = late;
      stop_all(SIGKILL);
      (void)reap_until(pids, done, job, std::chrono::steady_clock::time_point::max());
      break;
    }
    if (const int signal = stop.wait_for(std::chrono::milliseconds(5)); signal != 0) {
      job.stopped_by = signal;
      stop_all(signal);
      if (reap_until(pids, done, job, std::chrono::steady_clock::now() + kSignalGrace) > 0) {
        stop_all(SIGKILL);
        (void)reap_until(pids, done, job, std::chrono::steady_clock::time_point::max());
      }
      break;
    }
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
