// The bootstrap of an in-process world (mccl::InProcessWorld): every rank
// is a thread (or an object) of this process, the exchanges meet in memory
// and the ranks' transports join one in-memory fabric.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "bootstrap/rendezvous.h"
#include "mccl/inprocess.h"

namespace mccl::transport::sim {
class Fabric;
}

namespace mccl::bootstrap {

// The rendezvous of a world's bootstraps.
class InProcessExchange {
 public:
  explicit InProcessExchange(int size) : size_(size), calls_(size, 0) {}
  int size() const { return size_; }

  // The collective exchange behind InProcessRendezvous::allgather: the k-th
  // call of every rank meets the k-th call of every other. Blocking; kTimeout
  // naming the ranks that never arrived, kMismatch when contributions differ
  // in length.
  common::Status allgather(int rank, std::span<const std::byte> mine,
                           std::chrono::milliseconds timeout, std::vector<std::byte>& all);

 private:
  struct Round {
    std::vector<std::vector<std::byte>> contributions;
    std::vector<bool> arrived;
    int count = 0;
    int taken = 0;
  };
  const int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::uint64_t> calls_;  // exchanges entered, per rank
  std::map<std::uint64_t, Round> rounds_;
};

// A rendezvous whose ranks are in this process. Holds the world's exchange
// and fabric, so both live as long as any of its rendezvous.
class InProcessRendezvous final : public Rendezvous {
 public:
  InProcessRendezvous(std::shared_ptr<InProcessExchange> exchange,
                      std::shared_ptr<transport::sim::Fabric> fabric, int rank)
      : exchange_(std::move(exchange)), fabric_(std::move(fabric)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return exchange_->size(); }
  common::Status allgather(std::span<const std::byte> mine, std::chrono::milliseconds timeout,
                           std::vector<std::byte>& all) override {
    return exchange_->allgather(rank_, mine, timeout, all);
  }
  // The in-memory fabric the world's ranks share (transport/sim).
  transport::sim::Fabric& fabric() const { return *fabric_; }

 private:
  std::shared_ptr<InProcessExchange> exchange_;
  std::shared_ptr<transport::sim::Fabric> fabric_;
  int rank_;
};

// `r` as an in-process world's rendezvous, or null when its ranks are
// processes (or `r` is null: the application's own mccl::Bootstrap). The one
// place that asks: the transport choice (auto is sim in-process) and the sim
// transport's fabric both come from here.
const InProcessRendezvous* as_in_process(const Rendezvous* r);

// The in-memory fabric of a world of ranks as threads, from its public
// options (already checked by the caller, mccl::InProcessWorld).
std::shared_ptr<transport::sim::Fabric> make_in_process_fabric(const SimFabricOptions& options);

// Makes `rank` of `fabric` stop sending and receiving, as if its process
// had died (InProcessWorld::kill_rank).
void kill_in_process_rank(transport::sim::Fabric& fabric, int rank);

}  // namespace mccl::bootstrap
