// The C API's bootstraps (mccl/mccl_bootstrap.h): handles on the C++
// bootstraps, shared with every communicator created from them (c_support.h's
// mccl_comm_s), so that either may be released first.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "api/c_support.h"
#include "mccl/bootstrap.h"
#include "mccl/callback_bootstrap.h"
#include "mccl/error.h"
#include "mccl/mccl.h"
#include "mccl/pmix_bootstrap.h"
#include "mccl/tcp_bootstrap.h"

namespace {

using namespace mccl::capi;
using mccl::Error;
using mccl::ErrorCode;

// A callback's non-zero result as the error of the creation: MCCL's own
// codes pass through, anything else is the runtime's failure.
void check_callback(int rc, const char* which) {
  if (rc == 0) return;
  const bool ours = rc > MCCL_OK && rc <= MCCL_UNAVAILABLE;
  const auto code = ours ? static_cast<ErrorCode>(rc) : ErrorCode::kTransportError;
  throw Error(code, std::string("the caller's ") + which + " callback returned " +
                        std::to_string(rc) + " while a communicator was being created");
}

// The C callbacks as the C++ bootstrap's one allgather. Copied by value:
// the caller's struct need not outlive mccl_bootstrap_create_callbacks.
mccl::AllgatherCallback as_allgather(const mccl_bootstrap_callbacks_t& cb, int rank, int size) {
  if (cb.allgather != nullptr) {
    return [cb](const void* mine, void* all, std::size_t n) {
      check_callback(cb.allgather(mine, all, n, cb.user_data), "allgather");
    };
  }
  // One broadcast per rank, in rank order, each root's block already in
  // place in `all` when it is broadcast.
  return [cb, rank, size](const void* mine, void* all, std::size_t n) {
    auto* blocks = static_cast<unsigned char*>(all);
    if (n > 0) std::memcpy(blocks + static_cast<std::size_t>(rank) * n, mine, n);
    for (int root = 0; root < size; ++root) {
      check_callback(
          cb.broadcast(blocks + static_cast<std::size_t>(root) * n, n, root, cb.user_data),
          "broadcast");
    }
  };
}

std::chrono::milliseconds timeout_field(std::int64_t ms, const char* name) {
  if (ms < 0) invalid(std::string(name) + " is negative; 0 means the default");
  return std::chrono::milliseconds(ms);
}

void hand_out(std::shared_ptr<mccl::Bootstrap> boot, mccl_bootstrap_t* out) {
  auto b = std::make_unique<mccl_bootstrap_s>();
  b->bootstrap = std::move(boot);
  register_handle(b.get(), HandleKind::kBootstrap);
  *out = b.release();
}

}  // namespace

extern "C" {

mccl_result_t mccl_bootstrap_create_from_env(mccl_bootstrap_t* out) {
  return guard(__func__, [&] {
    require(out, "out");
    hand_out(mccl::make_bootstrap_from_env(), out);
  });
}

mccl_result_t mccl_bootstrap_create_tcp(const char* address, int rank, int size,
                                        const mccl_tcp_options_t* tcp, mccl_bootstrap_t* out) {
  return guard(__func__, [&] {
    require(out, "out");
    if (rank < -1) invalid("rank is " + std::to_string(rank) + "; expected >= 0, or -1");
    if (size < -1 || size == 0) {
      invalid("size is " + std::to_string(size) + "; expected >= 1, or -1");
    }
    mccl::TcpBootstrapOptions o;
    if (address != nullptr) o.address = address;
    o.rank = rank;
    o.size = size;
    if (tcp != nullptr) {
      const mccl_tcp_options_t t = read_versioned(tcp, "tcp");
      o.timeout = timeout_field(t.timeout_ms, "tcp->timeout_ms");
      if (t.secret != nullptr) o.secret = t.secret;
    }
    hand_out(mccl::make_tcp_bootstrap(o), out);
  });
}

mccl_result_t mccl_bootstrap_create_pmix(int64_t timeout_ms, mccl_bootstrap_t* out) {
  return guard(__func__, [&] {
    require(out, "out");
    hand_out(mccl::make_pmix_bootstrap(timeout_field(timeout_ms, "timeout_ms")), out);
  });
}

mccl_result_t mccl_bootstrap_create_callbacks(int rank, int size,
                                              const mccl_bootstrap_callbacks_t* callbacks,
                                              mccl_bootstrap_t* out) {
  return guard(__func__, [&] {
    require(callbacks, "callbacks");
    require(out, "out");
    const mccl_bootstrap_callbacks_t cb = read_versioned(callbacks, "callbacks");
    if (cb.allgather == nullptr && cb.broadcast == nullptr) {
      invalid("callbacks->allgather and callbacks->broadcast are both NULL; set one");
    }
    if (size < 1) invalid("size is " + std::to_string(size) + "; expected >= 1");
    if (rank < 0 || rank >= size) {
      invalid("rank " + std::to_string(rank) + " is outside [0, " + std::to_string(size) + ")");
    }
    hand_out(mccl::make_callback_bootstrap(rank, size, as_allgather(cb, rank, size)), out);
  });
}

mccl_result_t mccl_bootstrap_rank(mccl_bootstrap_t bootstrap, int* rank) {
  return answer(__func__, rank, "rank", [&] {
    require_bootstrap(bootstrap);
    return bootstrap->bootstrap->rank();
  });
}

mccl_result_t mccl_bootstrap_size(mccl_bootstrap_t bootstrap, int* size) {
  return answer(__func__, size, "size", [&] {
    require_bootstrap(bootstrap);
    return bootstrap->bootstrap->size();
  });
}

mccl_result_t mccl_comm_create(mccl_bootstrap_t bootstrap, const mccl_comm_options_t* options,
                               mccl_comm_t* out) {
  return guard(__func__, [&] {
    require_bootstrap(bootstrap);
    require(out, "out");
    create_comm(nullptr, bootstrap->bootstrap, comm_options(options), out);
  });
}

mccl_result_t mccl_comm_grow(mccl_comm_t comm, mccl_bootstrap_t bootstrap, mccl_comm_t* out) {
  return guard(__func__, [&] {
    require_comm(comm);
    require_bootstrap(bootstrap);
    require(out, "out");
    auto c =
        std::make_unique<mccl_comm_s>(bootstrap->bootstrap, comm->comm.grow(*bootstrap->bootstrap));
    register_handle(c.get(), HandleKind::kComm);
    *out = c.release();
  });
}

mccl_result_t mccl_bootstrap_destroy(mccl_bootstrap_t bootstrap) {
  return guard(__func__, [&] {
    unregister_handle(bootstrap, HandleKind::kBootstrap, "bootstrap");
    delete bootstrap;
  });
}

}  // extern "C"
