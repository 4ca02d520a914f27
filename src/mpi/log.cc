#include "mpi/log.h"

#include <cstdarg>
#include <cstdio>

#include "mpi/state.h"

namespace mccl::mpi {

namespace {
void vlog(const char* level, const char* fmt, va_list args) {
  char text[1024];
  std::vsnprintf(text, sizeof text, fmt, args);
  // One fprintf per line keeps lines of concurrent ranks whole.
  std::fprintf(stderr, "mccl_mpi rank %d: %s%s\n", global().world_rank, level, text);
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
