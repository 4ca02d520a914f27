#include "timeline.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>

namespace mccl::bench::osu {
namespace {

constexpr const char* kNames[Timeline::kSteps] = {
    "called",   "started",   "first_sent", "last_sent", "first_arrival", "last_arrival", "held",
    "released", "completed", "returned",   "cpu"};

double ns_of(std::chrono::steady_clock::time_point t) {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

// Median of the finite values; NaN when there are none.
double median_of(std::vector<double> v) {
  std::erase_if(v, [](double x) { return std::isnan(x); });
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

Timeline::MachineCpu Timeline::MachineCpu::now() {
  MachineCpu m;
  std::ifstream in("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq) || cpu != "cpu") {
    return m;
  }
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  m.user_s = (user + nice) / tick;
  m.system_s = system / tick;
  m.softirq_s = (irq + softirq) / tick;
  m.idle_s = (idle + iowait) / tick;
  return m;
}

Timeline::Timeline(int iterations) : values_(static_cast<std::size_t>(iterations) * kSteps, 0) {}

void Timeline::record(int iter, std::chrono::steady_clock::time_point called,
                      std::chrono::steady_clock::time_point returned, double cpu_ns,
                      const McastTimeline& s) {
  double* v = values_.data() + static_cast<std::size_t>(iter) * kSteps;
  const std::uint64_t steps[] = {s.started_ns,       s.first_sent_ns,   s.last_sent_ns,
                                 s.first_arrival_ns, s.last_arrival_ns, s.held_ns,
                                 s.released_ns,      s.completed_ns};
  v[kCalled] = ns_of(called);
  for (int k = kStarted; k <= kCompleted; ++k) v[k] = static_cast<double>(steps[k - kStarted]);
  v[kReturned] = ns_of(returned);
  v[kCpu] = cpu_ns;
}

void Timeline::report(const std::vector<double>& all, int ranks, int iterations,
                      std::FILE* json) const {
  const auto at = [&](int r, int i, int k) {
    return all[(static_cast<std::size_t>(r) * iterations + i) * kSteps + k];
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Per iteration: the reference (the earliest first datagram sent, i.e.
  // the root's in a broadcast), each rank's steps relative to it (us), the
  // slowest rank per step and the spread of the call times.
  std::vector<std::vector<double>> rel(static_cast<std::size_t>(ranks) * kSteps);
  std::vector<std::vector<double>> slowest(kSteps);
  std::vector<double> call_skew;
  for (int i = 0; i < iterations; ++i) {
    double ref = nan;
    for (int r = 0; r < ranks; ++r) {
      const double t = at(r, i, kFirstSent);
      if (t > 0 && !(t >= ref)) ref = t;
    }
    if (std::isnan(ref)) continue;  // nothing was multicast (a fallback algorithm)
    double first_call = at(0, i, kCalled), last_call = first_call;
    std::vector<double> worst(kSteps, nan);
    for (int r = 0; r < ranks; ++r) {
      first_call = std::min(first_call, at(r, i, kCalled));
      last_call = std::max(last_call, at(r, i, kCalled));
      for (int k = 0; k < kSteps; ++k) {
        const double t = at(r, i, k);
        const double us = k == kCpu ? t / 1e3 : t > 0 ? (t - ref) / 1e3 : nan;
        rel[static_cast<std::size_t>(r) * kSteps + k].push_back(us);
        if (!std::isnan(us) && !(us <= worst[k])) worst[k] = us;
      }
    }
    for (int k = 0; k < kSteps; ++k) slowest[k].push_back(worst[k]);
    call_skew.push_back((last_call - first_call) / 1e3);
  }
  if (call_skew.empty()) return;

  std::printf(
      "#   timeline, us from the first datagram sent (cpu: the call's CPU time), median over %zu "
      "iterations:\n",
      call_skew.size());
  std::printf("#   %-6s", "rank");
  for (const char* name : kNames) std::printf(" %13s", name);
  std::printf("\n");
  auto row = [&](const char* label, const auto& value_of) {
    std::printf("#   %-6s", label);
    for (int k = 0; k < kSteps; ++k) {
      const double v = value_of(k);
      if (std::isnan(v)) {
        std::printf(" %13s", "-");
      } else {
        std::printf(" %13.1f", v);
      }
    }
    std::printf("\n");
  };
  char label[16];
  for (int r = 0; r < ranks; ++r) {
    std::snprintf(label, sizeof label, "%d", r);
    row(label, [&](int k) { return median_of(rel[static_cast<std::size_t>(r) * kSteps + k]); });
  }
  row("max", [&](int k) { return median_of(slowest[k]); });
  const double skew = median_of(call_skew);
  std::printf("#   call skew (latest minus earliest call, median): %.1f us\n", skew);
  std::vector<double> cpu_total;
  for (int i = 0; i < static_cast<int>(call_skew.size()); ++i) {
    double sum = 0;
    for (int r = 0; r < ranks; ++r) sum += rel[static_cast<std::size_t>(r) * kSteps + kCpu][i];
    cpu_total.push_back(sum);
  }
  const double cpu_sum = median_of(cpu_total);
  std::printf("#   cpu of all ranks' calls (median of the sum): %.1f us\n", cpu_sum);
  // Per timed collective, barriers between them included.
  const double per = 1e6 / iterations;
  const double user = (after_.user_s - before_.user_s) * per;
  const double system = (after_.system_s - before_.system_s) * per;
  const double softirq = (after_.softirq_s - before_.softirq_s) * per;
  const double idle = (after_.idle_s - before_.idle_s) * per;
  std::printf(
      "#   machine cpu per collective (all cores, /proc/stat): user %.0f us, system %.0f us, "
      "softirq %.0f us, idle %.0f us\n",
      user, system, softirq, idle);

  if (json == nullptr) return;
  std::fprintf(json,
               ",\"timeline\":{\"iterations\":%zu,\"call_skew_us\":%.1f,\"cpu_sum_us\":%.1f,"
               "\"machine_user_us\":%.0f,\"machine_system_us\":%.0f,\"machine_softirq_us\":%.0f,"
               "\"machine_idle_us\":%.0f",
               call_skew.size(), skew, cpu_sum, user, system, softirq, idle);
  for (int k = 0; k < kSteps; ++k) {
    const double v = median_of(slowest[k]);
    if (!std::isnan(v)) std::fprintf(json, ",\"%s_max_us\":%.1f", kNames[k], v);
  }
  std::fprintf(json, "}");
}

}  // namespace mccl::bench::osu
