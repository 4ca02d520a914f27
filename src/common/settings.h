// The one registry of MCCL_* environment settings.
//
// Every knob is an entry of settings.def (name, type, default, one line of
// documentation), the one list from which both its constant here and
// all_settings() come; `mccl_info` prints them all.
// Explicit options win over the environment, which wins over the default:
// callers pass an option through `value_or` style helpers in their layer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mccl::common {

enum class SettingType { kInt, kBool, kString, kDouble };

class Setting {
 public:
  constexpr Setting(const char* name, SettingType type, const char* default_value, const char* doc,
                    const char* allowed = nullptr)
      : name_(name), type_(type), default_(default_value), doc_(doc), allowed_(allowed) {}

  const char* name() const { return name_; }
  SettingType type() const { return type_; }
  const char* default_value() const { return default_; }
  const char* doc() const { return doc_; }
  // For string settings with a fixed vocabulary: "a|b|c", else nullptr.
  const char* allowed() const { return allowed_; }

  // The environment's value, if set (empty strings count as unset).
  std::optional<std::string> from_env() const;
  // Where the effective value comes from: "environment" or "default".
  const char* source() const;
  // The effective value as text (environment, else default).
  std::string raw() const;

  // Typed access. An environment value that does not parse (or is not in
  // the allowed vocabulary, or out of range) throws mccl::Error
  // (kInvalidArgument) naming the variable.
  std::int64_t get_int(std::int64_t min = INT64_MIN, std::int64_t max = INT64_MAX) const;
  bool get_bool() const;
  double get_double() const;
  std::string get() const;  // strings, checked against allowed()

 private:
  const char* name_;
  SettingType type_;
  const char* default_;
  const char* doc_;
  const char* allowed_;
};

// Every registered setting, in the order of settings.def.
const std::vector<const Setting*>& all_settings();

// One constant per entry of settings.def (settings::kLogLevel, ...).
namespace settings {
#define MCCL_SETTING(constant, name, type, default_value, allowed, doc) \
  extern const Setting constant;
#include "common/settings.def"
}  // namespace settings

}  // namespace mccl::common
