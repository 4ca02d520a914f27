#include "common/test_kill.h"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <string>

#include "common/log.h"
#include "common/settings.h"

namespace mccl::common {

namespace {

[[noreturn]] void kill_now(const std::string& why) {
  write_log_line("[mccl] MCCL_TEST_KILL_AT=" + why + ": killing this process");
  std::raise(SIGKILL);
  std::abort();  // not reached
}

// MCCL_TEST_KILL_AT=name:N, read once (the hot paths count toward it).
struct Countdown {
  std::string name;  // empty: none asked for
  std::uint64_t at = 0;
  std::atomic<std::uint64_t> seen{0};

  Countdown() {
    const auto asked = settings::kTestKillAt.from_env();
    if (!asked) return;
    const auto colon = asked->find(':');
    if (colon == std::string::npos) return;
    name = asked->substr(0, colon);
    at = std::strtoull(asked->c_str() + colon + 1, nullptr, 10);
  }
};

Countdown& countdown() {
  static Countdown c;
  return c;
}

}  // namespace

void kill_here_if_asked(const char* point) {
  const auto asked = settings::kTestKillAt.from_env();
  if (asked && *asked == point) kill_now(point);
}

void count_toward_kill(const char* name, std::uint64_t count) {
  Countdown& c = countdown();
  if (c.name.empty() || c.name != name) return;
  if (c.seen.fetch_add(count) + count >= c.at) kill_now(c.name + ":" + std::to_string(c.at));
}

}  // namespace mccl::common
