#include "mccl/inprocess.h"

#include <cmath>
#include <exception>
#include <string>
#include <thread>
#include <utility>

#include "api/bootstrap.h"
#include "bootstrap/inprocess.h"
#include "mccl/error.h"

namespace mccl {

// A world is the rendezvous of its bootstraps and the fabric of its
// transports; every bootstrap holds both too, so they outlive the world
// object while a communicator still uses them.
class InProcessWorld::Impl {
 public:
  std::shared_ptr<::mccl::bootstrap::InProcessExchange> exchange;
  std::shared_ptr<transport::sim::Fabric> fabric;
};

InProcessWorld::InProcessWorld(int size, const SimFabricOptions& fabric) {
  if (size < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "InProcessWorld: size must be at least 1, got " + std::to_string(size));
  }
  // Probabilities are in [0, 1] (NaN fails every comparison, so the test is
  // written to reject it); rates and delays are finite and not negative.
  const std::pair<const char*, double> probabilities[] = {{"loss", fabric.loss},
                                                          {"duplicate", fabric.duplicate},
                                                          {"reorder", fabric.reorder},
                                                          {"corrupt", fabric.corrupt}};
  for (const auto& [name, p] : probabilities) {
    if (!(p >= 0.0 && p <= 1.0)) {
      throw Error(ErrorCode::kInvalidArgument, std::string("InProcessWorld: ") + name +
                                                   " is a probability in [0, 1], got " +
                                                   std::to_string(p));
    }
  }
  if (!(fabric.link_gbit_per_s >= 0.0 && std::isfinite(fabric.link_gbit_per_s))) {
    throw Error(ErrorCode::kInvalidArgument,
                "InProcessWorld: link_gbit_per_s must be finite and >= 0 (0 = unlimited), got " +
                    std::to_string(fabric.link_gbit_per_s));
  }
  if (fabric.latency.count() < 0) {
    throw Error(ErrorCode::kInvalidArgument, "InProcessWorld: latency is negative (" +
                                                 std::to_string(fabric.latency.count()) + " ns)");
  }
  if (fabric.receive_depth == 0) {
    throw Error(ErrorCode::kInvalidArgument, "InProcessWorld: receive_depth must be at least 1");
  }
  if (fabric.mtu < 128 || fabric.mtu > 65535) {
    throw Error(ErrorCode::kInvalidArgument,
                "InProcessWorld: mtu must be in [128, 65535], got " + std::to_string(fabric.mtu));
  }
  impl_ = std::make_shared<Impl>();
  impl_->exchange = std::make_shared<::mccl::bootstrap::InProcessExchange>(size);
  impl_->fabric = ::mccl::bootstrap::make_in_process_fabric(fabric);
}

InProcessWorld::~InProcessWorld() = default;

int InProcessWorld::size() const { return impl_->exchange->size(); }

std::unique_ptr<Bootstrap> InProcessWorld::bootstrap(int rank) {
  if (rank < 0 || rank >= size()) {
    throw Error(ErrorCode::kInvalidArgument, "InProcessWorld::bootstrap: rank " +
                                                 std::to_string(rank) + " is out of range [0, " +
                                                 std::to_string(size()) + ")");
  }
  return detail::public_bootstrap(std::make_unique<::mccl::bootstrap::InProcessRendezvous>(
      impl_->exchange, impl_->fabric, rank));
}

void InProcessWorld::kill_rank(int rank) {
  if (rank < 0 || rank >= size()) {
    throw Error(ErrorCode::kInvalidArgument,
                "InProcessWorld::kill_rank: rank " + std::to_string(rank) + " is out of range");
  }
  ::mccl::bootstrap::kill_in_process_rank(*impl_->fabric, rank);
}

std::vector<Communicator> create_communicators(InProcessWorld& world, const CommOptions& options) {
  const int n = world.size();
  std::vector<std::unique_ptr<Communicator>> made(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto boot = world.bootstrap(r);
        made[r] = std::make_unique<Communicator>(*boot, options);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  std::vector<Communicator> out;
  out.reserve(n);
  for (auto& c : made) out.push_back(std::move(*c));
  return out;
}

}  // namespace mccl
