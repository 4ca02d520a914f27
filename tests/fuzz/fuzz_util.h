// Helpers shared by the libFuzzer targets of this folder: a check that
// aborts (so libFuzzer records the input) even in builds without asserts,
// and a socket pair carrying the fuzz input as a peer's byte stream.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#define MCCL_FUZZ_CHECK(cond)                                                       \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

namespace mccl::fuzz {

inline std::span<const std::byte> as_bytes(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const std::byte*>(data), size};
}

// A connected unix stream pair whose first end has received `bytes` and
// then EOF, as if a peer had written them and closed: the parser under test
// reads the second end. Inputs larger than the socket buffer are cut (the
// fuzzer's inputs stay far below it).
struct StreamFromPeer {
  int ours = -1;
  explicit StreamFromPeer(std::span<const std::byte> bytes) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
    int big = 1 << 20;
    ::setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    ::setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    std::size_t at = 0;
    while (at < bytes.size()) {
      ssize_t n = ::send(sv[1], bytes.data() + at, bytes.size() - at, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n <= 0) break;
      at += static_cast<std::size_t>(n);
    }
    ::close(sv[1]);
    ours = sv[0];
  }
  ~StreamFromPeer() {
    if (ours >= 0) ::close(ours);
  }
  StreamFromPeer(const StreamFromPeer&) = delete;
  StreamFromPeer& operator=(const StreamFromPeer&) = delete;
  // Hands the descriptor to an owner that closes it.
  int release() {
    int fd = ours;
    ours = -1;
    return fd;
  }
};

}  // namespace mccl::fuzz
