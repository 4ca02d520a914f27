// Ranks as threads (or objects driven from one thread) of a single process,
// joined by MCCL's in-memory fabric: for tests, demos and experiments.
//
//   mccl::InProcessWorld world(8, {.loss = 0.01, .seed = 42});
//   auto comms = mccl::create_communicators(world);   // one per rank
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "mccl/bootstrap.h"
#include "mccl/communicator.h"
#include "mccl/export.h"

namespace mccl {

// Faults and limits of the simulated network. Probabilities are per
// delivered datagram and per receiver, drawn from a generator seeded with
// `seed`, so a run can be reproduced.
struct SimFabricOptions {
  double loss = 0.0;                    // datagram silently lost
  double duplicate = 0.0;               // delivered twice
  double reorder = 0.0;                 // held back behind later datagrams
  double corrupt = 0.0;                 // one byte flipped
  std::chrono::nanoseconds latency{0};  // one-way delay of every datagram
  double link_gbit_per_s = 0.0;         // injection rate per rank; 0 = unlimited
  std::size_t mtu = 1500;               // largest datagram, header included
  std::size_t receive_depth = 16384;    // datagrams queued per receiver before drops
  std::uint64_t seed = 1;
};

class MCCL_API InProcessWorld {
 public:
  InProcessWorld(int size, const SimFabricOptions& fabric = {});
  ~InProcessWorld();
  InProcessWorld(const InProcessWorld&) = delete;
  InProcessWorld& operator=(const InProcessWorld&) = delete;

  int size() const;
  // The bootstrap of one rank; valid while the world lives.
  std::unique_ptr<Bootstrap> bootstrap(int rank);
  // Simulates the death of a rank: its peers' reliable sends and receives
  // report it as failed, and its datagrams stop.
  void kill_rank(int rank);

 private:
  class Impl;  // the library's: the rendezvous and the in-memory fabric
  std::shared_ptr<Impl> impl_;
};

// Creates one communicator per rank of `world` (each on its own thread, as
// creation is collective) and returns them ordered by rank.
MCCL_API std::vector<Communicator> create_communicators(InProcessWorld& world,
                                                        const CommOptions& options = {});

}  // namespace mccl
