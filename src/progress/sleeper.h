// Where a progress thread sleeps: an epoll set of the transports'
// descriptors plus an eventfd that other threads use to wake it (new work,
// shutdown). Shared by the per-context and the shared thread engine so both
// sleep the same way.
#pragma once

#include <chrono>

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

  // Sleeps up to `d`, or until a watched descriptor is readable or wake()
  // is called. `has_fds` says whether the transports' descriptors are
  // watched: without them nothing but wake() can end the sleep, so a
  // sub-millisecond wait is a plain short sleep. With them the wait is
  // epoll_pwait2's, to the microsecond (a protocol timer 100 us away is not
  // rounded up to a millisecond); where the kernel lacks it (before 5.11)
  // epoll_wait's, rounded UP to whole milliseconds: truncated, the 100 us
  // sleep of an open collective became epoll_wait(0), a busy loop that
  // never gave the core away.
  void sleep_for(std::chrono::microseconds d, bool has_fds);

 private:
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  bool have_pwait2_ = true;  // until the kernel says ENOSYS
};

}  // namespace mccl::progress
