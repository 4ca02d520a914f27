// Two ranks on threads gather 4 bytes each through an installed MCCL.
#include <array>
#include <cstdio>
#include <cstring>
#include <mccl/mccl.hpp>
#include <thread>
#include <vector>

int main() {
  // The header's version and the library's must agree: a stale header or
  // library in the prefix would show here.
  char header_version[32];
  std::snprintf(header_version, sizeof header_version, "%d.%d.%d", MCCL_VERSION_MAJOR,
                MCCL_VERSION_MINOR, MCCL_VERSION_PATCH);
  if (std::strcmp(header_version, mccl::version_string()) != 0) {
    std::fprintf(stderr, "version mismatch: header %s, library %s\n", header_version,
                 mccl::version_string());
    return 1;
  }

  mccl::InProcessWorld world(2);
  std::vector<mccl::Communicator> comms = mccl::create_communicators(world);
  std::array<std::array<unsigned char, 8>, 2> recv{};
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      const unsigned char b = static_cast<unsigned char>(10 * r);
      const std::array<unsigned char, 4> send{b, static_cast<unsigned char>(b + 1),
                                              static_cast<unsigned char>(b + 2),
                                              static_cast<unsigned char>(b + 3)};
      comms[r].allgather(send.data(), recv[r].data(), send.size());
    });
  }
  for (auto& t : threads) t.join();

  const std::array<unsigned char, 8> expected{0, 1, 2, 3, 10, 11, 12, 13};
  for (int r = 0; r < 2; ++r) {
    if (recv[r] != expected) {
      std::fprintf(stderr, "rank %d gathered the wrong bytes\n", r);
      return 1;
    }
  }
  std::printf("mccl %s installed package works\n", mccl::version_string());
  return 0;
}
