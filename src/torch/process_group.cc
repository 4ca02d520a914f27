#include "process_group.h"

#include <Python.h>
#include <mccl/error.h>

#include <exception>
#include <stdexcept>
#include <utility>

#include "common/settings.h"
#include "store_bootstrap.h"
#include "tensors.h"

namespace mccl::torch_backend {
namespace {

// Who drives the protocol between calls. torch hands each call to a worker
// thread and the program then blocks elsewhere (another group's barrier,
// the optimizer): under the inline engine MCCL would move only inside its
// own calls, and a rank whose collective completed with data still queued
// for a peer (a reduce-scatter's partial sums behind a full socket on a
// 1 Gbit/s link) left that peer waiting until its timeout. A thread of
// MCCL's own is the default, as in libmccl_mpi; MCCL_PROGRESS, when set,
// is honoured.
mccl::Communicator create(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                          std::chrono::milliseconds timeout) {
  std::unique_ptr<mccl::Bootstrap> boot = make_store_bootstrap(store, rank, size, timeout);
  mccl::CommOptions options{.timeout = timeout};
  if (!common::settings::kProgress.from_env()) options.progress = ProgressKind::kThread;
  return mccl::Communicator(*boot, options);
}

// MCCL's error as the one torch raises: the call, MCCL's message (which
// names the rank and peer) and the kind of failure.
std::exception_ptr describe(const std::string& call) {
  try {
    throw;
  } catch (const mccl::Error& e) {
    return std::make_exception_ptr(std::runtime_error("mccl " + call + ": " + e.what() + " [" +
                                                      mccl::to_string(e.code()) + "]"));
  } catch (const std::exception& e) {
    return std::make_exception_ptr(std::runtime_error("mccl " + call + ": " + e.what()));
  } catch (...) {
    return std::make_exception_ptr(std::runtime_error("mccl " + call + ": unknown error"));
  }
}

// Where `input` lies inside `output` at this rank's block, the allgather
// runs in place (MCCL's send and receive buffers must not overlap).
bool is_own_block(const at::Tensor& output, const at::Tensor& input, int rank) {
  const auto* out = static_cast<const char*>(output.data_ptr());
  return static_cast<const char*>(input.data_ptr()) == out + rank * input.nbytes();
}

}  // namespace

ProcessGroupMCCL::ProcessGroupMCCL(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   std::chrono::milliseconds timeout)
    : BackendBase(rank, size),
      comm_(create(store, rank, size, timeout)),
      timeout_(timeout),
      executor_(std::make_unique<SerialExecutor>()) {}

ProcessGroupMCCL::~ProcessGroupMCCL() {
  // Python drops the last reference with the GIL held, while the executor
  // thread may need the GIL to finish its last job (releasing a tensor that
  // a Python object owns, or running a Python future callback): joining it
  // with the GIL held would deadlock.
  if (Py_IsInitialized() && PyGILState_Check()) {
    PyThreadState* saved = PyEval_SaveThread();
    executor_.reset();
    PyEval_RestoreThread(saved);
  }
  executor_.reset();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::post(const std::string& call, c10d::OpType type,
                                                      std::vector<at::Tensor> outputs,
                                                      std::function<void()> run) {
  auto work = c10::make_intrusive<MCCLWork>(call, rank_, type, std::move(outputs), timeout_);
  executor_->post([work, run = std::move(run)] {
    std::exception_ptr error;
    try {
      run();
    } catch (...) {
      error = describe(work->call());
    }
    work->complete(error);
  });
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  const std::string call = "broadcast";
  const at::Tensor& t = single_tensor(call, tensors);
  if (opts.rootRank < 0 || opts.rootRank >= size_) {
    reject(call, "root " + std::to_string(opts.rootRank) + " is not a rank of the group of " +
                     std::to_string(size_));
  }
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor host = host_view(t, root == rank_);
  return post(call, c10d::OpType::BROADCAST, tensors, [this, t, host, root] {
    if (auto type = float_type(host)) {
      comm_.broadcast(host.data_ptr(), static_cast<std::size_t>(host.numel()), *type, root);
    } else {
      comm_.broadcast(host.data_ptr(), host.nbytes(), root);
    }
    copy_back(t, host);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  const std::string call = "all_reduce";
  const at::Tensor& t = single_tensor(call, tensors);
  const mccl::DataType type = reduce_type(call, t);
  const Reduction red = reduction(call, opts.reduceOp, t);
  at::Tensor host = host_view(t, true);
  return post(call, c10d::OpType::ALLREDUCE, tensors, [this, t, host, type, red] {
    comm_.allreduce(mccl::kInPlace, host.data_ptr(), host.numel(), type, red.op);
    if (red.average) host.div_(size_);
    copy_back(t, host);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  const std::string call = "all_gather";
  const at::Tensor& in = single_tensor(call, inputs);
  if (outputs.size() != 1 || outputs[0].size() != static_cast<std::size_t>(size_)) {
    reject(call, "needs one list of " + std::to_string(size_) + " output tensors");
  }
  for (const at::Tensor& o : outputs[0]) check_like(call, o, in);
  at::Tensor host_in = host_view(in, true);
  std::vector<at::Tensor> outs = outputs[0];
  return post(call, c10d::OpType::ALLGATHER, outs, [this, host_in, outs] {
    // One contiguous receive buffer, then each block to its tensor: torch's
    // output tensors are separate allocations.
    at::Tensor flat = at::empty({size_, host_in.numel()}, host_in.options());
    if (auto type = float_type(host_in)) {
      comm_.allgather(host_in.data_ptr(), flat.data_ptr(),
                      static_cast<std::size_t>(host_in.numel()), *type);
    } else {
      comm_.allgather(host_in.data_ptr(), flat.data_ptr(), host_in.nbytes());
    }
    for (int r = 0; r < size_; ++r) outs[r].view({-1}).copy_(flat[r]);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::_allgather_base(at::Tensor& output,
                                                                 at::Tensor& input,
                                                                 const c10d::AllgatherOptions&) {
  const std::string call = "all_gather_into_tensor";
  check_tensor(call, input);
  check_tensor(call, output);
  if (output.scalar_type() != input.scalar_type() || output.numel() != input.numel() * size_) {
    reject(call, "the output must have the input's dtype and " + std::to_string(size_) +
                     " times its " + std::to_string(input.numel()) + " elements, not " +
                     std::to_string(output.numel()) + " of " + c10::toString(output.scalar_type()));
  }
  at::Tensor host_out = host_view(output, false);
  const bool in_place = output.is_cpu() && input.is_cpu() && is_own_block(output, input, rank_);
  at::Tensor host_in = in_place ? input : host_view(input, true);
  return post(call, c10d::OpType::_ALLGATHER_BASE, {output},
              [this, output, host_out, host_in, in_place] {
                const void* send = in_place ? mccl::kInPlace : host_in.data_ptr();
                if (auto type = float_type(host_in)) {
                  comm_.allgather(send, host_out.data_ptr(),
                                  static_cast<std::size_t>(host_in.numel()), *type);
                } else {
                  comm_.allgather(send, host_out.data_ptr(), host_in.nbytes());
                }
                copy_back(output, host_out);
              });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const std::string call = "reduce_scatter";
  const at::Tensor& out = single_tensor(call, outputs);
  if (inputs.size() != 1 || inputs[0].size() != static_cast<std::size_t>(size_)) {
    reject(call, "needs one list of " + std::to_string(size_) + " input tensors");
  }
  for (const at::Tensor& i : inputs[0]) check_like(call, i, out);
  const mccl::DataType type = reduce_type(call, out);
  const Reduction red = reduction(call, opts.reduceOp, out);
  // The blocks back to back, as MCCL's send buffer: staged here, on the
  // caller's thread, where the inputs are known to be ready.
  at::Tensor flat = at::empty({size_, out.numel()}, out.options().device(at::kCPU));
  for (int r = 0; r < size_; ++r) flat[r].copy_(inputs[0][r].view({-1}));
  at::Tensor host_out = host_view(out, false);
  return post(call, c10d::OpType::REDUCE_SCATTER, outputs, [this, out, host_out, flat, type, red] {
    comm_.reduce_scatter(flat.data_ptr(), host_out.data_ptr(), host_out.numel(), type, red.op);
    if (red.average) host_out.div_(size_);
    copy_back(out, host_out);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  const std::string call = "reduce_scatter_tensor";
  check_tensor(call, input);
  check_tensor(call, output);
  if (output.scalar_type() != input.scalar_type() || input.numel() != output.numel() * size_) {
    reject(call, "the input must have the output's dtype and " + std::to_string(size_) +
                     " times its " + std::to_string(output.numel()) + " elements, not " +
                     std::to_string(input.numel()) + " of " + c10::toString(input.scalar_type()));
  }
  const mccl::DataType type = reduce_type(call, output);
  const Reduction red = reduction(call, opts.reduceOp, output);
  at::Tensor host_in = host_view(input, true);
  at::Tensor host_out = host_view(output, false);
  return post(call, c10d::OpType::_REDUCE_SCATTER_BASE, {output},
              [this, output, host_in, host_out, type, red] {
                comm_.reduce_scatter(host_in.data_ptr(), host_out.data_ptr(), host_out.numel(),
                                     type, red.op);
                if (red.average) host_out.div_(size_);
                copy_back(output, host_out);
              });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::barrier(const c10d::BarrierOptions&) {
  return post("barrier", c10d::OpType::BARRIER, {}, [this] { comm_.barrier(); });
}

mccl::Stats ProcessGroupMCCL::stats() {
  auto result = std::make_shared<mccl::Stats>();
  auto work = post("stats", c10d::OpType::UNKNOWN, {}, [this, result] { *result = comm_.stats(); });
  work->wait();
  return *result;
}

}  // namespace mccl::torch_backend
