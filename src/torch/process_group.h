// The "mccl" backend of torch.distributed: a c10d process group (a c10d
// backend under PyTorch 2.x, see compat.h) whose collectives are MCCL's.
//
// Each collective is checked on the caller's thread (a bad argument raises
// there, naming the call) and then runs on the group's executor thread, in
// call order; its work object completes when MCCL returns. Errors of MCCL
// (a timeout, a dead peer, ranks that disagree) complete the work with
// "mccl <call>: <MCCL's message> [<code>]", raised by wait().
#pragma once

#include <mccl/communicator.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compat.h"
#include "executor.h"
#include "work.h"

namespace mccl::torch_backend {

class ProcessGroupMCCL final : public BackendBase {
 public:
  // Collective over the group: creates the MCCL communicator through
  // `store` (store_bootstrap.h). `timeout` is every collective's deadline.
  ProcessGroupMCCL(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                   std::chrono::milliseconds timeout);
  ~ProcessGroupMCCL() override;

  const std::string getBackendName() const override { return "mccl"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // The communicator's counters, read on the executor thread between
  // collectives (the benchmark's bytes sent).
  mccl::Stats stats();

 private:
  // Queues `run` (which uses comm_) behind the collectives already posted;
  // the returned work completes when it returns or throws.
  c10::intrusive_ptr<c10d::Work> post(const std::string& call, c10d::OpType type,
                                      std::vector<at::Tensor> outputs, std::function<void()> run);
  mccl::Communicator comm_;
  std::chrono::milliseconds timeout_;
  // Last: destroyed first, so the jobs still queued finish while comm_ lives.
  std::unique_ptr<SerialExecutor> executor_;
};

}  // namespace mccl::torch_backend
