#include "common/log.h"

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
  static std::mutex mu;  // keep lines of concurrent ranks whole
  std::lock_guard lock(mu);
  if (rank >= 0) {
    std::fprintf(stderr, "[mccl %s rank %d] %s\n", level_name(level), rank, text.c_str());
  } else {
    std::fprintf(stderr, "[mccl %s] %s\n", level_name(level), text.c_str());
  }
}

}  // namespace mccl::common
