// What the OSU-compatible benchmarks share: OSU 7.x's options and defaults,
// its timing loop and its output, so that tools which read OSU's tables read
// MCCL's; plus JSON lines (--json) and MCCL's statistics (--stats).
//
// Timing follows OSU: each rank times every collective between a barrier
// and the next (barriers are not timed), its latency is the mean over the
// measured iterations, and the table shows the average, minimum and maximum
// of that mean over ranks. The JSON line adds p50_max_us: per iteration the
// slowest rank, then the median over iterations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mccl/communicator.h"

namespace mccl::bench::osu {

// OSU 7.x defaults for blocking collectives (osu_util.h: COLL_LOOP_SMALL,
// COLL_SKIP_SMALL, COLL_LOOP_LARGE, COLL_SKIP_LARGE, LARGE_MESSAGE_SIZE,
// MAX_MSG_SIZE_COLL, VALIDATION_SKIP_DEFAULT). -i and -x set both the small
// and the large value, as OSU's do.
struct Options {
  std::size_t min_size = 1;
  std::size_t max_size = std::size_t{1} << 20;
  int iterations = 1000;       // sizes up to large_size
  int iterations_large = 100;  // sizes above it
  int warmup = 100;
  int warmup_large = 10;
  std::size_t large_size = 8192;
  int validation_warmup = 5;  // -u: untimed collectives before each validated one
  bool full = false;          // -f
  bool validate = false;      // -c
  // Extensions (long options only).
  bool stats = false;     // --stats
  std::string json_path;  // --json FILE: one line per size, appended
  std::string netdev;     // --netdev IFACE: read /sys/class/net/IFACE/statistics
  int traffic_iters = 0;  // --traffic-iters K: K untimed back-to-back collectives
  bool timeline = false;  // --timeline: per rank, when each step of a collective happened
  // --compress off|bf16|bound:B|zfp:R: float32 data (Gaussian, sigma 1),
  // moved by the typed calls with this compression (docs/compression.md);
  // -c then checks the mode's guarantee instead of equality.
  std::optional<Compression> compression;
  std::string compress_text;
  // --data FILE: the float32 values (raw, little-endian) that sample_value
  // draws from instead of Gaussian ones, e.g. a trained model's weights or
  // gradients (bench/torch/train_check.py --save-tensors).
  std::string data_file;
  // --shared-buffers: the byte benchmarks' buffers come from
  // Communicator::allocate, which the offload engine shares with its daemon
  // (collectives on them run in place, no staging copy); elsewhere it is
  // ordinary memory.
  bool shared_buffers = false;
  CollOptions call_options() const { return {.compression = compression}; }
};

// One collective, as the driver sees it. Buffers are the benchmark's own,
// sized for max_size once (as OSU allocates them).
struct Collective {
  const char* bench = "";  // JSON "bench": "bcast", "allgather"
  const char* title = "";  // e.g. "Broadcast Latency Test"
  std::function<void(std::size_t bytes)> run;
  // Validation (-c): fill the buffers for iteration `iter`, then check what
  // arrived; check returns the number of wrong bytes on this rank.
  std::function<void(std::size_t bytes, int iter)> fill;
  std::function<std::size_t(std::size_t bytes, int iter)> check;
  // With --compress: the largest |received - sent| this rank's checks saw
  // since the last call (then reset); unset otherwise.
  std::function<double()> max_error;
  // What the functions above use that must go before the communicator
  // does (a Buffer from it): the driver destroys the Collective first.
  std::vector<std::shared_ptr<void>> keep;
};

// A benchmark's buffer of `bytes`, filled with `fill`: from
// Communicator::allocate with --shared-buffers (given back when the last
// owner goes, which must be before `comm`), ordinary memory otherwise.
class Buffer {
 public:
  Buffer(Communicator& comm, const Options& o, std::size_t bytes, std::byte fill);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  std::byte* data() { return data_; }

 private:
  Communicator& comm_;
  bool shared_;
  std::vector<std::byte> own_;
  std::byte* data_ = nullptr;
};

// The float32 value rank `rank` contributes at offset i in iteration
// `iter` under --compress: Gaussian (sigma 1), or from --data's file
// (scaled to sigma 1), deterministic.
float sample_value(int rank, std::size_t i, int iter);
// Makes sample_value draw from `path` (--data); false when the file is
// unreadable or its values have no spread.
bool load_samples(const std::string& path);

// Whether `got` keeps the guarantee of `c` for the original `want`:
// within the bound (kBound), within 2^-8 relative (kBf16), anything
// (kZfp, which has none), equal (off).
bool within_guarantee(const std::optional<Compression>& c, float want, float got);

// The byte rank `rank` contributes at offset i in validated iteration
// `iter` (never the poison value 0 for long).
inline std::byte pattern(int rank, std::size_t i, int iter) {
  return std::byte(((rank + 1) * 131 + i * 7 + static_cast<std::size_t>(iter) * 13 + 1) & 0xFF);
}

// Parses argv. Returns 0 to go on, or an exit status after printing help,
// version or a usage error (rank 0 prints; every rank returns the same).
int parse_options(int argc, char** argv, const char* program, const char* title, bool lead,
                  Options& out);

// Runs every size from min_size to max_size (powers of two) and prints the
// table on rank 0. Returns the exit status (1 when validation failed).
int run(Communicator& comm, const Options& options, const Collective& coll);

// main() of a benchmark: bootstrap from the environment, communicator,
// options, then `make` builds the collective for that communicator.
// `min_size` is the default smallest size (OSU's reductions start at one
// float, 4 bytes).
int benchmark_main(int argc, char** argv, const char* program, const char* title,
                   const std::function<Collective(Communicator&, const Options&)>& make,
                   std::size_t min_size = 1);

}  // namespace mccl::bench::osu
