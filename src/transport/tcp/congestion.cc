#include "transport/tcp/congestion.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "transport/tcp/socket.h"

namespace mccl::transport::tcp {
namespace {

// Unpaced, in order of preference: cubic is the kernel's own default; reno
// is built into every kernel.
constexpr std::array<const char*, 2> kUnpaced = {"cubic", "reno"};

// 0, or the errno of the refusal.
int set_algorithm(int fd, const std::string& name) {
  if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                   static_cast<socklen_t>(name.size())) == 0) {
    return 0;
  }
  return errno;
}

bool is_named(const std::string& setting) {
  return setting != kCongestionAuto && setting != kCongestionSystem && !setting.empty();
}

}  // namespace

common::Status check_congestion(const std::string& setting) {
  if (!is_named(setting)) return common::Status::ok();
  Fd probe;
  if (auto st = open_tcp_socket(probe); !st) return st;
  if (const int err = set_algorithm(probe.get(), setting); err != 0) {
    return common::invalid_argument(
        "tcp: TcpReliableConfig::congestion (MCCL_TCP_CONGESTION) = \"" + setting +
        "\": the kernel refuses it (" + errno_text(err) +
        "); net.ipv4.tcp_allowed_congestion_control lists what an unprivileged process may "
        "choose, or use auto or system");
  }
  return common::Status::ok();
}

void apply_congestion(int fd, const std::string& setting) {
  if (is_named(setting)) {
    (void)set_algorithm(fd, setting);  // check_congestion() accepted it at creation
    return;
  }
  if (setting == kCongestionSystem) return;
  for (const char* name : kUnpaced) {
    if (set_algorithm(fd, name) == 0) return;
  }
}

std::string congestion_of(int fd) {
  std::array<char, 32> name{};  // TCP_CA_NAME_MAX is 16
  socklen_t len = name.size();
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), &len) != 0) return {};
  return std::string(name.data(), ::strnlen(name.data(), len));
}

}  // namespace mccl::transport::tcp
