#include "mccl/progress_thread.h"

#include "api/progress_thread_state.h"
#include "mccl/error.h"

namespace mccl {

ProgressThread::ProgressThread(const ProgressThreadOptions& options) {
  if (options.spin.count() < 0) {
    throw Error(ErrorCode::kInvalidArgument, "ProgressThreadOptions::spin must not be negative");
  }
  progress::ThreadEngineConfig cfg;
  cfg.cpu = options.cpu;
  cfg.spin = options.spin;
  state_ = std::make_shared<detail::ProgressThreadState>();
  state_->thread = progress::make_shared_thread(cfg);
}

ProgressThread::~ProgressThread() = default;

int ProgressThread::communicators() const {
  return static_cast<int>(progress::joined_contexts(*state_->thread));
}

}  // namespace mccl
