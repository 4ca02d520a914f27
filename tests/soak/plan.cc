#include "plan.h"

#include <algorithm>
#include <cstring>
#include <random>

namespace mccl::soak {

namespace {

// Byte `i` of rank `r`'s contribution to a step of salt `salt`.
std::byte pattern(int r, std::size_t i, std::uint64_t salt) {
  std::uint64_t x = (std::uint64_t(r) << 40) ^ i ^ (salt * 0x9E3779B97F4A7C15ull);
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<std::byte>(x & 0xFF);
}

// Element `j` of rank `r`'s int32 reduction input: linear in r, so the sum
// over ranks has a closed form (wrapping, as the library's integers do).
std::uint32_t element(int r, std::size_t j, std::uint64_t salt) {
  return static_cast<std::uint32_t>(j * 2654435761u + salt) +
         static_cast<std::uint32_t>(r) * 40503u;
}
std::uint32_t element_sum(int ranks, std::size_t j, std::uint64_t salt) {
  const auto n = static_cast<std::uint32_t>(ranks);
  return n * static_cast<std::uint32_t>(j * 2654435761u + salt) + 40503u * (n * (n - 1) / 2);
}

// Mostly small sizes, some empty, a few up to `max`: log-uniform.
std::size_t pick_bytes(std::mt19937_64& rng, std::size_t max) {
  if (rng() % 10 == 0) return 0;
  const double e = std::uniform_real_distribution<double>(0.0, std::log2(double(max)))(rng);
  return std::min(max, static_cast<std::size_t>(std::exp2(e)));
}

std::string mismatch(const char* what, std::size_t at) {
  return std::string(what) + " wrong at byte " + std::to_string(at);
}

}  // namespace

const char* to_string(Kind k) {
  switch (k) {
    case Kind::kBroadcast:
      return "broadcast";
    case Kind::kAllgather:
      return "allgather";
    case Kind::kAllgatherv:
      return "allgatherv";
    case Kind::kReduceScatter:
      return "reduce_scatter";
    case Kind::kAllreduce:
      return "allreduce";
    case Kind::kBarrier:
      return "barrier";
  }
  return "?";
}

Step plan(std::uint64_t seed, std::uint64_t index, int ranks, std::size_t max_bytes) {
  std::mt19937_64 rng(seed * 0x100000001B3ull + index);
  Step s;
  s.kind = static_cast<Kind>(rng() % 6);
  s.comm = static_cast<int>(rng() % 2);
  s.salt = rng();
  const auto n = static_cast<std::size_t>(ranks);
  const std::size_t total = pick_bytes(rng, max_bytes);
  switch (s.kind) {
    case Kind::kBroadcast:
      s.root = static_cast<int>(rng() % n);
      s.bytes = total;
      break;
    case Kind::kAllgather:
      s.bytes = total / n;
      break;
    case Kind::kAllgatherv:
    case Kind::kReduceScatter: {
      const std::size_t unit = s.kind == Kind::kAllgatherv ? 1 : 4;
      for (std::size_t r = 0; r < n; ++r) {
        s.counts.push_back(rng() % 4 == 0 ? 0 : rng() % (total / unit / n + 1));
      }
      break;
    }
    case Kind::kAllreduce:
      s.bytes = total / 4;
      break;
    case Kind::kBarrier:
      break;
  }
  return s;
}

Buffers prepare(const Step& s, int rank, int ranks) {
  Buffers b;
  const auto n = static_cast<std::size_t>(ranks);
  switch (s.kind) {
    case Kind::kBroadcast:
      b.recv.resize(s.bytes);
      if (rank == s.root) {
        for (std::size_t i = 0; i < s.bytes; ++i) b.recv[i] = pattern(s.root, i, s.salt);
      }
      break;
    case Kind::kAllgather:
      b.send.resize(s.bytes);
      for (std::size_t i = 0; i < s.bytes; ++i) b.send[i] = pattern(rank, i, s.salt);
      b.recv.resize(s.bytes * n);
      break;
    case Kind::kAllgatherv: {
      std::size_t at = 0;
      for (std::size_t c : s.counts) {
        b.displs.push_back(at);
        at += c;
      }
      b.send.resize(s.counts[rank]);
      for (std::size_t i = 0; i < b.send.size(); ++i) b.send[i] = pattern(rank, i, s.salt);
      b.recv.resize(at);
      break;
    }
    case Kind::kReduceScatter:
    case Kind::kAllreduce: {
      std::size_t elems = s.bytes;
      if (s.kind == Kind::kReduceScatter) {
        elems = 0;
        for (std::size_t c : s.counts) elems += c;
      }
      std::vector<std::uint32_t> in(elems);
      for (std::size_t j = 0; j < elems; ++j) in[j] = element(rank, j, s.salt);
      b.send.resize(elems * 4);
      if (elems > 0) std::memcpy(b.send.data(), in.data(), b.send.size());
      b.recv.resize(4 * (s.kind == Kind::kAllreduce ? elems : s.counts[rank]));
      break;
    }
    case Kind::kBarrier:
      break;
  }
  return b;
}

Request post(Communicator& comm, const Step& s, Buffers& b) {
  switch (s.kind) {
    case Kind::kBroadcast:
      return comm.ibroadcast(b.recv.data(), s.bytes, s.root);
    case Kind::kAllgather:
      return comm.iallgather(b.send.data(), b.recv.data(), s.bytes);
    case Kind::kAllgatherv:
      return comm.iallgatherv(b.send.data(), b.recv.data(), s.counts, b.displs);
    case Kind::kReduceScatter:
      return comm.ireduce_scatterv(b.send.data(), b.recv.data(), s.counts, DataType::kInt32,
                                   ReduceOp::kSum);
    case Kind::kAllreduce:
      return comm.iallreduce(b.send.data(), b.recv.data(), s.bytes, DataType::kInt32,
                             ReduceOp::kSum);
    case Kind::kBarrier:
      return comm.ibarrier();
  }
  return {};
}

std::string check(const Step& s, const Buffers& b, int rank, int ranks) {
  switch (s.kind) {
    case Kind::kBroadcast:
      for (std::size_t i = 0; i < s.bytes; ++i) {
        if (b.recv[i] != pattern(s.root, i, s.salt)) return mismatch("broadcast", i);
      }
      break;
    case Kind::kAllgather:
      for (std::size_t i = 0; i < b.recv.size(); ++i) {
        if (b.recv[i] != pattern(static_cast<int>(i / s.bytes), i % s.bytes, s.salt))
          return mismatch("allgather", i);
      }
      break;
    case Kind::kAllgatherv:
      for (int r = 0; r < ranks; ++r) {
        for (std::size_t i = 0; i < s.counts[r]; ++i) {
          if (b.recv[b.displs[r] + i] != pattern(r, i, s.salt))
            return mismatch("allgatherv", b.displs[r] + i);
        }
      }
      break;
    case Kind::kReduceScatter:
    case Kind::kAllreduce: {
      std::size_t first = 0;  // global index of this rank's first result element
      if (s.kind == Kind::kReduceScatter) {
        for (int r = 0; r < rank; ++r) first += s.counts[r];
      }
      for (std::size_t k = 0; k < b.recv.size() / 4; ++k) {
        std::uint32_t got;
        std::memcpy(&got, b.recv.data() + 4 * k, 4);
        if (got != element_sum(ranks, first + k, s.salt)) return mismatch(to_string(s.kind), 4 * k);
      }
      break;
    }
    case Kind::kBarrier:
      break;
  }
  return {};
}

}  // namespace mccl::soak
