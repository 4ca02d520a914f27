// A thread that runs jobs one at a time, in the order they were posted,
// and between them polls the operations those jobs left in flight.
//
// MCCL collectives must be issued in the same order on every rank and a
// Communicator is used from one thread at a time, while torch issues
// collectives from its caller's thread and expects them to run
// asynchronously: the process group posts each call here, so the order of
// the calls is the order on the wire and the caller never blocks. A job
// only starts its MCCL request and hands a poll to watch(): the thread
// never blocks inside one call while another could progress (a receive
// posted before a send to the same peer on both ranks, as
// batch_isend_irecv does, must not wait for itself).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mccl::torch_backend {

class SerialExecutor {
 public:
  SerialExecutor();
  // Runs every job already posted and polls every watch until it is done,
  // then joins: each ends by itself (MCCL's operations have deadlines), so
  // this never waits forever.
  ~SerialExecutor();
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  // Jobs must not throw: they report their outcome through their own work
  // object. A job that throws anyway ends the process (std::terminate), as
  // a thread's uncaught exception does.
  void post(std::function<void()> job);
  // From a job only (the executor's thread): `poll` is called, between
  // jobs, until it returns true. It must not block or throw.
  void watch(std::function<bool()> poll);

 private:
  void run();
  // Calls every watch once; true when one of them finished.
  bool poll_watches();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::function<bool()>> watches_;  // the thread's own: no lock
  std::thread thread_;                          // last: started once the members above exist
};

}  // namespace mccl::torch_backend
