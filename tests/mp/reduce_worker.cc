// One rank of the multi-process reduction test: joins the job through the
// environment (MCCL_BOOTSTRAP_ADDR, MCCL_RANK, MCCL_WORLD_SIZE) and, over
// the real transports (UDP multicast, TCP), runs reduce_scatter and
// allreduce under every allreduce algorithm for counts 0 .. 100003, then
// allgathers and reduce-scatters overlapped (the FSDP pattern). Values are
// chosen so that every result is exact and checked against the expected
// value; each allreduce's bits are also compared across ranks. Last, the
// overlap again on two communicators sharing one mccl::ProgressThread.
// Prints one "reduce rank=R ok" line. Exit code 0 = all correct; 2 = wrong data;
// 3 = an MCCL error (printed).
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mccl/mccl.hpp"

namespace {

using mccl::DataType;
using mccl::ReduceOp;

// Rank r's value at global index i: integers in [0, 16], exact in every
// type, and so are their sums over up to 8 ranks (no wrap, no rounding).
std::int64_t value(int rank, std::size_t i, std::uint64_t salt) {
  std::uint64_t x = (std::uint64_t(rank) << 40) ^ i ^ (salt * 0x9E3779B97F4A7C15ull);
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<std::int64_t>(x % 17);
}

std::uint16_t to_half_bits(DataType t, float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (t == DataType::kBFloat16) return static_cast<std::uint16_t>(bits >> 16);
  // float16 of a small integer: exact re-encoding of exponent and mantissa.
  if (f == 0) return 0;
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const int exp = static_cast<int>((bits >> 23) & 0xFF) - 127 + 15;
  return static_cast<std::uint16_t>(sign | (exp << 10) | ((bits >> 13) & 0x3FF));
}

// Encodes v into element j of buf.
void store(DataType t, std::vector<std::byte>& buf, std::size_t j, std::int64_t v) {
  std::byte* p = buf.data() + j * mccl::size_of(t);
  const float f = static_cast<float>(v);
  const double d = static_cast<double>(v);
  const auto i32 = static_cast<std::int32_t>(v);
  const auto u8 = static_cast<std::uint8_t>(v);
  switch (t) {
    case DataType::kFloat32:
      std::memcpy(p, &f, 4);
      break;
    case DataType::kFloat64:
      std::memcpy(p, &d, 8);
      break;
    case DataType::kBFloat16:
    case DataType::kFloat16: {
      const std::uint16_t h = to_half_bits(t, f);
      std::memcpy(p, &h, 2);
      break;
    }
    case DataType::kInt32:
      std::memcpy(p, &i32, 4);
      break;
    case DataType::kInt64:
      std::memcpy(p, &v, 8);
      break;
    case DataType::kUInt8:
      std::memcpy(p, &u8, 1);
      break;
  }
}

std::vector<std::byte> input(DataType t, int rank, std::size_t first, std::size_t n,
                             std::uint64_t salt) {
  std::vector<std::byte> buf(n * mccl::size_of(t));
  for (std::size_t j = 0; j < n; ++j) store(t, buf, j, value(rank, first + j, salt));
  return buf;
}

// The exact result at global index i, encoded like an element.
std::vector<std::byte> expected(DataType t, ReduceOp op, int ranks, std::size_t first,
                                std::size_t n, std::uint64_t salt) {
  std::vector<std::byte> buf(n * mccl::size_of(t));
  for (std::size_t j = 0; j < n; ++j) {
    std::int64_t acc = value(0, first + j, salt);
    for (int r = 1; r < ranks; ++r) {
      const std::int64_t v = value(r, first + j, salt);
      acc = op == ReduceOp::kSum   ? acc + v
            : op == ReduceOp::kMin ? std::min(acc, v)
                                   : std::max(acc, v);
    }
    store(t, buf, j, acc);
  }
  return buf;
}

// FNV-1a of a buffer, to compare results across ranks cheaply.
std::uint64_t digest(const std::vector<std::byte>& b) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (auto x : b) h = (h ^ std::to_integer<std::uint64_t>(x)) * 0x100000001b3ull;
  return h;
}

bool same_everywhere(mccl::Communicator& c, std::uint64_t mine, const char* what) {
  std::vector<std::uint64_t> all(c.size());
  c.allgather(&mine, all.data(), sizeof mine);
  for (int r = 0; r < c.size(); ++r) {
    if (all[r] != mine) {
      std::fprintf(stderr, "%s: rank %d's bits differ from rank %d's\n", what, r, c.rank());
      return false;
    }
  }
  return true;
}

struct Case {
  DataType type;
  ReduceOp op;
};
constexpr Case kCases[] = {
    {DataType::kFloat32, ReduceOp::kSum},  {DataType::kFloat64, ReduceOp::kMin},
    {DataType::kBFloat16, ReduceOp::kMax}, {DataType::kFloat16, ReduceOp::kSum},
    {DataType::kInt32, ReduceOp::kSum},    {DataType::kInt64, ReduceOp::kMax},
    {DataType::kUInt8, ReduceOp::kMax}};

