// src/topo: where progress threads go. Ranks sharing a machine must not all
// land on one core (they would take turns on it while other cores idle).
#include "topo/placement.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <set>
#include <thread>
#include <vector>

namespace mccl::topo {
namespace {

int online_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return CPU_COUNT(&set);
}

TEST(Placement, AnExplicitCpuWins) {
  Placement p = choose_progress_cpu(0, "", 5);
  EXPECT_EQ(p.cpu, 0);
  EXPECT_NE(p.reason.find("MCCL_PROGRESS_CPU"), std::string::npos) << p.reason;
}

TEST(Placement, LocalRanksTakeDifferentCoresFromTheEnd) {
  Placement first = choose_progress_cpu(-1, "", 0);
  ASSERT_GE(first.cpu, 0) << first.reason;
  if (online_cpus() < 2) GTEST_SKIP() << "one CPU: nothing to spread over";
  std::set<int> cpus;
  for (int i = 0; i < 2; ++i) cpus.insert(choose_progress_cpu(-1, "", i).cpu);
  EXPECT_EQ(cpus.size(), 2u) << "local ranks 0 and 1 share a core";
  EXPECT_GT(first.cpu, choose_progress_cpu(-1, "", 1).cpu) << "the first rank takes the last core";
}

TEST(Placement, MoreLocalRanksThanCoresWrapAround) {
  // Whatever the core count, some index past it comes back to the last core.
  const int first = choose_progress_cpu(-1, "", 0).cpu;
  bool wrapped = false;
  for (int i = 1; i <= 1024 && !wrapped; ++i) wrapped = choose_progress_cpu(-1, "", i).cpu == first;
  EXPECT_TRUE(wrapped);
  EXPECT_GE(choose_progress_cpu(-1, "", -3).cpu, 0) << "a negative index counts as 0";
}

TEST(Placement, TheMachineIdIsStableAndSet) {
  EXPECT_NE(machine_id(), 0u) << "no /proc/sys/kernel/random/boot_id";
  EXPECT_EQ(machine_id(), machine_id());
}

TEST(Placement, TheTopologyIsLoadedOncePerProcess) {
  // Every thread-engine communicator asks for a CPU; reloading hwloc each
  // time cost ~250 ms and leaked memory. Ask from several threads at once.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 200; ++i) (void)choose_progress_cpu(-1, i % 2 ? "lo" : "", i);
    });
  }
  for (auto& t : threads) t.join();
  (void)describe_machine();
  EXPECT_EQ(topology_loads(), 1);
}

TEST(Placement, AnInterfaceThatIsNoDeviceReadsNoIoDevices) {
  // Loopback and veths have no locality; reading every PCI device's
  // configuration for them cost each process's creation most of its load.
  (void)choose_progress_cpu(-1, "lo", 0);
  (void)choose_progress_cpu(-1, "", 1);
  EXPECT_EQ(topology_loads_with_io(), 0);
}

}  // namespace
}  // namespace mccl::topo
