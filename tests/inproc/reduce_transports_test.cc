// reduce_scatter and allreduce (every algorithm) with ranks on threads of
// this process, over each transport this machine has: the in-memory fabric,
// UDP loopback multicast with the TCP reliable transport, and UDP with UCX
// as the reliable transport (UCX over tcp on lo). Sizes include 0, fewer
// elements than ranks and counts no rank count divides; the UDP runs also
// drop 5% of the multicast datagrams received (MCCL_UDP_TEST_DROP_PERMILLE),
// so the allgather step's repairs cross the reliable transport under test.
// (On lo datagrams are large and few: at 1% a whole run sometimes lost none.)
// Checked against the float64 / exact reference of reduce_util.h, and for
// identical bits on every rank.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "harness.h"
#include "reduce_util.h"

namespace mccl::testing {
namespace {

using namespace std::chrono_literals;

enum class Net { kSim, kUdpTcp, kUdpUcx };

const char* name(Net t) {
  switch (t) {
    case Net::kSim:
      return "sim";
    case Net::kUdpTcp:
      return "udp_tcp";
    case Net::kUdpUcx:
      return "udp_ucx";
  }
  return "?";
}

// The environment a transport needs, for the communicators created while
// `env` lives.
void set_net_env(ScopedEnv& env, Net t) {
  if (t == Net::kSim) return;
  env.set("MCCL_UDP_TEST_DROP_PERMILLE", "50");
  env.set("MCCL_RELIABLE", t == Net::kUdpUcx ? "ucx" : "tcp");
  if (t == Net::kUdpUcx) {
    // Shared memory would be refused (peer failures must be detectable),
    // and without a device list UCX adds the host's other interfaces.
    env.set("UCX_TLS", "tcp");
    env.set("UCX_NET_DEVICES", "lo");
  }
}

struct Case {
  DataType type;
  ReduceOp op;
};
// Every type and op appears once across the list.
constexpr Case kCases[] = {
    {DataType::kFloat32, ReduceOp::kSum},  {DataType::kFloat64, ReduceOp::kProd},
    {DataType::kBFloat16, ReduceOp::kSum}, {DataType::kFloat16, ReduceOp::kMax},
    {DataType::kInt32, ReduceOp::kMin},    {DataType::kInt64, ReduceOp::kSum},
    {DataType::kUInt8, ReduceOp::kProd}};
constexpr AllreduceAlgorithm kAlgos[] = {AllreduceAlgorithm::kRsMulticast,
                                         AllreduceAlgorithm::kRing,
                                         AllreduceAlgorithm::kRecursiveDoubling};

using Param = std::tuple<Net, int>;  // transport, ranks
class ReduceOverTransport : public ::testing::TestWithParam<Param> {};

TEST_P(ReduceOverTransport, SizeSweep) {
  const auto [net, n] = GetParam();
  if (net == Net::kUdpUcx && !MCCL_TEST_HAVE_UCX) GTEST_SKIP() << "this MCCL was built without UCX";
  ScopedEnv env;
  set_net_env(env, net);
  InProcessWorld world(n);
  const TransportKind kind = net == Net::kSim ? TransportKind::kSim : TransportKind::kUdp;
  std::vector<std::vector<Communicator>> comms;
  for (auto algo : kAlgos) {
    comms.push_back(create_communicators(world, {.transport = kind,
                                                 .progress = ProgressKind::kInline,
                                                 .timeout = 60s,
                                                 .allreduce_algorithm = algo}));
  }
  std::vector<Communicator*> every;
  for (auto& set : comms) {
    for (auto& c : set) every.push_back(&c);
  }
  std::uint64_t salt = 40 + static_cast<std::uint64_t>(net) * 1000 + n;
  for (std::size_t count :
       {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1001}, std::size_t{100003}}) {
    for (const auto& [t, op] : kCases) {
      ++salt;
      SCOPED_TRACE(std::string(name(net)) + " ranks=" + std::to_string(n) +
                   " count=" + std::to_string(count) + " " + to_string(t) + " " + to_string(op));
      const std::size_t es = size_of(t);
      std::vector<std::vector<std::byte>> rs_send(n), rs_recv(n), ar_send(n);
      std::vector<std::vector<std::byte>> ar_recv[3];
      std::vector<Request> reqs;
      for (int r = 0; r < n; ++r) {
        rs_send[r] = make_input(t, op, r, 0, n * count, salt);
        rs_recv[r].resize(count * es);
        ar_send[r] = make_input(t, op, r, 0, count, salt);
        for (auto& v : ar_recv) v.emplace_back(count * es);
      }
      for (int r = 0; r < n; ++r) {
        reqs.push_back(
            comms[0][r].ireduce_scatter(rs_send[r].data(), rs_recv[r].data(), count, t, op));
        for (int a = 0; a < 3; ++a) {
          reqs.push_back(
              comms[a][r].iallreduce(ar_send[r].data(), ar_recv[a][r].data(), count, t, op));
        }
      }
      drive(reqs, 60s, every);
      for (int r = 0; r < n; ++r) {
        ASSERT_TRUE(check_reduced(t, op, rs_recv[r].data(), n, r * count, count, salt))
            << "reduce_scatter, rank " << r;
      }
      for (int a = 0; a < 3; ++a) {
        ASSERT_TRUE(check_reduced(t, op, ar_recv[a][0].data(), n, 0, count, salt))
            << "allreduce algorithm " << a;
        for (int r = 1; r < n; ++r) {
          ASSERT_EQ(ar_recv[a][r], ar_recv[a][0]) << "allreduce algorithm " << a << ": rank " << r;
        }
      }
    }
  }
  if (n > 1) {
    std::uint64_t mcast = 0, repairs = 0;
    for (auto& c : comms[0]) {
      mcast += c.stats().mcast_bytes_sent;
      repairs += c.stats().repairs_requested;
    }
    EXPECT_GT(mcast, 0u) << "the reduce-scatter + multicast allreduce did multicast";
    if (net != Net::kSim) {
      EXPECT_GT(repairs, 0u) << "5% of the datagrams were dropped, yet nothing was repaired";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, ReduceOverTransport,
                         ::testing::Combine(::testing::Values(Net::kSim, Net::kUdpTcp,
                                                              Net::kUdpUcx),
                                            ::testing::Values(1, 3, 4)),
                         [](const auto& param_info) {
                           return std::string(name(std::get<0>(param_info.param))) + "_" +
                                  std::to_string(std::get<1>(param_info.param)) + "ranks";
                         });

}  // namespace
}  // namespace mccl::testing
