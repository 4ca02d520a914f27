// Which transports a progress call needs to poll. Polling a transport that
// has nothing costs a system call (an empty recvmmsg, an epoll_wait(0)), and
// a waiting rank calls progress() in a loop: with both transports polled
// every time, an idle call costs two system calls. The gate asks the
// kernel once, with one epoll_wait(0) over the descriptors of the
// transports whose wait_fd() is exact (wait_fd_gates_poll()), and a call
// that finds nothing costs that one call. Transports without an exact
// descriptor (the in-memory fabric, UCX, verbs, which must be polled to
// make progress at all) are polled every time. Where the reliable
// transport can check the datagram socket in its own poll's call
// (ReliableTransport::share_wait, TCP), the context asks it instead and
// builds the gate with no descriptor: an arrival then costs one readiness
// call, not the gate's and the transport's.
#pragma once

#include <cstddef>

namespace mccl::protocol {

class PollGate {
 public:
  static constexpr std::size_t kMax = 2;  // the datagram and the reliable transport

  // `fds[i]` is transport i's descriptor when its poll() can have nothing to
  // do while that descriptor is not readable, else -1 (always polled).
  PollGate(const int (&fds)[kMax]);
  ~PollGate();
  PollGate(const PollGate&) = delete;
  PollGate& operator=(const PollGate&) = delete;

  // Bit i set: poll transport i now. `due` has the bits of transports that
  // must be polled anyway (the last poll stopped at its budget, so more is
  // waiting). Never blocks.
  unsigned select(unsigned due);

 private:
  int epoll_ = -1;
  unsigned always_ = 0;  // polled every time
  unsigned gated_ = 0;   // polled when the kernel says their descriptor is readable
};

}  // namespace mccl::protocol
