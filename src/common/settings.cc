#include "common/settings.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "common/log.h"

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

bool parse_int(const std::string& v, std::int64_t& out) {
  errno = 0;
  char* end = nullptr;
  const long long parsed = std::strtoll(v.c_str(), &end, 0);
  if (errno != 0 || end == v.c_str() || *end != '\0') return false;
  out = parsed;
  return true;
}

bool parse_bool(const std::string& v, bool& out) {
  if (v == "1" || v == "true" || v == "yes" || v == "on") return out = true, true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return out = false, true;
  return false;
}

bool parse_double(const std::string& v, double& out) {
  char* end = nullptr;
  errno = 0;
  const double parsed = std::strtod(v.c_str(), &end);
  // strtod also accepts "nan" and "inf", which no setting can mean.
  if (errno != 0 || end == v.c_str() || *end != '\0' || !std::isfinite(parsed)) return false;
  out = parsed;
  return true;
}

// The alternatives of an allowed() text, split at '|'.
std::vector<std::string_view> alternatives(const char* allowed) {
  std::vector<std::string_view> out;
  std::string_view rest(allowed);
  while (true) {
    const auto bar = rest.find('|');
    out.push_back(rest.substr(0, bar));
    if (bar == std::string_view::npos) return out;
    rest.remove_prefix(bar + 1);
  }
}

// A range alternative "lo..hi" (either end may be empty) as its two ends
// in text; false for a word.
bool split_range(std::string_view alt, std::string& lo, std::string& hi) {
  const auto dots = alt.find("..");
  if (dots == std::string_view::npos) return false;
  lo = std::string(alt.substr(0, dots));
  hi = std::string(alt.substr(dots + 2));
  return true;
}

// Whether `value` lies in the range "lo..hi" of `alt`, compared as T.
template <typename T, typename Parse>
bool in_range(std::string_view alt, T value, Parse&& parse) {
  std::string lo, hi;
  if (!split_range(alt, lo, hi)) return false;
  T bound{};
  if (!lo.empty() && (!parse(lo, bound) || value < bound)) return false;
  if (!hi.empty() && (!parse(hi, bound) || value > bound)) return false;
  return true;
}

// "[lo, hi]" of a range alternative, an end left out read as infinite.
std::string interval_text(const std::string& lo, const std::string& hi) {
  return "[" + (lo.empty() ? "-inf" : lo) + ", " + (hi.empty() ? "inf" : hi) + "]";
}

// What allowed() admits, in words for an error message.
std::string expected_text(const Setting& s) {
  std::string lo, hi;
  switch (s.type()) {
    case SettingType::kBool:
      return "1/0, true/false, yes/no or on/off";
    case SettingType::kInt:
    case SettingType::kDouble: {
      std::string out = s.type() == SettingType::kInt ? "an integer" : "a finite number";
      if (s.allowed() != nullptr && split_range(s.allowed(), lo, hi)) {
        out += " in " + interval_text(lo, hi);
      }
      return out;
    }
    case SettingType::kString:
      break;
  }
  std::string out = std::string("one of ") + s.allowed();
  for (std::string_view alt : alternatives(s.allowed())) {
    if (split_range(alt, lo, hi)) {
      out += " (" + std::string(alt) + ": an integer in " + interval_text(lo, hi) + ")";
    }
  }
  return out;
}

// Whether text `v` is a value of `s`.
bool admits(const Setting& s, const std::string& v) {
  switch (s.type()) {
    case SettingType::kBool: {
      bool b = false;
      return parse_bool(v, b);
    }
    case SettingType::kInt: {
      std::int64_t i = 0;
      return parse_int(v, i) && (s.allowed() == nullptr || in_range(s.allowed(), i, parse_int));
    }
    case SettingType::kDouble: {
      double d = 0;
      return parse_double(v, d) &&
             (s.allowed() == nullptr || in_range(s.allowed(), d, parse_double));
    }
    case SettingType::kString:
      break;
  }
  if (s.allowed() == nullptr) return true;
  std::int64_t number = 0;
  const bool is_number = parse_int(v, number);
  for (std::string_view alt : alternatives(s.allowed())) {
    if (alt == v) return true;
    if (is_number && in_range(alt, number, parse_int)) return true;
  }
  return false;
}

// The effective value where the environment's passes check(), else the
// default, with the error logged: a getter never fails.
std::string checked_value(const Setting& s) {
  std::string v = s.raw();
  if (admits(s, v)) return v;
  write_log_line(std::string("[mccl ERROR] ") + s.check().message() + "; using the default " +
                 s.default_value());
  return s.default_value();
}

}  // namespace

Status Setting::check() const {
  const auto v = from_env();
  if (!v || admits(*this, *v)) return Status::ok();
  return invalid_argument(std::string(name_) + "=\"" + *v + "\" is not valid: expected " +
                          expected_text(*this));
}

std::int64_t Setting::get_int() const {
  std::int64_t out = 0;
  (void)parse_int(checked_value(*this), out);
  return out;
}

std::optional<std::int64_t> Setting::get_count() const {
  std::int64_t out = 0;
  if (!parse_int(checked_value(*this), out)) return std::nullopt;
  return out;
}

bool Setting::get_bool() const {
  bool out = false;
  (void)parse_bool(checked_value(*this), out);
  return out;
}

double Setting::get_double() const {
  double out = 0;
  (void)parse_double(checked_value(*this), out);
  return out;
}

std::string Setting::get() const { return checked_value(*this); }

Status check_settings() {
  std::string errors;
  for (const Setting* s : all_settings()) {
    if (Status st = s->check(); !st) errors += (errors.empty() ? "" : "; ") + st.message();
  }
  return errors.empty() ? Status::ok() : invalid_argument(errors);
}

}  // namespace mccl::common
