// The "mccl" backend of torch.distributed: a c10d process group (a c10d
// backend under PyTorch 2.x, see compat.h) whose operations are MCCL's.
//
// Each call is checked on the caller's thread (a bad argument raises there,
// naming the call) and then started on the group's executor thread, in
// call order; its work object completes when MCCL's request does. Errors of
// MCCL (a timeout, a dead peer, ranks that disagree) complete the work with
// "mccl <call>: <MCCL's message> [<code>]", raised by wait().
//
// Where the bytes go (docs/pytorch.md): broadcast, the allgathers and the
// allreduce's second half by multicast; reductions by MCCL's reduce-scatter
// (reduce: all of it to the root); gather, scatter and all_to_all by MCCL's
// alltoallv and send/recv by its point-to-point messages, both over the
// reliable transport, where multicast has nothing to offer.
#pragma once

#include <mccl/communicator.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "compat.h"
#include "executor.h"
#include "tensors.h"
#include "work.h"

namespace mccl::torch_backend {

class ProcessGroupMCCL final : public BackendBase {
 public:
  // Collective over the group: creates the MCCL communicator through
  // `store` (store_bootstrap.h). `timeout` is every operation's deadline.
  // `name` is the one the group was registered under (getBackendName).
  ProcessGroupMCCL(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                   std::chrono::milliseconds timeout, std::string name);
  // Over a communicator made otherwise: a shrink's survivors (shrink()).
  ProcessGroupMCCL(mccl::Communicator comm, std::chrono::milliseconds timeout, std::string name);
  ~ProcessGroupMCCL() override;

  const std::string getBackendName() const override { return name_; }

  // ---- process_group.cc ----
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
#if MCCL_TORCH_HAS_MONITORED_BARRIER
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override;
#endif

  // ---- pg_gather.cc ----
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
#if TORCH_VERSION_MAJOR >= 2
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
#endif
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;

  // ---- pg_reduce.cc ----
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
#if TORCH_VERSION_MAJOR >= 2
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
#endif

  // ---- pg_exchange.cc ----
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;

  // Compression of this group's float collectives (broadcast, the
  // all-gathers but the coalesced ones, the reductions), from the next operation
  // posted on; nullopt: the communicator's, MCCL_COLL_COMPRESS's
  // (docs/pytorch.md, "Compression per group"). Every rank of the group sets
  // the same (an operation whose ranks differ fails with kMismatch).
  // Raises std::invalid_argument for a compression MCCL would refuse.
  void set_compression(std::optional<mccl::Compression> compression);
  std::optional<mccl::Compression> compression() const;

  // The communicator's counters, read on the executor thread between
  // operations (the benchmark's bytes sent).
  mccl::Stats stats();

  // Elastic membership (docs/elastic.md): after an operation failed with a
  // dead peer, every surviving rank calls this; blocking and collective
  // over the survivors. Returns the group of the survivors (ranks in their
  // old order, the same timeout and name) and puts the ranks that died in
  // `failed`, the same on every survivor. This group stays broken. Raises
  // what Communicator::shrink throws, as "mccl shrink: ...".
  c10::intrusive_ptr<ProcessGroupMCCL> shrink(std::vector<int>& failed);
  // Elastic membership: this group's ranks and the processes that join
  // them meet on `store` (one the launcher gives the joiners, as a
  // PrefixStore of its own); blocking and collective over all of them.
  // Members call this and keep their ranks; each joiner constructs a group
  // over the same store (the store constructor above) with a rank from
  // size() up to `size` - 1. Returns the grown group (this group's timeout
  // and name); this group stays usable. Raises what Communicator::grow
  // throws, as "mccl grow: ...".
  c10::intrusive_ptr<ProcessGroupMCCL> grow(const c10::intrusive_ptr<c10d::Store>& store, int size);

 private:
  // What a job started: the MCCL request in flight (none: already done),
  // what to do once it completes (copy results into place), and the
  // tensors its buffers lie in, kept alive until then.
  struct Started {
    mccl::Request request;
    std::function<void()> then;
    std::vector<at::Tensor> keep;
  };
  // Queues `start` (which uses comm_) behind the calls already posted; the
  // returned work completes when its request completes and `then` returns,
  // or when either throws.
  c10::intrusive_ptr<MCCLWork> post(const std::string& call, c10d::OpType type,
                                    std::vector<at::Tensor> outputs,
                                    std::function<Started()> start);
  // The alltoallv under gather, scatter and all_to_all: bytes; the counts
  // and displacements are this rank's.
  Started exchange(const at::Tensor& send, std::vector<std::size_t> send_counts,
                   const at::Tensor& recv, std::vector<std::size_t> recv_counts);
  // The allreduce of `buffer` in place (scaled first for PREMUL_SUM); then
  // AVG's division and `deliver`.
  Started allreduce_in_place(const at::Tensor& buffer, const Reduction& red,
                             const mccl::CollOptions& options, std::function<void()> deliver);
  // The even reduce-scatter of `send` into `result`; then AVG's division
  // and `deliver`.
  Started reduce_scatter_into(const at::Tensor& send, const at::Tensor& result,
                              const Reduction& red, const mccl::CollOptions& options,
                              std::function<void()> deliver);
  // The options an operation posted now runs with (set_compression).
  mccl::CollOptions call_options() const;
  void check_root(const std::string& call, std::int64_t root) const;
  void check_tag(const std::string& call, int tag) const;
  void check_peer(const std::string& call, int peer) const;

  mccl::Communicator comm_;
  // monitored_barrier's receives it gave up on, with their buffer: in
  // flight until MCCL's timeout ends them (destroying one would wait).
  std::vector<std::pair<mccl::Request, std::shared_ptr<std::vector<std::uint8_t>>>> stale_;
  std::chrono::milliseconds timeout_;
  std::string name_;
  // set_compression's, copied into each operation as it is posted: posting
  // threads and the setter may differ.
  mutable std::mutex options_mutex_;
  mccl::CollOptions options_;
  // Last: destroyed first, so the jobs still queued finish while comm_ lives.
  std::unique_ptr<SerialExecutor> executor_;
};

}  // namespace mccl::torch_backend
