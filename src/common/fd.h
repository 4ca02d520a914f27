// The owned file descriptor and the errno text that every layer with
// sockets or descriptors (bootstrap, the TCP, UDP and verbs transports)
// shares, so that their error messages read alike.
#pragma once

#include <string>

namespace mccl::common {

// Owns one file descriptor; closes it on destruction. Move-only.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Closes the descriptor held (if any) and holds `fd` instead.
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// "ECONNREFUSED (Connection refused)": the name for searching, the text for
// reading; "errno 1234 (...)" where the C library knows no name.
std::string errno_text(int err);

}  // namespace mccl::common
