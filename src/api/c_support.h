// What the C API (c_api.cc) keeps beside its entry points: the structs
// behind its opaque handles, the registry that tells a live handle from a
// destroyed or made-up one, the checks of arguments and the conversion of
// the versioned C option structs to the C++ ones.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "mccl/communicator.h"
#include "mccl/error.h"
#include "mccl/inprocess.h"
#include "mccl/mccl.h"
#include "mccl/options.h"

struct mccl_world_s {
  std::shared_ptr<mccl::InProcessWorld> world;
};

struct mccl_comm_s {
  // Declaration order is destruction order reversed: the communicator goes
  // first, then its bootstrap, then (if last) the world.
  std::shared_ptr<mccl::InProcessWorld> world;
  std::unique_ptr<mccl::Bootstrap> bootstrap;
  mccl::Communicator comm;
  std::atomic<int> live_requests{0};

  mccl_comm_s(std::shared_ptr<mccl::InProcessWorld> w, int rank, const mccl::CommOptions& options)
      : world(std::move(w)), bootstrap(world->bootstrap(rank)), comm(*bootstrap, options) {}
};

struct mccl_request_s {
  mccl_comm_s* owner = nullptr;
  // allgatherv's (and reduce_scatterv's) arrays, owned here because the C caller's may not outlive
  // the call; declared before `request` so they outlive it.
  std::vector<std::size_t> counts;
  std::vector<std::size_t> displs;
  mccl::Request request;
  bool done = false;
};

namespace mccl::capi {

// ---------------------------------------------------------------- registry
//
// mccl.h promises that no signal escapes: a handle destroyed twice, used
// after destruction or never made by MCCL must give MCCL_INVALID_ARGUMENT,
// not a crash. Every handle is recorded here while it is live, and looked
// up (by address only, never dereferenced) before use. A handle destroyed
// by one thread while another uses it remains the caller's race.

enum class HandleKind { kWorld, kComm, kRequest };

void register_handle(const void* handle, HandleKind kind);
// Throws kInvalidArgument naming `name` unless `handle` is live and of `kind`.
void require_live(const void* handle, HandleKind kind, const char* name);
// require_live, then forgets the handle (the caller deletes it).
void unregister_handle(const void* handle, HandleKind kind, const char* name);

inline void require_world(mccl_world_t w) { require_live(w, HandleKind::kWorld, "world"); }
inline void require_comm(mccl_comm_t c) { require_live(c, HandleKind::kComm, "comm"); }
inline void require_request(mccl_request_t r) { require_live(r, HandleKind::kRequest, "request"); }

// ---------------------------------------------------------------- checks

[[noreturn]] inline void invalid(const std::string& message) {
  throw mccl::Error(mccl::ErrorCode::kInvalidArgument, message);
}

// NULL handles and out-pointers are the caller's mistake, reported by name.
inline void require(const void* p, const char* name) {
  if (p == nullptr) invalid(std::string("argument '") + name + "' is NULL");
}

// A buffer may be NULL only when it is given no bytes.
inline void require_buffer(const void* p, std::size_t bytes, const char* name) {
  if (p == nullptr && bytes > 0) {
    invalid(std::string("argument '") + name + "' is NULL but " + std::to_string(bytes) +
            " bytes were asked for");
  }
}

// Copies a caller's versioned struct. Fields beyond the caller's struct_size
// stay 0 (unset); bytes beyond ours must be 0, or the caller asks for
// something this library does not know.
template <typename T>
T read_versioned(const T* in, const char* name) {
  const std::size_t size = in->struct_size;
  if (size < sizeof(std::size_t)) {
    invalid(std::string(name) + "->struct_size is " + std::to_string(size) +
            "; set it to sizeof the struct (the MCCL_*_INIT macros do)");
  }
  if (size > sizeof(T)) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(in);
    if (std::any_of(bytes + sizeof(T), bytes + size, [](unsigned char b) { return b != 0; })) {
      throw mccl::Error(mccl::ErrorCode::kUnavailable,
                        std::string(name) + " sets fields unknown to MCCL " + mccl_version() +
                            " (struct_size " + std::to_string(size) + " > " +
                            std::to_string(sizeof(T)) + ")");
    }
  }
  T out{};
  std::memcpy(static_cast<void*>(&out), in, std::min(size, sizeof(T)));
  return out;
}

// Versioned C options to C++ ones; out-of-range values throw
// kInvalidArgument naming the field.
mccl::SimFabricOptions to_cpp(const mccl_sim_options_t& c);
mccl::CommOptions to_cpp(const mccl_comm_options_t& c);

}  // namespace mccl::capi
