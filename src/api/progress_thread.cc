#include "mccl/progress_thread.h"

#include "api/progress_thread_impl.h"
#include "mccl/error.h"

namespace mccl {

ProgressThread::ProgressThread(const ProgressThreadOptions& options) {
  if (options.spin.count() < 0) {
    throw Error(ErrorCode::kInvalidArgument, "ProgressThreadOptions::spin must not be negative");
  }
  progress::ThreadEngineConfig cfg;
  cfg.cpu = options.cpu;
  cfg.spin = options.spin;
  cfg.driver_spin = {options.spin, options.spin};
  impl_ = std::make_shared<Impl>();
  impl_->thread = progress::make_shared_thread(cfg);
}

ProgressThread::~ProgressThread() = default;

int ProgressThread::communicators() const {
  return static_cast<int>(progress::joined_contexts(*impl_->thread));
}

}  // namespace mccl
