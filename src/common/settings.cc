#include "common/settings.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "mccl/error.h"

namespace mccl::common {

namespace settings {
#define MCCL_SETTING(constant, name, type, default_value, allowed, doc) \
  const Setting constant{name, SettingType::type, default_value, doc, allowed};
#include "common/settings.def"
}  // namespace settings

const std::vector<const Setting*>& all_settings() {
  static const std::vector<const Setting*> all = {
#define MCCL_SETTING(constant, name, type, default_value, allowed, doc) &settings::constant,
#include "common/settings.def"
  };
  return all;
}

std::optional<std::string> Setting::from_env() const {
  const char* v = std::getenv(name_);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

const char* Setting::source() const { return from_env() ? "environment" : "default"; }

std::string Setting::raw() const { return from_env().value_or(default_); }

namespace {
[[noreturn]] void bad_value(const Setting& s, const std::string& value, const char* expected) {
  throw Error(ErrorCode::kInvalidArgument,
              std::string(s.name()) + "=\"" + value + "\" is not valid: expected " + expected);
}
}  // namespace

std::int64_t Setting::get_int(std::int64_t min, std::int64_t max) const {
  const std::string v = raw();
  errno = 0;
  char* end = nullptr;
  long long parsed = std::strtoll(v.c_str(), &end, 0);
  if (errno != 0 || end == v.c_str() || *end != '\0') bad_value(*this, v, "an integer");
  if (parsed < min || parsed > max) {
    bad_value(*this, v,
              ("an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]").c_str());
  }
  return parsed;
}

bool Setting::get_bool() const {
  const std::string v = raw();
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  bad_value(*this, v, "1/0, true/false, yes/no or on/off");
}

double Setting::get_double() const {
  const std::string v = raw();
  char* end = nullptr;
  errno = 0;
  double parsed = std::strtod(v.c_str(), &end);
  // strtod also accepts "nan" and "inf", which no setting can mean.
  if (errno != 0 || end == v.c_str() || *end != '\0' || !std::isfinite(parsed)) {
    bad_value(*this, v, "a finite number");
  }
  return parsed;
}

std::string Setting::get() const {
  std::string v = raw();
  if (allowed_ == nullptr) return v;
  std::string_view rest(allowed_);
  while (!rest.empty()) {
    auto bar = rest.find('|');
    if (rest.substr(0, bar) == v) return v;
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  bad_value(*this, v, (std::string("one of ") + allowed_).c_str());
}

}  // namespace mccl::common
