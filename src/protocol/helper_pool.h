// The process's helper threads (MCCL_PROTO_HELPER_THREADS): the per-byte
// passes over multicast datagrams other than the kernel's copy (the MAC,
// or the CRC where there is none) done on other cores than the engine's.
// A root's headers are sealed ahead of its sends (seal_ahead.h); a
// receiver's batches are checked in parallel (check_batch.h).
//
// No engine ever waits for a helper to start: whatever a job holds that no
// helper has claimed, its owner does itself. So a helper that is slow,
// busy or absent (a forked child has none) costs only its own time.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace mccl::protocol {

// Work that helpers take in pieces. Both calls come from helper threads,
// concurrently with each other and with the job's owner.
class HelperJob {
 public:
  virtual ~HelperJob() = default;
  // Claims and does one piece with the MAC lane `lane` (1-based,
  // DatagramMac); false when nothing can be claimed now.
  virtual bool work(unsigned lane) = 0;
  // Nothing more will ever be claimable: the pool forgets the job.
  virtual bool finished() const = 0;
};

class HelperPool {
 public:
  // The pool, started with `threads` helpers by the first call (later calls
  // get the same pool, whatever they ask for); `threads` > 0. Its threads
  // live as long as the process and sleep while there is no job.
  static HelperPool& shared(unsigned threads);

  // Started; a child of fork() has none running (its jobs are left to
  // their owners).
  unsigned threads() const { return threads_; }
  // Hands `job` to the helpers; its owner keeps it until the job says (or
  // it makes sure) that no helper is inside work().
  void post(std::shared_ptr<HelperJob> job);
  // A job has more to claim than when the helpers last looked (a root's
  // window moved): wakes those that found nothing (a load where none did).
  void wake();

 private:
  explicit HelperPool(unsigned threads);
  void run(unsigned lane);

  // After its last piece of work a helper keeps looking this long before
  // it sleeps, so that a stream of batches does not pay a wake-up each.
  static constexpr std::chrono::microseconds kLinger{200};
  // How long a sleeping helper waits before it looks again unwoken: post()
  // and wake() end the sleep, this only bounds a lost wake-up.
  static constexpr std::chrono::milliseconds kIdleCheck{100};

  const unsigned threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<HelperJob>> jobs_;  // under mu_
  std::atomic<std::uint64_t> generation_{0};      // bumped under mu_ by post and wake
  std::atomic<int> idle_{0};                      // helpers asleep or about to be
  std::atomic<bool> forked_{false};               // this process is a child of fork()
};

}  // namespace mccl::protocol
