// What the C API (c_api.cc) keeps beside its entry points: the structs
// behind its opaque handles, the registry that tells a live handle from a
// destroyed or made-up one, the checks of arguments and the conversion of
// the versioned C option structs to the C++ ones.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <unordered_set>
#include <vector>

#include "mccl/bootstrap.h"
#include "mccl/communicator.h"
#include "mccl/error.h"
#include "mccl/inprocess.h"
#include "mccl/mccl.h"
#include "mccl/options.h"
#include "mccl/progress_thread.h"

struct mccl_world_s {
  std::shared_ptr<mccl::InProcessWorld> world;
};

struct mccl_bootstrap_s {
  // Shared with every communicator created from it.
  std::shared_ptr<mccl::Bootstrap> bootstrap;
};

struct mccl_progress_thread_s {
  mccl::ProgressThread thread;
};

struct mccl_comm_s {
  // Declaration order is destruction order reversed: the communicator goes
  // first, then (if last) its bootstrap, then (if last) the world. Holding
  // the bootstrap keeps rank 0's TCP store up for creations still to come.
  std::shared_ptr<mccl::InProcessWorld> world;  // in-process communicators only
  std::shared_ptr<mccl::Bootstrap> bootstrap;
  mccl::Communicator comm;
  std::atomic<int> live_requests{0};
  // Blocks of mccl_comm_allocate not yet deallocated: lets a foreign or
  // twice-freed pointer be refused instead of corrupting the heap.
  std::unordered_set<void*> blocks;

  mccl_comm_s(std::shared_ptr<mccl::InProcessWorld> w, std::shared_ptr<mccl::Bootstrap> b,
              const mccl::CommOptions& options)
      : world(std::move(w)), bootstrap(std::move(b)), comm(*bootstrap, options) {}
  // The survivors' communicator of a shrink of `from`.
  mccl_comm_s(const mccl_comm_s& from, mccl::Communicator shrunk)
      : world(from.world), bootstrap(from.bootstrap), comm(std::move(shrunk)) {}
  // A grow's communicator, over the bootstrap the members and joiners met on.
  mccl_comm_s(std::shared_ptr<mccl::Bootstrap> b, mccl::Communicator grown)
      : bootstrap(std::move(b)), comm(std::move(grown)) {}
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

enum class HandleKind { kWorld, kComm, kRequest, kProgressThread, kBootstrap };

void register_handle(const void* handle, HandleKind kind);
// Throws kInvalidArgument naming `name` unless `handle` is live and of `kind`.
void require_live(const void* handle, HandleKind kind, const char* name);
// require_live, then forgets the handle (the caller deletes it).
void unregister_handle(const void* handle, HandleKind kind, const char* name);

inline void require_world(mccl_world_t w) { require_live(w, HandleKind::kWorld, "world"); }
inline void require_comm(mccl_comm_t c) { require_live(c, HandleKind::kComm, "comm"); }
inline void require_request(mccl_request_t r) { require_live(r, HandleKind::kRequest, "request"); }
inline void require_bootstrap(mccl_bootstrap_t b) {
  require_live(b, HandleKind::kBootstrap, "bootstrap");
}
inline void require_progress_thread(mccl_progress_thread_t t, const char* name) {
  require_live(t, HandleKind::kProgressThread, name);
}

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
// `options` may be NULL (every field unset).
mccl::CommOptions comm_options(const mccl_comm_options_t* options);

// Creates a communicator over `bootstrap` (and `world`, for in-process
// ones), registers it and hands it to the caller through *out.
void create_comm(std::shared_ptr<mccl::InProcessWorld> world,
                 std::shared_ptr<mccl::Bootstrap> bootstrap, const mccl::CommOptions& options,
                 mccl_comm_t* out);

// ------------------------------------------------------- the C boundary

// Records `what` as the calling thread's mccl_last_error(), after `fn`.
void set_last_error(const char* fn, const char* what) noexcept;
// The calling thread's last message; "" before its first failure.
const char* last_error() noexcept;

// Runs `body` and converts every exception into a code and a message:
// nothing thrown ever crosses the C boundary.
template <typename F>
mccl_result_t guard(const char* fn, F&& body) noexcept {
  try {
    body();
    return MCCL_OK;
  } catch (const mccl::Error& e) {
    set_last_error(fn, e.what());
    const int code = static_cast<int>(e.code());
    // An error without a failure code is itself a bug.
    if (code <= MCCL_OK || code > MCCL_UNAVAILABLE) return MCCL_INTERNAL;
    return static_cast<mccl_result_t>(code);
  } catch (const std::bad_alloc&) {
    set_last_error(fn, "out of memory");
    return MCCL_INTERNAL;
  } catch (const std::exception& e) {
    set_last_error(fn, e.what());
    return MCCL_INTERNAL;
  } catch (...) {
    set_last_error(fn, "unknown exception");
    return MCCL_INTERNAL;
  }
}

// The C getters: `value` checks the handle (throwing as require_* do) and
// returns what the call answers; then `out` is checked, named `out_name`,
// and written. Nothing is written on an error.
template <typename T, typename F>
mccl_result_t answer(const char* fn, T* out, const char* out_name, F&& value) noexcept {
  return guard(fn, [&] {
    const T v = value();
    require(out, out_name);
    *out = v;
  });
}

// A C caller may pass any int where the header says an enum (C enums are
// ints), but in C++ reading an enum that holds a value outside its
// enumerators' range is undefined (UBSan: "not a valid value"): copy the
// bits out instead (by reference: passing one by value loads it), and let
// the checks behind reject unknown values.
template <typename E>
int raw_value(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

}  // namespace mccl::capi
