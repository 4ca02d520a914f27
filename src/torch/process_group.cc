#include "process_group.h"

#include <Python.h>
#include <mccl/error.h>

#include <exception>
#include <optional>
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

}  // namespace

ProcessGroupMCCL::ProcessGroupMCCL(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   std::chrono::milliseconds timeout, std::string name)
    : BackendBase(rank, size),
      comm_(create(store, rank, size, timeout)),
      timeout_(timeout),
      name_(std::move(name)),
      executor_(std::make_unique<SerialExecutor>()) {}

ProcessGroupMCCL::ProcessGroupMCCL(mccl::Communicator comm, std::chrono::milliseconds timeout,
                                   std::string name)
    : BackendBase(comm.rank(), comm.size()),
      comm_(std::move(comm)),
      timeout_(timeout),
      name_(std::move(name)),
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

c10::intrusive_ptr<MCCLWork> ProcessGroupMCCL::post(const std::string& call, c10d::OpType type,
                                                    std::vector<at::Tensor> outputs,
                                                    std::function<Started()> start) {
  auto work = c10::make_intrusive<MCCLWork>(call, rank_, type, std::move(outputs), timeout_);
  executor_->post([this, work, start = std::move(start)] {
    auto started = std::make_shared<Started>();
    try {
      *started = start();
    } catch (...) {
      work->complete(describe(work->call()));
      return;
    }
    // Polled between jobs until the request completes (executor.h).
    auto finish = [work, started]() -> bool {
      try {
        if (started->request.valid() && !started->request.test()) return false;
        work->set_source(started->request.source());
        if (started->then) started->then();
      } catch (...) {
        work->complete(describe(work->call()));
        return true;
      }
      work->complete(nullptr);
      return true;
    };
    if (!finish()) executor_->watch(std::move(finish));
  });
  return work;
}

void ProcessGroupMCCL::check_root(const std::string& call, std::int64_t root) const {
  if (root < 0 || root >= size_) {
    reject(call, "root " + std::to_string(root) + " is not a rank of the group of " +
                     std::to_string(size_));
  }
}

void ProcessGroupMCCL::check_peer(const std::string& call, int peer) const {
  if (peer < 0 || peer >= size_) {
    reject(call, "peer " + std::to_string(peer) + " is not a rank of the group of " +
                     std::to_string(size_));
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  const std::string call = "broadcast";
  const at::Tensor& t = single_tensor(call, tensors);
  check_root(call, opts.rootRank);
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor host = host_view(t, root == rank_);
  return post(call, c10d::OpType::BROADCAST, tensors, [this, t, host, root, o = call_options()] {
    // Float tensors through the typed call, which compresses where the
    // group's compression or MCCL_COLL_COMPRESS says; every other dtype as
    // bytes.
    const auto type = float_type(host.scalar_type());
    mccl::Request r = type
                          ? comm_.ibroadcast(host.data_ptr(),
                                             static_cast<std::size_t>(host.numel()), *type, root, o)
                          : comm_.ibroadcast(host.data_ptr(), host.nbytes(), root);
    return Started{std::move(r), [t, host] { copy_back(t, host); }, {host}};
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::barrier(const c10d::BarrierOptions&) {
  return post("barrier", c10d::OpType::BARRIER, {}, [this] {
    return Started{comm_.ibarrier(), {}, {}};
  });
}

c10::intrusive_ptr<ProcessGroupMCCL> ProcessGroupMCCL::shrink(std::vector<int>& failed) {
  // On the executor thread, behind the calls already posted (which fail
  // at once on the broken communicator), like every use of comm_.
  auto survivors = std::make_shared<std::optional<mccl::Communicator>>();
  auto gone = std::make_shared<std::vector<int>>();
  auto work = post("shrink", c10d::OpType::UNKNOWN, {}, [this, survivors, gone] {
    survivors->emplace(comm_.shrink(gone.get()));
    return Started{};
  });
  work->wait();
  failed = *gone;
  return c10::make_intrusive<ProcessGroupMCCL>(std::move(**survivors), timeout_, name_);
}

c10::intrusive_ptr<ProcessGroupMCCL> ProcessGroupMCCL::grow(
    const c10::intrusive_ptr<c10d::Store>& store, int size) {
  auto grown = std::make_shared<std::optional<mccl::Communicator>>();
  auto work = post("grow", c10d::OpType::UNKNOWN, {}, [this, grown, store, size] {
    std::unique_ptr<mccl::Bootstrap> boot = make_store_bootstrap(store, rank_, size, timeout_);
    grown->emplace(comm_.grow(*boot));
    return Started{};
  });
  work->wait();
  return c10::make_intrusive<ProcessGroupMCCL>(std::move(**grown), timeout_, name_);
}

void ProcessGroupMCCL::set_compression(std::optional<mccl::Compression> compression) {
  std::lock_guard<std::mutex> lock(options_mutex_);
  options_.compression = compression;
}

std::optional<mccl::Compression> ProcessGroupMCCL::compression() const {
  std::lock_guard<std::mutex> lock(options_mutex_);
  return options_.compression;
}

mccl::CollOptions ProcessGroupMCCL::call_options() const {
  std::lock_guard<std::mutex> lock(options_mutex_);
  return options_;
}

mccl::Stats ProcessGroupMCCL::stats() {
  auto result = std::make_shared<mccl::Stats>();
  auto work = post("stats", c10d::OpType::UNKNOWN, {}, [this, result] {
    *result = comm_.stats();
    return Started{};
  });
  work->wait();
  return *result;
}

}  // namespace mccl::torch_backend
