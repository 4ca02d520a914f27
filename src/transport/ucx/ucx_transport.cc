// The UCX reliable transport's factory: checks the config, then sets up an
// endpoint (endpoint.h; its UCX setup is setup.cc).
#include "transport/ucx/ucx_transport.h"

#include <chrono>

#include "transport/ucx/endpoint.h"

namespace mccl::transport::ucx {

using namespace std::chrono_literals;

common::Status create_ucx_reliable(const UcxReliableConfig& config, const OobAllgather& oob,
                                   std::unique_ptr<ReliableTransport>& out) {
  out.reset();
  if (config.size <= 0) return common::invalid_argument("ucx: size must be positive");
  if (config.rank < 0 || config.rank >= config.size) {
    return common::invalid_argument("ucx: rank " + std::to_string(config.rank) + " is outside 0.." +
                                    std::to_string(config.size - 1));
  }
  if (config.connect_timeout <= 0ms || config.close_timeout < 0ms) {
    return common::invalid_argument(
        "ucx: rank " + std::to_string(config.rank) +
        ": connect_timeout must be positive and close_timeout not negative");
  }
  if (config.max_outstanding_bytes == 0 || config.max_buffered_bytes == 0) {
    return common::invalid_argument(
        "ucx: rank " + std::to_string(config.rank) +
        ": max_outstanding_bytes and max_buffered_bytes must be positive");
  }
  auto t = std::make_unique<UcxEndpoint>(config);
  common::Status s = t->init_ucx();
  if (!s) return s;
  if (config.size > 1) {
    s = t->connect(oob);
    if (!s) return s;
  }
  out = std::move(t);
  return common::Status::ok();
}

}  // namespace mccl::transport::ucx
