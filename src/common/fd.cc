#include "common/fd.h"

#include <unistd.h>

#include <cstring>

namespace mccl::common {

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string errno_text(int err) {
  const char* name = ::strerrorname_np(err);
  std::string out = name != nullptr ? name : "errno " + std::to_string(err);
  return out + " (" + std::strerror(err) + ")";
}

}  // namespace mccl::common
