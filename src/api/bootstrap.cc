// The public bootstrap factories (mccl/tcp_bootstrap.h, pmix_bootstrap.h,
// callback_bootstrap.h) and the one class behind all of them.
#include "api/bootstrap.h"

#include <utility>

#include "api/boundary.h"
#include "common/settings.h"
#include "mccl/callback_bootstrap.h"
#include "mccl/pmix_bootstrap.h"
#include "mccl/tcp_bootstrap.h"

namespace mccl {
namespace detail {
namespace {

class RendezvousBootstrap final : public Bootstrap {
 public:
  explicit RendezvousBootstrap(std::unique_ptr<bootstrap::Rendezvous> r) : r_(std::move(r)) {}
  int rank() const override { return r_->rank(); }
  int size() const override { return r_->size(); }
  std::vector<std::byte> allgather(std::span<const std::byte> mine,
                                   std::chrono::milliseconds timeout) override {
    std::vector<std::byte> all;
    throw_if_error(r_->allgather(mine, timeout, all));
    return all;
  }
  bootstrap::Rendezvous& rendezvous() { return *r_; }

 private:
  std::unique_ptr<bootstrap::Rendezvous> r_;
};

// A factory's steps: the MCCL_* variables checked (as where a communicator
// is created), then `open` of the bootstrap layer.
template <typename Open>
std::unique_ptr<Bootstrap> make(Open&& open) {
  throw_if_error(common::check_settings());
  std::unique_ptr<bootstrap::Rendezvous> r;
  throw_if_error(open(r));
  return public_bootstrap(std::move(r));
}

}  // namespace

bootstrap::Rendezvous* rendezvous_of(Bootstrap& b) {
  auto* ours = dynamic_cast<RendezvousBootstrap*>(&b);
  return ours != nullptr ? &ours->rendezvous() : nullptr;
}

std::unique_ptr<Bootstrap> public_bootstrap(std::unique_ptr<bootstrap::Rendezvous> r) {
  return std::make_unique<RendezvousBootstrap>(std::move(r));
}

}  // namespace detail

std::unique_ptr<Bootstrap> make_tcp_bootstrap(const TcpBootstrapOptions& options) {
  return detail::make([&](auto& r) { return bootstrap::open_tcp(options, r); });
}

std::unique_ptr<Bootstrap> make_bootstrap_from_env() {
  return detail::make([](auto& r) { return bootstrap::open_from_env(r); });
}

std::unique_ptr<Bootstrap> make_pmix_bootstrap(std::chrono::milliseconds timeout) {
  return detail::make([&](auto& r) { return bootstrap::open_pmix(timeout, r); });
}

std::unique_ptr<Bootstrap> make_callback_bootstrap(int rank, int size,
                                                   AllgatherCallback allgather) {
  return detail::make(
      [&](auto& r) { return bootstrap::open_callback(rank, size, std::move(allgather), r); });
}

}  // namespace mccl
