// The work object of one collective: what `async_op=True` returns and what
// DistributedDataParallel chains its gradient buckets on (getFuture).
#pragma once

#include <ATen/core/ivalue.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <string>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

namespace mccl::torch_backend {

class MCCLWork final : public c10d::Work {
 public:
  // `call` names the torch call in messages ("all_reduce"); `outputs` are
  // the tensors the future yields; `timeout` is the process group's, the
  // bound of a wait() given no timeout of its own.
  MCCLWork(std::string call, int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
           std::chrono::milliseconds timeout);

  // Throws when `timeout` (else the group's timeout and a grace period)
  // passes first, naming the call; rethrows the collective's error.
  bool wait(std::chrono::milliseconds timeout = ::kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override { return outputs_; }

  // Called once, by the executor thread, when the collective ends.
  void complete(std::exception_ptr error);
  // A receive's source (recv from any rank asks it); -1 for the others.
  void set_source(int rank) { source_ = rank; }
  int sourceRank() const override { return source_; }

  const std::string& call() const { return call_; }

 private:
  std::string call_;
  std::vector<at::Tensor> outputs_;
  std::chrono::milliseconds timeout_;
  std::atomic<int> source_{-1};
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace mccl::torch_backend
