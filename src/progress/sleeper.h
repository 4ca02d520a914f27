// Where a progress thread sleeps: an epoll set of the transports'
// descriptors plus an eventfd that other threads use to wake it (new work,
// shutdown). Shared by the per-context and the shared thread engine so both
// sleep the same way.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace mccl::progress {

class Sleeper {
 public:
  Sleeper();  // creates the epoll set and the wake-up eventfd
  ~Sleeper();
  Sleeper(const Sleeper&) = delete;
  Sleeper& operator=(const Sleeper&) = delete;

  // Sleeps on `fd` too (readable = something to do). Idempotent; remove()
  // forgets a descriptor (its owner is going away).
  void add(int fd);
  void remove(int fd);

  // From any thread: ends the current or the next sleep.
  void wake();
  // How many times wake() was called, for tests.
  std::uint64_t wake_ups() const { return wake_ups_.load(std::memory_order_relaxed); }

  // Sleeps up to `d` (whole milliseconds: the thread engine's sleeps are
  // 1 and 10 ms, shared_thread.cc says why none is shorter), or until a
  // watched descriptor is readable or wake() is called.
  // Any thread may sleep here, several at once (a thread engine's waiters
  // help it, shared_thread.cc); a wake-up ends at least one sleep.
  void sleep_for(std::chrono::milliseconds d);

  // Sleeps up to `d`, or until wake() is called: the watched descriptors
  // are left to whoever sleeps in sleep_for meanwhile.
  void sleep_until_woken(std::chrono::milliseconds d);

 private:
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<std::uint64_t> wake_ups_{0};
};

}  // namespace mccl::progress
