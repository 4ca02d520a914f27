// What a public mccl::ProgressThread holds: the progress layer's host
// thread, which communicators created with it join.
#pragma once

#include <memory>

#include "mccl/progress_thread.h"
#include "progress/shared_thread.h"

namespace mccl {

class ProgressThread::Impl {
 public:
  std::shared_ptr<progress::SharedThread> thread;
};

namespace detail {

// The library's way to the thread behind a public handle.
struct ProgressThreadAccess {
  static std::shared_ptr<progress::SharedThread> thread_of(const ProgressThread& p) {
    return p.impl_->thread;
  }
};

}  // namespace detail
}  // namespace mccl
