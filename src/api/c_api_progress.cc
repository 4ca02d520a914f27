// The C API's shared progress thread (mccl/mccl_progress.h) over
// mccl::ProgressThread, whose copies are handles on one thread: the C
// handle holds one, every communicator created with it another.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "api/c_support.h"
#include "mccl/mccl.h"
#include "mccl/progress_thread.h"

namespace {

using namespace mccl::capi;

mccl::ProgressThreadOptions to_cpp(const mccl_progress_thread_options_t& c) {
  mccl::ProgressThreadOptions o;
  if (c.pin != 0) {
    if (c.cpu < 0) invalid("options->cpu is " + std::to_string(c.cpu) + " but options->pin is set");
    o.cpu = c.cpu;
  }
  if (c.spin_us < -1) {
    invalid("options->spin_us is " + std::to_string(c.spin_us) +
            "; expected > 0, -1 (sleep at once) or 0 (unset)");
  }
  // C keeps 0 for "unset", so "no spinning" is spelled -1.
  if (c.spin_us == -1) o.spin = std::chrono::microseconds(0);
  if (c.spin_us > 0) o.spin = std::chrono::microseconds(c.spin_us);
  return o;
}

}  // namespace

extern "C" {

mccl_result_t mccl_progress_thread_create(const mccl_progress_thread_options_t* options,
                                          mccl_progress_thread_t* out) {
  return guard(__func__, [&] {
    require(out, "out");
    mccl::ProgressThreadOptions cpp;
    if (options != nullptr) cpp = to_cpp(read_versioned(options, "options"));
    auto t = std::unique_ptr<mccl_progress_thread_s>(
        new mccl_progress_thread_s{mccl::ProgressThread(cpp)});
    register_handle(t.get(), HandleKind::kProgressThread);
    *out = t.release();
  });
}

mccl_result_t mccl_progress_thread_destroy(mccl_progress_thread_t thread) {
  return guard(__func__, [&] {
    unregister_handle(thread, HandleKind::kProgressThread, "thread");
    delete thread;
  });
}

mccl_result_t mccl_progress_thread_communicators(mccl_progress_thread_t thread, int* count) {
  return answer(__func__, count, "count", [&] {
    require_progress_thread(thread, "thread");
    return thread->thread.communicators();
  });
}

}  // extern "C"