int sweep(mccl::Communicator& c) {
  const int n = c.size(), me = c.rank();
  std::uint64_t salt = 1;
  for (std::size_t count :
       {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000}, std::size_t{100003}}) {
    for (const auto& [t, op] : kCases) {
      ++salt;
      auto ar_in = input(t, me, 0, count, salt);
      std::vector<std::byte> ar_out(ar_in.size());
      c.allreduce(ar_in.data(), ar_out.data(), count, t, op);
      if (ar_out != expected(t, op, n, 0, count, salt)) {
        std::fprintf(stderr, "allreduce of %zu %s (%s): wrong result\n", count, mccl::to_string(t),
                     mccl::to_string(op));
        return 2;
      }
      if (!same_everywhere(c, digest(ar_out), "allreduce")) return 2;
      auto rs_in = input(t, me, 0, count * n, salt);
      std::vector<std::byte> rs_out(count * mccl::size_of(t));
      c.reduce_scatter(rs_in.data(), rs_out.data(), count, t, op);
      if (rs_out != expected(t, op, n, me * count, count, salt)) {
        std::fprintf(stderr, "reduce_scatter of %zu %s (%s): wrong result\n", count,
                     mccl::to_string(t), mccl::to_string(op));
        return 2;
      }
    }
  }
  return 0;
}

// Four layers' allgather (on `c`) and reduce-scatter (on `rsc`, which may
// be `c`) in flight at once.
int overlap(mccl::Communicator& c, mccl::Communicator& rsc) {
  const int n = c.size(), me = c.rank();
  const std::size_t m = 200000, count = 150001;
  struct Layer {
    std::vector<std::byte> ag_send, ag_recv, rs_send, rs_recv;
  };
  std::vector<Layer> layers(4);
  std::vector<mccl::Request> reqs;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto& l = layers[i];
    l.ag_send = input(DataType::kUInt8, me, 0, m, 1000 + i);
    l.ag_recv.resize(m * n);
    l.rs_send = input(DataType::kFloat32, me, 0, count * n, 2000 + i);
    l.rs_recv.resize(count * 4);
    reqs.push_back(c.iallgather(l.ag_send.data(), l.ag_recv.data(), m));
    reqs.push_back(rsc.ireduce_scatter(l.rs_send.data(), l.rs_recv.data(), count,
                                       DataType::kFloat32, ReduceOp::kSum));
  }
  for (auto& r : reqs) r.wait();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto& l = layers[i];
    for (int r = 0; r < n; ++r) {
      if (std::memcmp(l.ag_recv.data() + r * m, input(DataType::kUInt8, r, 0, m, 1000 + i).data(),
                      m) != 0) {
        std::fprintf(stderr, "overlap: allgather block %d of layer %zu is wrong\n", r, i);
        return 2;
      }
    }
    if (l.rs_recv != expected(DataType::kFloat32, ReduceOp::kSum, n, me * count, count, 2000 + i)) {
      std::fprintf(stderr, "overlap: reduce_scatter of layer %zu is wrong\n", i);
      return 2;
    }
  }
  return 0;
}

}  // namespace

int main() {
  try {
    auto boot = mccl::make_bootstrap_from_env();
    int rc = 0;
    for (auto algo :
         {mccl::AllreduceAlgorithm::kAuto, mccl::AllreduceAlgorithm::kRsMulticast,
          mccl::AllreduceAlgorithm::kRing, mccl::AllreduceAlgorithm::kRecursiveDoubling}) {
      mccl::Communicator comm(*boot, {.allreduce_algorithm = algo});
      rc = sweep(comm);
      if (rc == 0 && algo == mccl::AllreduceAlgorithm::kAuto) rc = overlap(comm, comm);
      if (rc == 0) comm.barrier();
      mccl::Stats s = comm.stats();
      std::printf("reduce rank=%d algo=%d rc=%d mcast_bytes_sent=%" PRIu64
                  " p2p_bytes_sent=%" PRIu64 " repairs_requested=%" PRIu64 "\n",
                  comm.rank(), static_cast<int>(algo), rc, s.mcast_bytes_sent, s.p2p_bytes_sent,
                  s.repairs_requested);
      if (rc != 0) return rc;
    }
    {
      // Two communicators on one shared progress thread: the allgathers on
      // one, the reduce-scatters on the other, all in flight together.
      mccl::ProgressThread engine;
      mccl::Communicator weights(*boot, {.progress_thread = engine});
      mccl::Communicator grads(*boot, {.progress_thread = engine});
      rc = overlap(weights, grads);
      if (rc == 0) grads.barrier();
      std::printf("reduce rank=%d shared-progress rc=%d\n", boot->rank(), rc);
      if (rc != 0) return rc;
    }
    std::printf("reduce rank=%d ok\n", boot->rank());
    return 0;
  } catch (const mccl::Error& e) {
    std::printf("error %s: %s\n", mccl::to_string(e.code()), e.what());
    return 3;
  }
}
