#include "mpi/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>

#include "mpi/state.h"

namespace mccl::mpi {

namespace {
void vlog(const char* level, const char* fmt, va_list args) {
  char text[1024];
  std::vsnprintf(text, sizeof text, fmt, args);
  // One fprintf per line keeps lines of concurrent ranks whole.
  // Before MPI_Init (or without it: MPI sessions) there is no world rank.
  if (global().world_rank >= 0) {
    std::fprintf(stderr, "mccl_mpi rank %d: %s%s\n", global().world_rank, level, text);
  } else {
    std::fprintf(stderr, "mccl_mpi pid %d: %s%s\n", static_cast<int>(::getpid()), level, text);
  }
  std::fflush(stderr);
}
}  // namespace

void warnf(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vlog("warning: ", fmt, args);
  va_end(args);
}

void debugf(const char* fmt, ...) {
  if (!global().settings.debug) return;
  va_list args;
  va_start(args, fmt);
  vlog("", fmt, args);
  va_end(args);
}

}  // namespace mccl::mpi
