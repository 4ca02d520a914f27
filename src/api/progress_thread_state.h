// What a public mccl::ProgressThread holds: the progress layer's shared
// thread, which communicators created with it join.
#pragma once

#include <memory>

#include "progress/shared_thread.h"

namespace mccl::detail {

class ProgressThreadState {
 public:
  std::shared_ptr<progress::SharedThread> thread;
};

}  // namespace mccl::detail
