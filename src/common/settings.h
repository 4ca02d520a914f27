// The one registry of MCCL_* environment settings.
//
// Every knob is an entry of settings.def (name, type, default, what may be
// set, one line of documentation), the one list from which both its
// constant here and all_settings() come; `mccl_info` prints them all.
// Explicit options win over the environment, which wins over the default:
// callers pass an option through `value_or` style helpers in their layer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

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
  // What the environment may set, or nullptr for anything of the type:
  // for a string its vocabulary, "a|b|c"; for a number its range, "lo..hi"
  // with either end left out where there is none ("1.." or "0..4096"); a
  // string's alternative may also be a range, which takes any integer in it
  // ("auto|0..": auto or a count).
  const char* allowed() const { return allowed_; }

  // The environment's value, if set (empty strings count as unset).
  std::optional<std::string> from_env() const;
  // Where the effective value comes from: "environment" or "default".
  const char* source() const;
  // The effective value as text (environment, else default).
  std::string raw() const;

  // Whether the environment's value parses as this setting's type and lies
  // within allowed(): ok, or kInvalidArgument naming the variable, quoting
  // the value and saying what was expected.
  Status check() const;

  // Typed access to the effective value; never throws. The public entry
  // points check every setting first (check_settings()), so a value that
  // check() rejects stops there with its error; one that reaches a getter
  // anyway (set after that check) is logged and read as the default.
  std::int64_t get_int() const;
  // A string setting whose vocabulary admits a count ("auto|0.."): the
  // effective value as that count, or nothing where it is a word (auto).
  std::optional<std::int64_t> get_count() const;
  bool get_bool() const;
  double get_double() const;
  std::string get() const;

 private:
  const char* name_;
  SettingType type_;
  const char* default_;
  const char* doc_;
  const char* allowed_;
};

// Every registered setting, in the order of settings.def.
const std::vector<const Setting*>& all_settings();

// check() of every setting the environment sets: ok, or kInvalidArgument
// listing every rejected one. Called where a public entry point begins
// (communicator creation, a bootstrap, the MPI layer's start, the offload
// daemon), so that a malformed value is an error there, never later.
Status check_settings();

// One constant per entry of settings.def (settings::kLogLevel, ...).
namespace settings {
#define MCCL_SETTING(constant, name, type, default_value, allowed, doc) \
  extern const Setting constant;
#include "common/settings.def"
}  // namespace settings

}  // namespace mccl::common
