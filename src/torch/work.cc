#include "work.h"

#include <stdexcept>
#include <utility>

namespace mccl::torch_backend {
namespace {

// A collective fails by itself once MCCL's deadline (the group's timeout)
// passes; the grace lets that error, which says what was awaited, arrive
// before this generic one.
constexpr std::chrono::milliseconds kWaitGrace{5000};

}  // namespace

MCCLWork::MCCLWork(std::string call, int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
                   std::chrono::milliseconds timeout)
    : c10d::Work(rank, type),
      call_(std::move(call)),
      outputs_(std::move(outputs)),
      timeout_(timeout),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
}

bool MCCLWork::wait(std::chrono::milliseconds timeout) {
  const auto limit = timeout == ::kNoTimeout ? timeout_ + kWaitGrace : timeout;
  std::unique_lock<std::mutex> lock(mutex_);
  if (!cv_.wait_for(lock, limit, [this] { return completed_; })) {
    throw std::runtime_error("mccl " + call_ + ": not complete after " +
                             std::to_string(limit.count()) +
                             " ms (Work.wait's timeout); the collective is still in flight");
  }
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> MCCLWork::getFuture() { return future_; }

void MCCLWork::complete(std::exception_ptr error) {
  finish(error);
  // Outside the work's lock: the future's callbacks may run right here.
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

}  // namespace mccl::torch_backend
