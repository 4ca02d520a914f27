// A thread that runs jobs one at a time, in the order they were posted.
//
// MCCL collectives must be issued in the same order on every rank and a
// Communicator is used from one thread at a time, while torch issues
// collectives from its caller's thread and expects them to run
// asynchronously: the process group posts each collective here, so the
// order of the calls is the order on the wire and the caller never blocks.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace mccl::torch_backend {

class SerialExecutor {
 public:
  SerialExecutor();
  // Runs every job already posted, then joins: each job ends by itself
  // (MCCL's collectives have deadlines), so this never waits forever.
  ~SerialExecutor();
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  // Jobs must not throw: they report their outcome through their own work
  // object. A job that throws anyway ends the process (std::terminate), as
  // a thread's uncaught exception does.
  void post(std::function<void()> job);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace mccl::torch_backend
