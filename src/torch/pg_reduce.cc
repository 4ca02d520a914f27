// The reductions: all_reduce (single and coalesced) by MCCL's allreduce;
// reduce, reduce_scatter (even and uneven lists) and the
// reduce_scatter_tensor forms (single and coalesced) by its reduce-scatter
// (reduce: every block but the root's empty). AVG divides the result and
// PREMUL_SUM scales a copy of the input, in the tensor's dtype (tensors.h).
#include "process_group.h"
#include "tensors.h"

namespace mccl::torch_backend {

ProcessGroupMCCL::Started ProcessGroupMCCL::allreduce_in_place(const at::Tensor& buffer,
                                                               const Reduction& red,
                                                               const mccl::CollOptions& options,
                                                               std::function<void()> deliver) {
  if (red.premul != 1) buffer.mul_(red.premul);  // the result overwrites it anyway
  mccl::Request r = comm_.iallreduce(mccl::kInPlace, buffer.data_ptr(), red.count(buffer), red.type,
                                     red.op, options);
  return Started{std::move(r),
                 [this, buffer, red, deliver = std::move(deliver)] {
                   red.finish(buffer, size_);
                   deliver();
                 },
                 {buffer}};
}

ProcessGroupMCCL::Started ProcessGroupMCCL::reduce_scatter_into(const at::Tensor& send,
                                                                const at::Tensor& result,
                                                                const Reduction& red,
                                                                const mccl::CollOptions& options,
                                                                std::function<void()> deliver) {
  mccl::Request r = comm_.ireduce_scatter(send.data_ptr(), result.data_ptr(), red.count(result),
                                          red.type, red.op, options);
  return Started{std::move(r),
                 [this, result, red, deliver = std::move(deliver)] {
                   red.finish(result, size_);
                   deliver();
                 },
                 {send, result}};
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  const std::string call = "all_reduce";
  const at::Tensor& t = single_tensor(call, tensors);
  const Reduction red = reduction(call, opts.reduceOp, t);
  at::Tensor host = host_view(t, true);
  return post(call, c10d::OpType::ALLREDUCE, tensors, [this, t, host, red, o = call_options()] {
    return allreduce_in_place(host, red, o, [t, host] { copy_back(t, host); });
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  const std::string call = "all_reduce_coalesced";
  if (tensors.empty()) reject(call, "needs at least one tensor");
  check_same_dtype(call, tensors);
  const Reduction red = reduction(call, opts.reduceOp, tensors[0]);
  at::Tensor flat = flatten(tensors);  // staged where the inputs are known ready
  return post(call, c10d::OpType::ALLREDUCE_COALESCED, tensors,
              [this, tensors, flat, red, o = call_options()] {
                return allreduce_in_place(flat, red, o,
                                          [tensors, flat] { unflatten(flat, tensors); });
              });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  const std::string call = "reduce";
  const at::Tensor& t = single_tensor(call, tensors);
  check_root(call, opts.rootRank);
  const int root = static_cast<int>(opts.rootRank);
  const Reduction red = reduction(call, opts.reduceOp, t);
  // A copy where it is scaled: only the root's tensor changes.
  at::Tensor in = red.scaled(host_view(t, true));
  return post(call, c10d::OpType::REDUCE, tensors, [this, t, in, red, root, o = call_options()] {
    std::vector<std::size_t> counts(size_, 0);
    counts[root] = red.count(in);
    at::Tensor out = rank_ == root ? at::empty_like(in) : at::Tensor();
    mccl::Request r = comm_.ireduce_scatterv(
        in.data_ptr(), out.defined() ? out.data_ptr() : nullptr, counts, red.type, red.op, o);
    return Started{std::move(r),
                   [this, t, out, red] {
                     if (!out.defined()) return;
                     red.finish(out, size_);
                     t.copy_(out);
                   },
                   {in, out}};
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
  check_same_dtype(call, inputs[0]);
  check_like(call, inputs[0][rank_], out);  // the others may differ in size (uneven lists)
  const Reduction red = reduction(call, opts.reduceOp, out);
  std::vector<std::size_t> counts;
  for (const at::Tensor& i : inputs[0]) counts.push_back(red.count(i));
  // The blocks back to back, as MCCL's send buffer: staged here, on the
  // caller's thread, where the inputs are known to be ready.
  at::Tensor flat = flatten(inputs[0]);
  if (red.premul != 1) flat.mul_(red.premul);
  at::Tensor host_out = host_view(out, false);
  return post(call, c10d::OpType::REDUCE_SCATTER, outputs,
              [this, out, host_out, flat, counts, red, o = call_options()] {
                mccl::Request r = comm_.ireduce_scatterv(flat.data_ptr(), host_out.data_ptr(),
                                                         counts, red.type, red.op, o);
                return Started{std::move(r),
                               [this, out, host_out, red] {
                                 red.finish(host_out, size_);
                                 copy_back(out, host_out);
                               },
                               {flat, host_out}};
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
  const Reduction red = reduction(call, opts.reduceOp, output);
  at::Tensor host_in = red.scaled(host_view(input, true));
  at::Tensor host_out = host_view(output, false);
  return post(call, c10d::OpType::_REDUCE_SCATTER_BASE, {output},
              [this, output, host_in, host_out, red, o = call_options()] {
                return reduce_scatter_into(host_in, host_out, red, o,
                                           [output, host_out] { copy_back(output, host_out); });
              });
}

#if TORCH_VERSION_MAJOR >= 2
c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const std::string call = "reduce_scatter_tensor_coalesced";
  if (outputs.empty() || outputs.size() != inputs.size()) {
    reject(call, "needs one output tensor per input, and at least one");
  }
  check_same_dtype(call, inputs);
  check_same_dtype(call, outputs);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (outputs[i].scalar_type() != inputs[i].scalar_type() ||
        inputs[i].numel() != outputs[i].numel() * size_) {
      reject(call, "input " + std::to_string(i) + " must have its output's dtype and " +
                       std::to_string(size_) + " times its elements");
    }
  }
  const Reduction red = reduction(call, opts.reduceOp, outputs[0]);
  // Rank r's block: the r-th part of every input, back to back.
  std::vector<at::Tensor> parts;
  for (int r = 0; r < size_; ++r) {
    for (const at::Tensor& in : inputs) parts.push_back(in.reshape({size_, -1})[r]);
  }
  at::Tensor flat = flatten(parts);
  if (red.premul != 1) flat.mul_(red.premul);
  return post(call, reduce_scatter_tensor_coalesced_op(), outputs,
              [this, outputs, flat, red, o = call_options()] {
                at::Tensor out = at::empty({flat.numel() / size_}, flat.options());
                return reduce_scatter_into(flat, out, red, o,
                                           [outputs, out] { unflatten(out, outputs); });
              });
}
#endif

}  // namespace mccl::torch_backend
