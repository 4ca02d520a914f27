// The bounded soak: `ranks` ranks as threads of one process on the
// in-memory fabric with loss, two communicators, `ops` collectives of random
// kinds (broadcast, allgather, allgatherv, reduce-scatter, allreduce,
// barrier), sizes 0 B to --max-bytes and random roots, up to --window of
// them in flight per rank (nonblocking requests), every result checked; run
// once per progress engine (offload: the daemon's own process, on UDP
// loopback multicast, is not sampled). Fails when a result is wrong, a collective
// fails, or the process grows:
//  - from the sample after the first tenth of the run (allocator and
//    engines warm) to its end: descriptors by more than 2, threads at all,
//    mappings by more than 64, resident memory by more than 128 MiB (the
//    run's buffers alone reach ranks x window x 8 MiB; a leak of 16 KiB per
//    collective over 10,000 crosses the bound, smaller ones are LeakSanitizer's);
//  - from before the world to after it is destroyed (waiting up to 10 s for
//    lingering engines): descriptors and threads at all. (Mappings are not
//    compared there: glibc keeps its per-thread arenas and thread stacks.)
// Usage: mccl_soak [--ops N] [--engines inline,thread,offload] [--ranks N]
//                  [--window N] [--max-bytes N] [--loss P] [--seed N]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mccl/mccl.hpp"
#include "plan.h"
#include "resources.h"

namespace soak = mccl::soak;
using namespace std::chrono_literals;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

struct Config {
  std::uint64_t ops = 10000;
  std::vector<std::string> engines{"inline", "thread", "offload"};
  int ranks = 8;
  std::size_t window = 4;
  std::size_t max_bytes = 4 << 20;
  double loss = 0.01;
  std::uint64_t seed = 1;
};

struct Pending {
  soak::Step step;
  soak::Buffers buffers;
  mccl::Request request;
  std::uint64_t index = 0;
};

// One rank's run; returns what went wrong, or empty.
std::string run_rank(const Config& cfg, mccl::Communicator* comms[2], std::atomic<bool>& stop,
                     std::atomic<std::uint64_t>& done) {
  const int rank = comms[0]->rank();
  std::deque<Pending> flight;
  auto finish = [&](Pending& p) -> std::string {
    try {
      p.request.wait();
    } catch (const mccl::Error& e) {
      return std::string(soak::to_string(p.step.kind)) + " failed: " + e.what();
    }
    if (auto why = soak::check(p.step, p.buffers, rank, cfg.ranks); !why.empty()) return why;
    if (rank == 0) done.fetch_add(1, std::memory_order_relaxed);
    return {};
  };
  std::string failure;
  for (std::uint64_t i = 0; i < cfg.ops && failure.empty() && !stop.load(); ++i) {
    Pending& p = flight.emplace_back();
    p.index = i;
    p.step = soak::plan(cfg.seed, i, cfg.ranks, cfg.max_bytes);
    p.buffers = soak::prepare(p.step, rank, cfg.ranks);
    try {
      p.request = soak::post(*comms[p.step.comm], p.step, p.buffers);
    } catch (const mccl::Error& e) {
      failure = std::string("posting ") + soak::to_string(p.step.kind) + ": " + e.what();
      flight.pop_back();
      break;
    }
    if (flight.size() > cfg.window) {
      failure = finish(flight.front());
      if (!failure.empty())
        failure = "collective " + std::to_string(flight.front().index) + " (" +
                  soak::to_string(flight.front().step.kind) + "): " + failure;
      flight.pop_front();
    }
  }
  while (!flight.empty()) {
    if (failure.empty()) failure = finish(flight.front());
    flight.pop_front();  // a request still in flight is waited for by its destructor
  }
  if (!failure.empty()) stop = true;
  return failure.empty() ? failure : "rank " + std::to_string(rank) + ": " + failure;
}

bool within(const char* what, std::int64_t from, std::int64_t to, std::int64_t bound) {
  if (to - from <= bound) return true;
  std::fprintf(stderr, "soak: %s grew from %lld to %lld (bound: +%lld)\n", what,
               static_cast<long long>(from), static_cast<long long>(to),
               static_cast<long long>(bound));
  return false;
}

