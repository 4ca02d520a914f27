#include "common/test_kill.h"

#include <csignal>
#include <cstdio>

#include "common/settings.h"

namespace mccl::common {

void kill_here_if_asked(const char* point) {
  const auto asked = settings::kTestKillAt.from_env();
  if (!asked || *asked != point) return;
  std::fprintf(stderr, "[mccl] MCCL_TEST_KILL_AT=%s: killing this process\n", point);
  std::fflush(stderr);
  std::raise(SIGKILL);
}

}  // namespace mccl::common
