#include "common/log.h"

#include <cstdlib>
#include <mutex>

#include "common/settings.h"

namespace mccl::common {

namespace {
LogLevel parse_level(const std::string& s) {
  if (s == "error") return LogLevel::kError;
  if (s == "info") return LogLevel::kInfo;
  if (s == "debug") return LogLevel::kDebug;
  return LogLevel::kWarn;
}
const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kError:
      return "ERROR";
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kDebug:
      return "DEBUG";
  }
  return "?";
}
}  // namespace

LogLevel log_level() {
  static const LogLevel level = parse_level(settings::kLogLevel.get());
  return level;
}

void log_message(LogLevel level, int rank, const std::string& text) {
  if (static_cast<int>(level) > static_cast<int>(log_level())) return;
  std::string line = std::string("[mccl ") + level_name(level);
  if (rank >= 0) line += " rank " + std::to_string(rank);
  write_log_line(line + "] " + text);
}

void write_log_line(const std::string& line) {
  static std::mutex mu;  // keep lines of concurrent ranks whole
  std::lock_guard lock(mu);
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

void contract_violated(const std::string& what) {
  write_log_line("[mccl FATAL] a precondition inside the library was broken: " + what);
  std::abort();
}

}  // namespace mccl::common