bool run_engine(const Config& cfg, const std::string& engine) {
  mccl::ProgressKind kind = mccl::ProgressKind::kInline;
  if (engine == "thread") kind = mccl::ProgressKind::kThread;
  if (engine == "offload") {
    // The daemon owns real UDP multicast (loopback), not the in-memory
    // fabric: its test hook drops the same share of datagrams.
    kind = mccl::ProgressKind::kOffload;
    const std::string permille = std::to_string(static_cast<int>(cfg.loss * 1000));
    ::setenv("MCCL_UDP_TEST_DROP_PERMILLE", permille.c_str(), 0);
  }
  const soak::Resources before = soak::sample();
  soak::Resources warm, peak, end;
  std::vector<std::string> failures;
  const auto t0 = std::chrono::steady_clock::now();
  {
    mccl::InProcessWorld world(cfg.ranks, {.loss = cfg.loss, .seed = cfg.seed});
    const mccl::CommOptions opts{.progress = kind, .timeout = 60s};
    auto first = mccl::create_communicators(world, opts);
    auto second = mccl::create_communicators(world, opts);
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> done{0};
    std::mutex mu;
    std::vector<std::thread> threads;
    for (int r = 0; r < cfg.ranks; ++r) {
      threads.emplace_back([&, r] {
        mccl::Communicator* comms[2] = {&first[r], &second[r]};
        auto why = run_rank(cfg, comms, stop, done);
        std::lock_guard lock(mu);
        if (!why.empty()) failures.push_back(why);
      });
    }
    bool warm_taken = false;
    std::uint64_t reported = 0;
    while (done.load() < cfg.ops && !stop.load()) {
      std::this_thread::sleep_for(50ms);
      const soak::Resources now = soak::sample();
      peak.rss_kib = std::max(peak.rss_kib, now.rss_kib);
      peak.fds = std::max(peak.fds, now.fds);
      peak.threads = std::max(peak.threads, now.threads);
      peak.mappings = std::max(peak.mappings, now.mappings);
      if (!warm_taken && done.load() >= cfg.ops / 10) {
        warm = now;
        warm_taken = true;
      }
      if (done.load() >= reported + cfg.ops / 5) {
        reported = done.load();
        std::printf("  %s: %llu/%llu collectives, %s\n", engine.c_str(),
                    static_cast<unsigned long long>(reported),
                    static_cast<unsigned long long>(cfg.ops), soak::to_string(now).c_str());
        std::fflush(stdout);
      }
    }
    for (auto& t : threads) t.join();
    end = soak::sample();
    if (!warm_taken) warm = end;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Engines of destroyed communicators may serve their neighbours a while.
  soak::Resources after = soak::sample();
  for (int i = 0; i < 200 && (after.threads > before.threads || after.fds > before.fds); ++i) {
    std::this_thread::sleep_for(50ms);
    after = soak::sample();
  }
  std::printf(
      "soak engine=%s ranks=%d collectives=%llu wall=%.1fs\n  before: %s\n  warm:   %s\n"
      "  peak:   %s\n  end:    %s\n  after:  %s\n",
      engine.c_str(), cfg.ranks, static_cast<unsigned long long>(cfg.ops), wall,
      soak::to_string(before).c_str(), soak::to_string(warm).c_str(), soak::to_string(peak).c_str(),
      soak::to_string(end).c_str(), soak::to_string(after).c_str());
  bool ok = failures.empty();
  for (const auto& f : failures) std::fprintf(stderr, "soak: %s\n", f.c_str());
  ok = within("descriptors during the run", warm.fds, end.fds, 2) && ok;
  ok = within("threads during the run", warm.threads, end.threads, 0) && ok;
  ok = within("mappings during the run", warm.mappings, end.mappings, 64) && ok;
  // AddressSanitizer holds freed memory in quarantine (256 MiB): resident
  // memory says nothing there, LeakSanitizer checks leaks at exit instead.
  if (!kAddressSanitizer) {
    ok = within("resident KiB during the run", warm.rss_kib, end.rss_kib, 128 << 10) && ok;
  }
  ok = within("descriptors after the world", before.fds, after.fds, 0) && ok;
  ok = within("threads after the world", before.threads, after.threads, 0) && ok;
  return ok;
}

Config parse(int argc, char** argv) {
  Config c;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--ops") {
      c.ops = std::stoull(v);
    } else if (k == "--engines") {
      c.engines.clear();
      std::stringstream in(v);
      for (std::string e; std::getline(in, e, ',');) c.engines.push_back(e);
    } else if (k == "--ranks") {
      c.ranks = std::stoi(v);
    } else if (k == "--window") {
      c.window = std::stoull(v);
    } else if (k == "--max-bytes") {
      c.max_bytes = std::stoull(v);
    } else if (k == "--loss") {
      c.loss = std::stod(v);
    } else if (k == "--seed") {
      c.seed = std::stoull(v);
    } else {
      std::fprintf(stderr, "mccl_soak: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const Config cfg = parse(argc, argv);
  bool ok = true;
  for (const auto& e : cfg.engines) ok = run_engine(cfg, e) && ok;
  std::printf("soak: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
