#include "protocol/helper_pool.h"

#include <pthread.h>

#include <algorithm>

namespace mccl::protocol {

namespace {
HelperPool* g_pool = nullptr;  // set once by shared(), under its static's guard
}  // namespace

HelperPool& HelperPool::shared(unsigned threads) {
  // Never destroyed: helpers may still sleep in it while the process exits.
  static HelperPool* pool = [threads] {
    g_pool = new HelperPool(std::max(1u, threads));
    // A child of fork() has the pool but none of its threads, and the lock
    // as it was: held across the fork, released on both sides, and the
    // child's jobs left to their owners.
    ::pthread_atfork([] { g_pool->mu_.lock(); }, [] { g_pool->mu_.unlock(); },
                     [] {
                       g_pool->mu_.unlock();
                       g_pool->forked_.store(true, std::memory_order_relaxed);
                     });
    return g_pool;
  }();
  return *pool;
}

HelperPool::HelperPool(unsigned threads) : threads_(threads) {
  for (unsigned i = 0; i < threads; ++i) std::thread([this, i] { run(i + 1); }).detach();
}

void HelperPool::post(std::shared_ptr<HelperJob> job) {
  if (forked_.load(std::memory_order_relaxed)) return;  // no helper would take it
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
    generation_.fetch_add(1, std::memory_order_seq_cst);
  }
  cv_.notify_all();
}

void HelperPool::wake() {
  if (idle_.load(std::memory_order_seq_cst) == 0) return;
  {
    std::lock_guard lock(mu_);
    generation_.fetch_add(1, std::memory_order_seq_cst);
  }
  cv_.notify_all();
}

void HelperPool::run(unsigned lane) {
  std::vector<std::shared_ptr<HelperJob>> jobs;
  std::uint64_t seen = 0;
  const auto look = [&] {
    std::lock_guard lock(mu_);
    std::erase_if(jobs_, [](const std::shared_ptr<HelperJob>& j) { return j->finished(); });
    jobs = jobs_;
    seen = generation_.load(std::memory_order_seq_cst);
  };
  const auto work_on = [&jobs, lane] {
    bool worked = false;
    for (const auto& job : jobs) {
      while (job->work(lane)) worked = true;
    }
    return worked;
  };
  for (;;) {
    look();
    if (work_on()) continue;
    // Linger: batches come back to back while a collective runs.
    const auto until = std::chrono::steady_clock::now() + kLinger;
    bool worked = false;
    while (!worked && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
      if (generation_.load(std::memory_order_seq_cst) != seen) look();
      worked = work_on();
    }
    if (worked) continue;
    // Idle first, then one more look: a job posted or moved on after that
    // look finds this helper idle and wakes it (wake()).
    idle_.fetch_add(1, std::memory_order_seq_cst);
    look();
    if (!work_on()) {
      jobs.clear();  // a finished job's memory goes with its owner
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, kIdleCheck, [&] { return generation_.load() != seen; });
    }
    idle_.fetch_sub(1, std::memory_order_seq_cst);
  }
}

}  // namespace mccl::protocol
