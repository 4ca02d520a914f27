// Rank-prefixed logging to stderr. The level comes from MCCL_LOG_LEVEL
// (error, warn, info, debug); warnings and errors are on by default.
#pragma once

#include <cstdio>
#include <string>

namespace mccl::common {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

LogLevel log_level();
void log_message(LogLevel level, int rank, const std::string& text);

// The one place a line reaches stderr: whole (one write, under a lock, so
// lines of concurrent threads never interleave) and flushed. log_message
// formats MCCL's lines; libmccl_mpi (mpi/log.h) formats its own, in the
// form its users grep, and writes them here too.
void write_log_line(const std::string& line);

// A caller inside the library broke a function's documented precondition
// (a bug, never bad input from a user, which is a Status): says what, and
// aborts. Layers below api/ do not throw (common/status.h).
[[noreturn]] void contract_violated(const std::string& what);

// printf-style helper; formatting happens only when the level is enabled.
template <typename... Args>
void logf(LogLevel level, int rank, const char* fmt, Args... args) {
  if (static_cast<int>(level) > static_cast<int>(log_level())) return;
  char buf[1024];
  if constexpr (sizeof...(Args) == 0) {
    log_message(level, rank, fmt);
  } else {
    std::snprintf(buf, sizeof buf, fmt, args...);
    log_message(level, rank, buf);
  }
}

}  // namespace mccl::common
