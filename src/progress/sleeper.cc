#include "progress/sleeper.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace mccl::progress {

using namespace std::chrono;

Sleeper::Sleeper() {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  add(wake_fd_);
}

Sleeper::~Sleeper() {
  close(epoll_fd_);
  close(wake_fd_);
}

void Sleeper::add(int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0 && errno == EEXIST) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
  }
}

void Sleeper::remove(int fd) { epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr); }

void Sleeper::wake() {
  wake_ups_.fetch_add(1, std::memory_order_relaxed);
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = write(wake_fd_, &one, sizeof one);
}

void Sleeper::sleep_for(milliseconds d) {
  epoll_event events[16];
  const int n = epoll_wait(epoll_fd_, events, 16, static_cast<int>(d.count()));
  for (int i = 0; i < n; ++i) {
    if (events[i].data.fd == wake_fd_) {
      std::uint64_t v;
      [[maybe_unused]] auto r = read(wake_fd_, &v, sizeof v);
    }
  }
}

void Sleeper::sleep_until_woken(milliseconds d) {
  pollfd p{wake_fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(d.count())) > 0) {
    std::uint64_t v;
    [[maybe_unused]] auto r = read(wake_fd_, &v, sizeof v);
  }
}

}  // namespace mccl::progress
