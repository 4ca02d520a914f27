#include "common/log.h"

#include <cctype>
#include <cstdlib>
#include <mutex>

#include "common/enum_names.h"
#include "common/settings.h"

namespace mccl::common {

namespace {
// MCCL_LOG_LEVEL's words; a line's prefix says its level in capitals.
constexpr EnumName<LogLevel> kLevelWords[] = {{LogLevel::kError, "error"},
                                              {LogLevel::kWarn, "warn"},
                                              {LogLevel::kInfo, "info"},
                                              {LogLevel::kDebug, "debug"}};
LogLevel parse_level(const std::string& s) {
  return value_named(s, kLevelWords).value_or(LogLevel::kWarn);
}
std::string level_prefix(LogLevel l) {
  std::string word = name_of(l, kLevelWords);
  for (char& c : word) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return word;
}
}  // namespace

LogLevel log_level() {
  static const LogLevel level = parse_level(settings::kLogLevel.get());
  return level;
}

void log_message(LogLevel level, int rank, const std::string& text) {
  if (static_cast<int>(level) > static_cast<int>(log_level())) return;
  std::string line = "[mccl " + level_prefix(level);
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
