#include "timeline.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mccl::bench::osu {
namespace {

constexpr const char* kNames[Timeline::kSteps] = {
    "called", "started", "first_sent", "last_sent", "first_arrival",
    "last_arrival", "held", "released", "completed", "returned"};

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

Timeline::Timeline(int iterations) : values_(static_cast<std::size_t>(iterations) * kSteps, 0) {}

void Timeline::record(int iter, std::chrono::steady_clock::time_point called,
                      std::chrono::steady_clock::time_point returned, const McastTimeline& s) {
  double* v = values_.data() + static_cast<std::size_t>(iter) * kSteps;
  const std::uint64_t steps[] = {s.started_ns,      s.first_sent_ns, s.last_sent_ns,
                                 s.first_arrival_ns, s.last_arrival_ns, s.held_ns,
                                 s.released_ns,      s.completed_ns};
  v[kCalled] = ns_of(called);
  for (int k = kStarted; k <= kCompleted; ++k) v[k] = static_cast<double>(steps[k - kStarted]);
  v[kReturned] = ns_of(returned);
}

void Timeline::report(const std::vector<double>& all, int ranks, int iterations, std::FILE* json) {
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
        const double us = t > 0 ? (t - ref) / 1e3 : nan;
        rel[static_cast<std::size_t>(r) * kSteps + k].push_back(us);
        if (!std::isnan(us) && !(us <= worst[k])) worst[k] = us;
      }
    }
    for (int k = 0; k < kSteps; ++k) slowest[k].push_back(worst[k]);
    call_skew.push_back((last_call - first_call) / 1e3);
  }
  if (call_skew.empty()) return;

  std::printf("#   timeline, us from the first datagram sent, median over %zu iterations:\n",
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

  if (json == nullptr) return;
  std::fprintf(json, ",\"timeline\":{\"iterations\":%zu,\"call_skew_us\":%.1f", call_skew.size(),
               skew);
  for (int k = 0; k < kSteps; ++k) {
    const double v = median_of(slowest[k]);
    if (!std::isnan(v)) std::fprintf(json, ",\"%s_max_us\":%.1f", kNames[k], v);
  }
  std::fprintf(json, "}");
}

}  // namespace mccl::bench::osu
