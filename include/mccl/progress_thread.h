// A host progress thread that several communicators share.
//
//   mccl::ProgressThread engine;                      // starts the thread
//   mccl::Communicator dp(boot, {.progress_thread = engine});
//   mccl::Communicator shard(boot, {.progress_thread = engine});
//
// One thread then drives the collectives of every communicator created with
// it: they are all in flight at once and complete independently, as with a
// thread per communicator (ProgressKind::kThread), without a spinning
// thread each on a machine with few cores. Requests wait by sleeping, as
// with kThread.
//
// Ownership: copies of a ProgressThread are handles on the same thread.
// Every communicator created with it holds a handle too, so the thread runs
// until the last handle and the last such communicator are gone; it is
// never stopped under a communicator.
//
// Errors: the constructor throws mccl::Error(kInvalidArgument) for a
// negative spin time. A CPU that cannot be bound to is logged (warning),
// not fatal.
#pragma once

#include <chrono>
#include <memory>

#include "mccl/export.h"

namespace mccl {

namespace detail {
struct ProgressThreadAccess;  // the library's way in
}

struct ProgressThreadOptions {
  int cpu = -1;                        // pin the thread to this CPU; -1: do not pin
  std::chrono::microseconds spin{50};  // spin this long after the last event, then sleep
};

class MCCL_API ProgressThread {
 public:
  explicit ProgressThread(const ProgressThreadOptions& options = {});
  ProgressThread(const ProgressThread&) = default;
  ProgressThread& operator=(const ProgressThread&) = default;
  ~ProgressThread();

  // How many communicators this thread drives now.
  int communicators() const;

 private:
  friend struct detail::ProgressThreadAccess;
  class Impl;  // the library's: the thread itself
  std::shared_ptr<Impl> impl_;
};

}  // namespace mccl
