#include "mp_reuse.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mp_checks.h"

namespace mccl::mp {
namespace {

// Rank r's element i of round `salt`, small enough that N of them never
// overflow.
std::int32_t reuse_value(int rank, std::size_t i, std::uint64_t salt) {
  return static_cast<std::int32_t>((rank + 1) * static_cast<std::int64_t>((i + salt) % 4099));
}

bool check_sums(const std::vector<std::int32_t>& got, std::size_t first, int n, std::uint64_t salt,
                const char* what) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    std::int32_t want = 0;
    for (int r = 0; r < n; ++r) want += reuse_value(r, first + i, salt);
    if (got[i] != want) {
      std::printf("%s: element %zu is %d, not %d\n", what, first + i, got[i], want);
      return false;
    }
  }
  return true;
}

// reuse's reductions: `per_rank` int32 per block, every buffer overwritten
// as soon as a call returns.
int reuse_reductions(mccl::Communicator& c, std::size_t per_rank, std::uint64_t salt) {
  const int n = c.size(), me = c.rank();
  const std::size_t count = per_rank * static_cast<std::size_t>(n);
  std::vector<std::int32_t> send(count), recv(count), block(per_rank);
  auto fill = [&](std::vector<std::int32_t>& v) {
    for (std::size_t i = 0; i < count; ++i) v[i] = reuse_value(me, i, salt);
  };
  fill(send);
  c.reduce_scatter(send.data(), block.data(), per_rank, mccl::DataType::kInt32,
                   mccl::ReduceOp::kSum);
  std::fill(send.begin(), send.end(), -1);
  std::vector<std::int32_t> got = block;
  std::fill(block.begin(), block.end(), -2);
  if (!check_sums(got, per_rank * static_cast<std::size_t>(me), n, salt, "reduce-scatter"))
    return 2;
  fill(send);
  c.allreduce(send.data(), recv.data(), count, mccl::DataType::kInt32, mccl::ReduceOp::kSum);
  std::fill(send.begin(), send.end(), -3);
  got = recv;
  std::fill(recv.begin(), recv.end(), -4);
  if (!check_sums(got, 0, n, salt, "allreduce")) return 2;
  fill(recv);
  c.allreduce(mccl::kInPlace, recv.data(), count, mccl::DataType::kInt32, mccl::ReduceOp::kSum);
  got = recv;
  std::fill(recv.begin(), recv.end(), -5);
  return check_sums(got, 0, n, salt, "allreduce in place") ? 0 : 2;
}

}  // namespace

int reuse(mccl::Communicator& c, std::size_t bytes, int rounds) {
  const int n = c.size(), me = c.rank();
  std::vector<std::byte> send(bytes), recv(bytes * n), buf(bytes);
  // The offload engine has no alltoall (kUnavailable).
  const char* engine = std::getenv("MCCL_PROGRESS");
  const bool alltoall = engine == nullptr || std::string(engine) != "offload";
  std::vector<std::byte> a_send(alltoall ? bytes * n : 0), a_recv(alltoall ? bytes * n : 0);
  auto fill = [&](std::uint64_t salt) {
    for (std::size_t i = 0; i < bytes; ++i) send[i] = pattern(me, i, salt);
  };
  fill(1);
  for (int round = 1; round <= rounds; ++round) {
    const auto salt = static_cast<std::uint64_t>(round);
    c.allgather(send.data(), recv.data(), bytes);
    // At once, before any check: the next round's bytes over both buffers.
    fill(salt + 1);
    std::vector<std::byte> got = recv;
    std::fill(recv.begin(), recv.end(), std::byte{0xEE});
    for (int r = 0; r < n; ++r) {
      if (!check(got.data() + r * bytes, bytes, r, salt, "allgather")) return 2;
    }
    const int root = round % n;
    if (me == root) {
      for (std::size_t i = 0; i < bytes; ++i) buf[i] = pattern(root, i, salt);
    }
    c.broadcast(buf.data(), bytes, root);
    std::vector<std::byte> bgot = buf;
    std::fill(buf.begin(), buf.end(), std::byte{0xDD});
    if (!check(bgot.data(), bytes, root, salt, "broadcast")) return 2;
    if (reuse_reductions(c, bytes / sizeof(std::int32_t), salt) != 0) return 2;
    if (!alltoall) continue;
    // Block d of this rank's send buffer goes to rank d.
    for (int d = 0; d < n; ++d) {
      for (std::size_t i = 0; i < bytes; ++i) {
        a_send[d * bytes + i] = pattern(me, i, salt * 31 + static_cast<std::uint64_t>(d));
      }
    }
    c.alltoall(a_send.data(), a_recv.data(), bytes);
    std::fill(a_send.begin(), a_send.end(), std::byte{0xCC});
    std::vector<std::byte> agot = a_recv;
    std::fill(a_recv.begin(), a_recv.end(), std::byte{0xBB});
    for (int r = 0; r < n; ++r) {
      if (!check(agot.data() + r * bytes, bytes, r, salt * 31 + static_cast<std::uint64_t>(me),
                 "alltoall")) {
        return 2;
      }
    }
  }
  return 0;
}

}  // namespace mccl::mp
