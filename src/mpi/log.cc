#include "mpi/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <string>

#include "common/log.h"
#include "mpi/state.h"

namespace mccl::mpi {

namespace {
void vlog(const char* level, const char* fmt, va_list args) {
  char text[1024];
  std::vsnprintf(text, sizeof text, fmt, args);
  // Before MPI_Init (or without it: MPI sessions) there is no world rank.
  const std::string who = global().world_rank >= 0 ? "rank " + std::to_string(global().world_rank)
                                                   : "pid " + std::to_string(::getpid());
  common::write_log_line("mccl_mpi " + who + ": " + level + text);
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
