#include "executor.h"

#include <chrono>
#include <utility>

namespace mccl::torch_backend {
namespace {

// While operations are in flight and no job waits: polls back to back a
// while (a small message's round trip is microseconds), then every
// kIdlePoll, which bounds both the latency added and the CPU spent.
constexpr int kEagerPolls = 200;
constexpr std::chrono::microseconds kIdlePoll{50};

}  // namespace

SerialExecutor::SerialExecutor() : thread_([this] { run(); }) {}

SerialExecutor::~SerialExecutor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void SerialExecutor::post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void SerialExecutor::watch(std::function<bool()> poll) { watches_.push_back(std::move(poll)); }

bool SerialExecutor::poll_watches() {
  bool finished = false;
  for (std::size_t i = 0; i < watches_.size();) {
    if (watches_[i]()) {
      watches_.erase(watches_.begin() + static_cast<std::ptrdiff_t>(i));
      finished = true;
    } else {
      ++i;
    }
  }
  return finished;
}

void SerialExecutor::run() {
  int quiet = 0;  // polls in a row that finished nothing
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      auto ready = [this] { return stopping_ || !jobs_.empty(); };
      if (watches_.empty()) {
        cv_.wait(lock, ready);
      } else if (quiet >= kEagerPolls) {
        cv_.wait_for(lock, kIdlePoll, ready);
      }
      if (!jobs_.empty()) {
        job = std::move(jobs_.front());
        jobs_.pop_front();
      } else if (stopping_ && watches_.empty()) {
        return;  // nothing left to run or to finish
      }
    }
    // Outside the lock: a job may complete a future whose callbacks post
    // the next collective.
    if (job) job();
    quiet = poll_watches() ? 0 : quiet + 1;
    if (!job && quiet > 0 && quiet < kEagerPolls) std::this_thread::yield();
  }
}

}  // namespace mccl::torch_backend
