#include "osu_common.h"

#include <getopt.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "mccl/error.h"
#include "mccl/stats.h"
#include "mccl/tcp_bootstrap.h"
#include "mccl/version.h"
#include "timeline.h"

namespace mccl::bench::osu {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kFieldWidth = 18;  // OSU's FIELD_WIDTH for collectives
constexpr int kPrecision = 2;    // OSU's FLOAT_PRECISION

// The counters of Stats (gauges are not summed over iterations).
constexpr std::size_t kNumStats = std::size(kStatCounters);

// veth/NIC counters of this host (meaningful with one rank per host or
// network namespace: ranks sharing an interface share its counters).
struct NetCounters {
  double tx_bytes = 0, rx_bytes = 0, tx_packets = 0, rx_packets = 0;
};

double read_counter(const std::string& dev, const char* name) {
  std::ifstream in("/sys/class/net/" + dev + "/statistics/" + name);
  double v = 0;
  if (!(in >> v)) {
    throw Error(ErrorCode::kInvalidArgument,
                "--netdev: cannot read /sys/class/net/" + dev + "/statistics/" + name);
  }
  return v;
}

NetCounters read_net(const std::string& dev) {
  return {read_counter(dev, "tx_bytes"), read_counter(dev, "rx_bytes"),
          read_counter(dev, "tx_packets"), read_counter(dev, "rx_packets")};
}

// CPU time (user and system) of this process so far.
double process_cpu_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void usage(const char* program) {
  std::printf(
      "Usage: %s [options]\n"
      "Options:\n"
      "  -h, --help                 print this help\n"
      "  -v, --version              print the version\n"
      "  -f, --full                 print min and max latency and iterations too\n"
      "  -m, --message-size [MIN:]MAX  sizes from MIN (default 1; 4 for reductions) to MAX "
      "(default 1048576)\n"
      "                             bytes, powers of two\n"
      "  -i, --iterations ITER      timed iterations per size (default 1000; 100 above 8 KiB)\n"
      "  -x, --warmup ITER          untimed warmup iterations (default 100; 10 above 8 KiB)\n"
      "  -c, --validation           check the data of every iteration (Validation column)\n"
      "  -u, --validation-warmup ITER  untimed collectives before each validated one\n"
      "                             (default 5, at most 10)\n"
      "MCCL extensions:\n"
      "      --json FILE            append one JSON line per size to FILE (rank 0); without\n"
      "                             -c it has cycle_us, rank 0's time per iteration with\n"
      "                             the barrier after the collective\n"
      "      --stats                print MCCL's statistics deltas per size (sum/max over\n"
      "                             ranks) as '#' lines\n"
      "      --netdev IFACE         with --traffic-iters: bytes and packets each rank's\n"
      "                             IFACE carried per collective (one rank per host/netns)\n"
      "      --traffic-iters K      after the timed loop, K back-to-back collectives whose\n"
      "                             IFACE counter deltas are reported per collective\n"
      "      --compress MODE        float32 Gaussian data, compressed: off, bf16, bound:B\n"
      "                             (absolute bound B), zfp:R (R bits per value); reports\n"
      "                             the ratio and the largest error, -c checks the bound;\n"
      "                             on a link faster than the codec the calls run exact\n"
      "                             (MCCL_COLL_COMPRESS_MAX_MBIT=-1: compress anyway)\n"
      "      --data FILE            with --compress: float32 values (raw, little-endian)\n"
      "                             instead of Gaussian ones, scaled to sigma 1 and\n"
      "                             repeated (a trained model's weights or gradients)\n"
      "      --shared-buffers       buffers from Communicator::allocate: shared with the\n"
      "                             offload daemon (MCCL_PROGRESS=offload), which then\n"
      "                             runs in place without staging copies\n"
      "      --timeline             per rank, when each step of the timed multicast\n"
      "                             collectives happened (first/last datagram, everything\n"
      "                             held, release, return), from the first datagram sent,\n"
      "                             as '#' lines (ranks must share a host's clock)\n",
      program);
}

bool parse_int(const char* s, int lo, int hi, int& out) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) return false;
  out = static_cast<int>(v);
  return true;
}

