#include "protocol/poll_gate.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>

namespace mccl::protocol {

PollGate::PollGate(const int (&fds)[kMax]) {
  const unsigned all = (1u << kMax) - 1;
  if (std::any_of(std::begin(fds), std::end(fds), [](int fd) { return fd >= 0; })) {
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  }
  for (unsigned i = 0; i < kMax; ++i) {
    if (fds[i] < 0 || epoll_ < 0) continue;
    epoll_event ev{};
    ev.events = EPOLLIN;  // level-triggered: readable for as long as data waits
    ev.data.u32 = i;
    if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, fds[i], &ev) == 0) gated_ |= 1u << i;
  }
  // Without the gate (no descriptor, or the kernel refused it) a transport
  // is polled every time, as it would be with no gate at all.
  always_ = all & ~gated_;
}

PollGate::~PollGate() {
  if (epoll_ >= 0) ::close(epoll_);
}

unsigned PollGate::select(unsigned due) {
  unsigned poll = always_ | (due & gated_);
  if ((gated_ & ~poll) == 0) return poll;  // every gated transport is due anyway
  epoll_event events[kMax];
  const int n = ::epoll_wait(epoll_, events, static_cast<int>(kMax), 0);
  // On a failure (EINTR) poll everything: a wasted call, never a lost one.
  if (n < 0) return always_ | gated_;
  for (int i = 0; i < n; ++i) poll |= 1u << events[i].data.u32;
  return poll;
}

}  // namespace mccl::protocol
