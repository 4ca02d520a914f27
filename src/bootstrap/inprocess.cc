#include "bootstrap/inprocess.h"

#include <string>

#include "common/clock.h"
#include "transport/sim/sim_transport.h"

namespace mccl::bootstrap {

common::Status InProcessExchange::allgather(int rank, std::span<const std::byte> mine,
                                            std::chrono::milliseconds timeout,
                                            std::vector<std::byte>& out) {
  std::unique_lock lock(mu_);
  const std::uint64_t k = calls_[rank]++;
  Round& round = rounds_[k];
  if (round.contributions.empty()) {
    round.contributions.resize(size_);
    round.arrived.assign(size_, false);
  }
  round.contributions[rank].assign(mine.begin(), mine.end());
  round.arrived[rank] = true;
  if (++round.count == size_) cv_.notify_all();
  // Not wait_for(timeout): libstdc++ adds it to now() and overflows on huge
  // timeouts, which made every exchange fail at once.
  const common::Deadline deadline = common::Deadline::after(timeout);
  auto arrived = [&] { return round.count == size_; };
  bool complete = true;
  if (deadline.is_never()) {
    cv_.wait(lock, arrived);
  } else {
    complete = cv_.wait_until(lock, deadline.at(), arrived);
  }
  if (!complete) {
    std::string missing;
    for (int r = 0; r < size_; ++r) {
      if (!round.arrived[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    // Leave the round in place: latecomers still find it (and its count).
    return common::timeout_error("rank " + std::to_string(rank) + ": bootstrap exchange #" +
                                 std::to_string(k) + " timed out after " +
                                 std::to_string(timeout.count()) +
                                 " ms; ranks never arrived: " + missing);
  }
  out.clear();
  out.reserve(mine.size() * size_);
  for (int r = 0; r < size_; ++r) {
    if (round.contributions[r].size() != mine.size()) {
      return common::mismatch_error("rank " + std::to_string(rank) +
                                    ": bootstrap contributions differ in length (rank " +
                                    std::to_string(r) + ")");
    }
    out.insert(out.end(), round.contributions[r].begin(), round.contributions[r].end());
  }
  if (++round.taken == size_) rounds_.erase(k);
  return common::Status::ok();
}

const InProcessRendezvous* as_in_process(const Rendezvous* r) {
  return dynamic_cast<const InProcessRendezvous*>(r);
}

std::shared_ptr<transport::sim::Fabric> make_in_process_fabric(const SimFabricOptions& o) {
  transport::sim::FabricConfig c;
  c.loss = o.loss;
  c.duplicate = o.duplicate;
  c.reorder = o.reorder;
  c.corrupt = o.corrupt;
  c.latency = o.latency;
  c.link_gbit_per_s = o.link_gbit_per_s;
  c.mtu = o.mtu;
  c.receive_depth = o.receive_depth;
  c.seed = o.seed;
  return std::make_shared<transport::sim::Fabric>(c);
}

void kill_in_process_rank(transport::sim::Fabric& fabric, int rank) { fabric.kill_rank(rank); }

}  // namespace mccl::bootstrap