// OSU's -m: "MAX", "MIN:MAX", "MIN:" or ":MAX"; MIN must be positive.
bool parse_sizes(const std::string& s, Options& o) {
  auto num = [](const std::string& t, std::size_t& v) {
    char* end = nullptr;
    unsigned long long x = std::strtoull(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0') return false;
    v = static_cast<std::size_t>(x);
    return true;
  };
  auto colon = s.find(':');
  if (colon == std::string::npos) return num(s, o.max_size);
  std::string lo = s.substr(0, colon), hi = s.substr(colon + 1);
  if (hi.find(':') != std::string::npos || (lo.empty() && hi.empty())) return false;
  if (!lo.empty() && (!num(lo, o.min_size) || o.min_size == 0)) return false;
  if (!hi.empty() && !num(hi, o.max_size)) return false;
  return true;
}

// The index of counter `name` in kStatCounters.
std::size_t stat_index(std::string_view name) {
  for (std::size_t k = 0; k < kNumStats; ++k) {
    if (kStatCounters[k].name == name) return k;
  }
  return kNumStats;
}

// compress_bytes_in / compress_bytes_out over every rank (1: nothing encoded).
double compression_ratio(const double* st_sum) {
  const double out = st_sum[stat_index("compress_bytes_out")];
  return out > 0 ? st_sum[stat_index("compress_bytes_in")] / out : 1.0;
}

bool parse_compression(const char* text, Options& o) {
  const std::string t = text;
  const auto colon = t.find(':');
  const std::string mode = t.substr(0, colon);
  const double param = colon == std::string::npos ? 0.0 : std::atof(t.c_str() + colon + 1);
  Compression c;
  if (mode == "off") {
    c.mode = CompressMode::kOff;
  } else if (mode == "bf16") {
    c.mode = CompressMode::kBf16;
  } else if (mode == "bound" && param > 0) {
    c = {CompressMode::kBound, param};
  } else if (mode == "zfp" && param >= 1 && param <= 64) {
    c = {CompressMode::kZfp, 0.0, param};
  } else {
    return false;
  }
  // The calls pass their own compression, so the communicator's setting
  // would not reach them: the benchmark reads it (-1 compresses at any
  // link rate, to measure what the rule of docs/compression.md avoids).
  if (const char* limit = std::getenv("MCCL_COLL_COMPRESS_MAX_MBIT")) {
    c.max_link_mbit = std::atoll(limit);
  }
  o.compression = c;
  o.compress_text = t;
  return true;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

int parse_options(int argc, char** argv, const char* program, const char* title, bool lead,
                  Options& o) {
  enum { kJson = 1000, kStats, kNetdev, kTrafficIters, kTimeline, kCompress, kData, kShared };
  static const option longs[] = {
      {"help", no_argument, nullptr, 'h'},
      {"version", no_argument, nullptr, 'v'},
      {"full", no_argument, nullptr, 'f'},
      {"message-size", required_argument, nullptr, 'm'},
      {"iterations", required_argument, nullptr, 'i'},
      {"warmup", required_argument, nullptr, 'x'},
      {"validation", no_argument, nullptr, 'c'},
      {"validation-warmup", required_argument, nullptr, 'u'},
      {"json", required_argument, nullptr, kJson},
      {"stats", no_argument, nullptr, kStats},
      {"netdev", required_argument, nullptr, kNetdev},
      {"traffic-iters", required_argument, nullptr, kTrafficIters},
      {"timeline", no_argument, nullptr, kTimeline},
      {"compress", required_argument, nullptr, kCompress},
      {"data", required_argument, nullptr, kData},
      {"shared-buffers", no_argument, nullptr, kShared},
      {nullptr, 0, nullptr, 0},
  };
  auto bad = [&](const char* what, int opt) {
    if (lead) {
      std::fprintf(stderr, "%s [-%c %s]\n\n", what, opt, optarg != nullptr ? optarg : "");
      usage(program);
    }
    return EXIT_FAILURE;
  };
  opterr = lead ? 1 : 0;
  int c;
  while ((c = getopt_long(argc, argv, "hvfm:i:x:cu:", longs, nullptr)) != -1) {
    int v = 0;
    switch (c) {
      case 'h':
        if (lead) usage(program);
        return EXIT_SUCCESS;
      case 'v':
        if (lead) std::printf("# MCCL %s v%s\n", title, version_string());
        return EXIT_SUCCESS;
      case 'f':
        o.full = true;
        break;
      case 'm':
        if (!parse_sizes(optarg, o)) return bad("Invalid Message Size", c);
        break;
      case 'i':
        if (!parse_int(optarg, 1, 1 << 30, v)) return bad("Invalid Number of Iterations", c);
        o.iterations = o.iterations_large = v;
        break;
      case 'x':
        if (!parse_int(optarg, 0, 1 << 30, v)) {
          return bad("Invalid Number of Warmup Iterations", c);
        }
        o.warmup = o.warmup_large = v;
        break;
      case 'c':
        o.validate = true;
        break;
      case 'u':
        if (!parse_int(optarg, 0, 10, v)) {
          return bad("Invalid Number of Validation Warmup Iterations", c);
        }
        o.validation_warmup = v;
        break;
      case kJson:
        o.json_path = optarg;
        break;
      case kStats:
        o.stats = true;
        break;
      case kNetdev:
        o.netdev = optarg;
        break;
      case kTrafficIters:
        if (!parse_int(optarg, 0, 1 << 20, v)) return bad("Invalid --traffic-iters", c);
        o.traffic_iters = v;
        break;
      case kTimeline:
        o.timeline = true;
        break;
      case kCompress:
        if (!parse_compression(optarg, o)) return bad("Invalid --compress", c);
        break;
      case kData:
        o.data_file = optarg;
        if (!load_samples(o.data_file)) return bad("Unreadable --data file", c);
        break;
      case kShared:
        o.shared_buffers = true;
        break;
      default:
        if (lead) usage(program);
        return EXIT_FAILURE;
    }
  }
  if (optind < argc) {
    if (lead) std::fprintf(stderr, "%s: unexpected argument '%s'\n", program, argv[optind]);
    return EXIT_FAILURE;
  }
  return -1;
}

int run(Communicator& comm, const Options& o, const Collective& coll) {
  const int n = comm.size();
  const bool lead = comm.rank() == 0;
  const bool traffic = !o.netdev.empty() && o.traffic_iters > 0;
  std::FILE* json = nullptr;
  if (lead && !o.json_path.empty()) {
    json = std::fopen(o.json_path.c_str(), "a");
    if (json == nullptr) {
      std::fprintf(stderr, "cannot open --json file %s: %s\n", o.json_path.c_str(),
                   std::strerror(errno));
    }
  }
  if (lead) {
    std::printf("\n# MCCL %s v%s\n", coll.title, version_string());
    std::printf("%-*s%*s", 10, "# Size", kFieldWidth, "Avg Latency(us)");
    if (o.full) {
      std::printf("%*s%*s%*s", kFieldWidth, "Min Latency(us)", kFieldWidth, "Max Latency(us)", 12,
                  "Iterations");
    }
    if (o.validate) std::printf("%*s", kFieldWidth, "Validation");
    std::printf("\n");
    std::fflush(stdout);
  }

  std::size_t failed_size = 0;
  bool failed = false;
  for (std::size_t bytes = o.min_size; bytes <= o.max_size && bytes > 0; bytes *= 2) {
    const bool large = bytes > o.large_size;
    const int iters = large ? o.iterations_large : o.iterations;
    const int skip = large ? o.warmup_large : o.warmup;
    std::vector<double> times(static_cast<std::size_t>(iters));
    Timeline timeline(o.timeline ? iters : 0);
    double errors = 0;
    double cpu_ns = 0;  // this process's CPU time inside the timed collectives
    Stats before{};
    comm.barrier();
    Clock::time_point loop_start{};
    for (int i = 0; i < iters + skip; ++i) {
      if (i == skip) {
        loop_start = Clock::now();
        before = comm.stats();
        if (o.timeline && lead) timeline.machine_before();
      }
      if (o.validate) {
        coll.fill(bytes, i);
        for (int j = 0; j < o.validation_warmup; ++j) {
          comm.barrier();
          coll.run(bytes);
        }
        comm.barrier();
      }
      const double cpu0 = process_cpu_ns();
      const auto t0 = Clock::now();
      coll.run(bytes);
      const auto t1 = Clock::now();
      const double cpu = process_cpu_ns() - cpu0;
      if (i >= skip) cpu_ns += cpu;
      if (o.timeline && i >= skip) timeline.record(i - skip, t0, t1, cpu, comm.stats().last_mcast);
      comm.barrier();
      if (o.validate) errors += static_cast<double>(coll.check(bytes, i));
      if (i >= skip) times[i - skip] = std::chrono::duration<double, std::micro>(t1 - t0).count();
    }
    // A cycle: one timed iteration as this rank lived it, the collective and
    // the barrier after it. Unlike the collective's own time it does not
    // depend on where the barrier leaves each rank (at 2 ranks the receiver
    // of a broadcast waits either a round trip or nothing, and a run locks
    // into one or the other). With -c the loop validates too: not reported.
    const double cycle_us =
        std::chrono::duration<double, std::micro>(Clock::now() - loop_start).count() / iters;
    const Stats after = comm.stats();
    if (o.timeline && lead) timeline.machine_after();

    NetCounters net;
    if (traffic) {
      // Read, then a barrier: every host has its counters before any
      // rank starts (one leaving the barrier first could otherwise land
      // data on a host that has not read them yet).
      comm.barrier();
      const NetCounters a = read_net(o.netdev);
      comm.barrier();
      for (int k = 0; k < o.traffic_iters; ++k) coll.run(bytes);
      comm.barrier();
      const NetCounters b = read_net(o.netdev);
      const double k = o.traffic_iters;
      net = {(b.tx_bytes - a.tx_bytes) / k, (b.rx_bytes - a.rx_bytes) / k,
             (b.tx_packets - a.tx_packets) / k, (b.rx_packets - a.rx_packets) / k};
    }

    // Every rank's figures in one allgather of doubles (exact for counters
    // below 2^53): mean, errors, 4 net counters, the stats, every time.
    double sum = 0;
    for (double t : times) sum += t;
    std::vector<double> mine = {sum / iters,  errors,         net.tx_bytes,
                                net.rx_bytes, net.tx_packets, net.rx_packets};
    for (const auto& f : kStatCounters) {
      mine.push_back(static_cast<double>(after.*f.member - before.*f.member));
    }
    mine.push_back(coll.max_error ? coll.max_error() : 0.0);
    const std::size_t cpu_at = mine.size();
    mine.push_back(cpu_ns);
    const std::size_t head = mine.size();
    mine.insert(mine.end(), times.begin(), times.end());
    const std::size_t tail = mine.size();
    mine.insert(mine.end(), timeline.values().begin(), timeline.values().end());
    std::vector<double> all(mine.size() * n);
    comm.allgather(mine.data(), all.data(), mine.size() * sizeof(double));
    if (!lead) {
      // The verdict is rank 0's; every rank learns it to stop alike.
      double total = 0;
      for (int r = 0; r < n; ++r) total += all[r * mine.size() + 1];
      if (total != 0) {
        failed = true;
        break;
      }
      continue;
    }

    auto at = [&](int r, std::size_t k) { return all[r * mine.size() + k]; };
    double avg = 0, mn = at(0, 0), mx = at(0, 0), total_errors = 0;
    double max_net[4] = {0, 0, 0, 0};
    double st_sum[kNumStats] = {}, st_max[kNumStats] = {};
    double max_error = 0;
    for (int r = 0; r < n; ++r) {
      avg += at(r, 0) / n;
      mn = std::min(mn, at(r, 0));
      mx = std::max(mx, at(r, 0));
      total_errors += at(r, 1);
      for (int k = 0; k < 4; ++k) max_net[k] = std::max(max_net[k], at(r, 2 + k));
      for (std::size_t k = 0; k < kNumStats; ++k) {
        st_sum[k] += at(r, 6 + k);
        st_max[k] = std::max(st_max[k], at(r, 6 + k));
      }
      max_error = std::max(max_error, at(r, 6 + kNumStats));
    }
    std::vector<double> slowest(static_cast<std::size_t>(iters), 0);
    for (int i = 0; i < iters; ++i) {
      for (int r = 0; r < n; ++r) slowest[i] = std::max(slowest[i], at(r, head + i));
    }
    const double p50_max = median(slowest);

    std::printf("%-*zu%*.*f", 10, bytes, kFieldWidth, kPrecision, avg);
    if (o.full) {
      std::printf("%*.*f%*.*f%*d", kFieldWidth, kPrecision, mn, kFieldWidth, kPrecision, mx, 12,
                  iters);
    }
    if (o.validate) std::printf("%*s", kFieldWidth, total_errors > 0 ? "Fail" : "Pass");
    std::printf("\n");
    const double ratio = compression_ratio(st_sum);
    if (o.compression) {
      std::printf("#   compress %s: ratio %.3f, largest error %.3g%s", o.compress_text.c_str(),
                  ratio, max_error, o.validate ? "" : " (checked only with -c)");
      const double exact = st_sum[stat_index("compress_fast_link_skips")];
      if (exact > 0) {
        std::printf(
            "; %.0f calls over all ranks ran exact: the link is faster than the codec "
            "(MCCL_COLL_COMPRESS_MAX_MBIT=-1 compresses anyway)",
            exact);
      }
      std::printf("\n");
    }
    if (o.stats) {
      std::printf("#   stats, %d iterations, sum/max over ranks:", iters);
      for (std::size_t k = 0; k < kNumStats; ++k) {
        if (st_sum[k] != 0)
          std::printf(" %s %.0f/%.0f", kStatCounters[k].name, st_sum[k], st_max[k]);
      }
      std::printf("\n");
    }
    std::vector<double> steps;
    if (o.timeline) {
      for (int r = 0; r < n; ++r) {
        const auto from = all.begin() + static_cast<std::ptrdiff_t>(r * mine.size() + tail);
        steps.insert(steps.end(), from, from + static_cast<std::ptrdiff_t>(mine.size() - tail));
      }
      if (json == nullptr) timeline.report(steps, n, iters, nullptr);
    }
    std::fflush(stdout);

    if (json != nullptr) {
      std::fprintf(json,
                   "{\"bench\":\"%s\",\"impl\":\"mccl\",\"version\":\"%s\",\"ranks\":%d,"
                   "\"bytes_per_rank\":%zu,\"avg_us\":%.3f,\"min_us\":%.3f,\"max_us\":%.3f,"
                   "\"p50_max_us\":%.3f,\"iterations\":%d,\"warmup\":%d,\"validated\":%s,"
                   "\"errors\":%.0f",
                   coll.bench, version_string(), n, bytes, avg, mn, mx, p50_max, iters, skip,
                   o.validate ? (total_errors > 0 ? "false" : "true") : "null", total_errors);
      if (!o.validate) std::fprintf(json, ",\"cycle_us\":%.3f", cycle_us);
      if (o.compression) {
        std::fprintf(json, ",\"compress\":\"%s\",\"ratio\":%.4f,\"max_error\":%.6g",
                     json_escape(o.compress_text).c_str(), ratio, o.validate ? max_error : -1.0);
        std::fprintf(json, ",\"data\":\"%s\"",
                     o.data_file.empty() ? "gaussian" : json_escape(o.data_file).c_str());
      }
      if (traffic) {
        std::fprintf(json,
                     ",\"netdev\":\"%s\",\"traffic_iters\":%d,\"tx_bytes_max\":%.1f,"
                     "\"rx_bytes_max\":%.1f,\"tx_packets_max\":%.2f,\"rx_packets_max\":%.2f",
                     json_escape(o.netdev).c_str(), o.traffic_iters, max_net[0], max_net[1],
                     max_net[2], max_net[3]);
      }
      for (int which = 0; which < 2; ++which) {
        std::fprintf(json, ",\"%s\":{", which == 0 ? "stats_sum" : "stats_max");
        for (std::size_t k = 0; k < kNumStats; ++k) {
          std::fprintf(json, "%s\"%s\":%.0f", k ? "," : "", kStatCounters[k].name,
                       which == 0 ? st_sum[k] : st_max[k]);
        }
        std::fprintf(json, "}");
      }
      // CPU seconds per GB of bytes_per_rank moved by the timed collectives,
      // each rank (all its threads, user and system; rank 0 first).
      std::fprintf(json, ",\"cpu_s_per_gb\":[");
      for (int r = 0; r < n; ++r) {
        std::fprintf(json, "%s%.4f", r ? "," : "",
                     at(r, cpu_at) / (static_cast<double>(iters) * static_cast<double>(bytes)));
      }
      std::fprintf(json, "]");
      if (o.timeline) timeline.report(steps, n, iters, json);
      std::fprintf(json, "}\n");
      std::fflush(json);
    }
    if (total_errors > 0) {
      failed = true;
      failed_size = bytes;
      break;
    }
  }
  if (json != nullptr) std::fclose(json);
  comm.barrier();
  if (failed && lead) {
    std::printf("DATA VALIDATION ERROR: exited with status %d on message size %zu.\n", EXIT_FAILURE,
                failed_size);
  }
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int benchmark_main(int argc, char** argv, const char* program, const char* title,
                   const std::function<Collective(Communicator&, const Options&)>& make,
                   std::size_t min_size) {
  // Before the bootstrap, so that --help works without a launcher; the
  // rank only decides who prints.
  bool lead = true;
  for (const char* var : {"MCCL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') {
      lead = std::atoi(v) == 0;
      break;
    }
  }
  Options options;
  options.min_size = min_size;
  if (int st = parse_options(argc, argv, program, title, lead, options); st >= 0) return st;
  try {
    auto boot = make_bootstrap_from_env();
    if (boot->size() < 2) {
      if (boot->rank() == 0) std::fprintf(stderr, "This test requires at least two processes\n");
      return EXIT_FAILURE;
    }
    Communicator comm(*boot);
    Collective coll = make(comm, options);
    return run(comm, options, coll);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s: %s\n", program, to_string(e.code()), e.what());
    return 3;
  }
}

Buffer::Buffer(Communicator& comm, const Options& o, std::size_t bytes, std::byte fill)
    : comm_(comm), shared_(o.shared_buffers) {
  if (shared_) {
    data_ = static_cast<std::byte*>(comm.allocate(std::max<std::size_t>(bytes, 1)));
  } else {
    own_.resize(std::max<std::size_t>(bytes, 1));
    data_ = own_.data();
  }
  std::memset(data_, static_cast<int>(fill), bytes);
}

Buffer::~Buffer() {
  if (shared_) comm_.deallocate(data_);
}

}  // namespace mccl::bench::osu
