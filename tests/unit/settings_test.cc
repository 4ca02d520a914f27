// The MCCL_* settings registry: every entry well formed, environment
// overrides, and bad values rejected with an error naming the variable.
#include "common/settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "mccl/error.h"

namespace mccl::common {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> split_allowed(const char* allowed) {
  std::vector<std::string> out;
  std::string_view rest(allowed);
  while (true) {
    auto bar = rest.find('|');
    out.emplace_back(rest.substr(0, bar));
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  return out;
}

// Every test starts with all registered variables unset and leaves the
// environment as it found it.
class SettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const Setting* s : all_settings()) {
      const char* v = std::getenv(s->name());
      saved_[s->name()] = v ? std::optional<std::string>(v) : std::nullopt;
      ::unsetenv(s->name());
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  static void set(const Setting& s, const char* value) { ::setenv(s.name(), value, 1); }

  // Sets the variable of `s` to `value` and checks that check() rejects it
  // with kInvalidArgument naming the variable and quoting the value, and
  // that the getters read the default instead (never throwing).
  static void expect_rejected(const Setting& s, const char* value) {
    set(s, value);
    SCOPED_TRACE(std::string(s.name()) + "=\"" + value + "\"");
    const Status st = s.check();
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(st.message(), HasSubstr(s.name()));
    EXPECT_THAT(st.message(), HasSubstr(value));
    switch (s.type()) {
      case SettingType::kInt:
        EXPECT_EQ(s.get_int(), std::stoll(s.default_value()));
        break;
      case SettingType::kBool:
        EXPECT_EQ(s.get_bool(), std::string(s.default_value()) == "1");
        break;
      case SettingType::kDouble:
        EXPECT_DOUBLE_EQ(s.get_double(), std::stod(s.default_value()));
        break;
      case SettingType::kString:
        EXPECT_EQ(s.get(), s.default_value());
        break;
    }
  }
  static void expect_accepted(const Setting& s, const char* value) {
    set(s, value);
    const Status st = s.check();
    EXPECT_TRUE(st.is_ok()) << s.name() << "=" << value << ": " << st.message();
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST_F(SettingsTest, RegistryIsNotEmpty) { EXPECT_FALSE(all_settings().empty()); }

TEST_F(SettingsTest, EveryNameStartsWithMcclAndIsUnique) {
  std::set<std::string> seen;
  for (const Setting* s : all_settings()) {
    ASSERT_NE(s, nullptr);
    ASSERT_NE(s->name(), nullptr);
    const std::string name = s->name();
    EXPECT_EQ(name.rfind("MCCL_", 0), 0u) << name;
    EXPECT_GT(name.size(), 5u) << name;
    EXPECT_EQ(name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"), std::string::npos)
        << name;
    EXPECT_TRUE(seen.insert(name).second) << "registered twice: " << name;
  }
}

TEST_F(SettingsTest, EveryEntryIsDocumented) {
  for (const Setting* s : all_settings()) {
    ASSERT_NE(s->doc(), nullptr) << s->name();
    EXPECT_GT(std::string_view(s->doc()).size(), 0u) << s->name();
    ASSERT_NE(s->default_value(), nullptr) << s->name();
  }
}

// MCCL_RANK and MCCL_WORLD_SIZE default to -1, "not set", which their
// ranges exclude on purpose: setting -1 is an error.
bool default_means_unset(const Setting& s) {
  return &s == &settings::kRank || &s == &settings::kWorldSize;
}

TEST_F(SettingsTest, EveryDefaultIsAValueTheTableAdmits) {
  for (const Setting* s : all_settings()) {
    SCOPED_TRACE(s->name());
    EXPECT_STREQ(s->source(), "default");
    EXPECT_EQ(s->raw(), s->default_value());
    EXPECT_FALSE(s->from_env().has_value());
    EXPECT_TRUE(s->check().is_ok());  // nothing set
    if (std::string_view(s->default_value()).empty() || default_means_unset(*s)) continue;
    expect_accepted(*s, s->default_value());
  }
}

TEST_F(SettingsTest, EveryAllowedTextIsWellFormed) {
  for (const Setting* s : all_settings()) {
    if (s->allowed() == nullptr) continue;
    SCOPED_TRACE(s->name());
    const auto words = split_allowed(s->allowed());
    for (const auto& w : words) EXPECT_FALSE(w.empty()) << s->allowed();
    EXPECT_EQ(std::set<std::string>(words.begin(), words.end()).size(), words.size())
        << "duplicate word in " << s->allowed();
    if (s->type() != SettingType::kString) {
      ASSERT_EQ(words.size(), 1u) << "a number's allowed text is one range";
      EXPECT_NE(words[0].find(".."), std::string::npos) << "a number's range is lo..hi";
      continue;
    }
    // Each word is accepted from the environment, each range's ends too.
    for (const auto& w : words) {
      const auto dots = w.find("..");
      if (dots == std::string::npos) {
        expect_accepted(*s, w.c_str());
        EXPECT_EQ(s->get(), w);
        continue;
      }
      if (dots > 0) expect_accepted(*s, w.substr(0, dots).c_str());
      if (dots + 2 < w.size()) expect_accepted(*s, w.substr(dots + 2).c_str());
    }
  }
}

// settings.def is the one list: walking it here yields exactly the
// constants that all_settings() holds, in its order, each carrying the
// entry's name, type, default and vocabulary. A constant declared outside
// the table would not exist; one listed twice fails the uniqueness test.
TEST_F(SettingsTest, TheTableDrivesBothTheConstantsAndTheList) {
  struct Entry {
    const Setting* constant;
    const char* name;
    SettingType type;
    const char* default_value;
    const char* allowed;
  };
  const std::vector<Entry> table = {
#define MCCL_SETTING(constant, name, type, default_value, allowed, doc) \
  {&settings::constant, name, SettingType::type, default_value, allowed},
#include "common/settings.def"
  };
  const auto& all = all_settings();
  ASSERT_EQ(all.size(), table.size());
  for (std::size_t i = 0; i < table.size(); ++i) {
    SCOPED_TRACE(table[i].name);
    EXPECT_EQ(all[i], table[i].constant);
    EXPECT_STREQ(all[i]->name(), table[i].name);
    EXPECT_EQ(all[i]->type(), table[i].type);
    EXPECT_STREQ(all[i]->default_value(), table[i].default_value);
    if (table[i].allowed == nullptr) {
      EXPECT_EQ(all[i]->allowed(), nullptr);
    } else {
      EXPECT_STREQ(all[i]->allowed(), table[i].allowed);
    }
  }
}

TEST_F(SettingsTest, EnvironmentOverridesTheDefault) {
  const Setting& s = settings::kCollTimeoutMs;
  set(s, "1234");
  EXPECT_STREQ(s.source(), "environment");
  EXPECT_EQ(s.from_env(), std::optional<std::string>("1234"));
  EXPECT_EQ(s.raw(), "1234");
  EXPECT_EQ(s.get_int(), 1234);
  ::unsetenv(s.name());
  EXPECT_STREQ(s.source(), "default");
  EXPECT_EQ(s.get_int(), std::stoll(s.default_value()));
}

TEST_F(SettingsTest, EmptyEnvironmentValueCountsAsUnset) {
  const Setting& s = settings::kProgress;
  set(s, "");
  EXPECT_FALSE(s.from_env().has_value());
  EXPECT_STREQ(s.source(), "default");
  EXPECT_EQ(s.get(), s.default_value());
}

TEST_F(SettingsTest, StringOverride) {
  set(settings::kTransport, "udp");
  EXPECT_EQ(settings::kTransport.get(), "udp");
  EXPECT_STREQ(settings::kTransport.source(), "environment");
}

TEST_F(SettingsTest, IntValues) {
  const Setting& s = settings::kProtoEarlyBytes;  // 0..
  set(s, "9223372036854775807");
  EXPECT_EQ(s.get_int(), INT64_MAX);
  set(s, "0x10");
  EXPECT_EQ(s.get_int(), 16);
  const Setting& cpu = settings::kProgressCpu;  // -1..65536
  set(cpu, "-1");
  EXPECT_EQ(cpu.get_int(), -1);
}

TEST_F(SettingsTest, IntRangeIsInclusive) {
  const Setting& s = settings::kProtoSendBatch;  // 0..4096
  for (const char* edge : {"0", "4096"}) expect_accepted(s, edge);
  set(s, "4096");
  EXPECT_EQ(s.get_int(), 4096);
}

TEST_F(SettingsTest, IntOutOfRangeIsRejected) {
  const Setting& s = settings::kProtoSendBatch;
  expect_rejected(s, "4097");
  expect_rejected(s, "-1");
  EXPECT_THAT(s.check().message(), HasSubstr("[0, 4096]"));
  expect_rejected(settings::kProtoReorderWindow, "0");  // 1..
  EXPECT_THAT(settings::kProtoReorderWindow.check().message(), HasSubstr("[1, inf]"));
}

TEST_F(SettingsTest, MalformedIntIsRejected) {
  const Setting& s = settings::kProtoReorderWindow;
  for (const char* bad : {"abc", "12abc", "1.5", "64 ", "0x", "99999999999999999999999",
                          "-99999999999999999999999"}) {
    expect_rejected(s, bad);
  }
}

TEST_F(SettingsTest, BoolSpellings) {
  const Setting& s = settings::kProtoChecksum;
  for (const char* yes : {"1", "true", "yes", "on"}) {
    set(s, yes);
    EXPECT_TRUE(s.get_bool()) << yes;
  }
  for (const char* no : {"0", "false", "no", "off"}) {
    set(s, no);
    EXPECT_FALSE(s.get_bool()) << no;
  }
  for (const char* bad : {"2", "maybe", "TRUE ", "y"}) expect_rejected(s, bad);
}

TEST_F(SettingsTest, DoubleValues) {
  const Setting& s = settings::kProtoStallFactor;
  set(s, "2.5");
  EXPECT_DOUBLE_EQ(s.get_double(), 2.5);
  set(s, "1e3");
  EXPECT_DOUBLE_EQ(s.get_double(), 1000.0);
  set(s, "-0.25");
  EXPECT_DOUBLE_EQ(s.get_double(), -0.25);
}

TEST_F(SettingsTest, MalformedOrNonFiniteDoubleIsRejected) {
  const Setting& s = settings::kProtoStallFactor;
  for (const char* bad : {"x", "1.5x", "1e999", "nan", "inf", "-inf", "infinity"}) {
    expect_rejected(s, bad);
  }
}

TEST_F(SettingsTest, StringOutsideVocabularyIsRejected) {
  const Setting& s = settings::kCollBcastAlgo;
  for (const char* bad : {"bogus", "Multicast", "multicast|chain", "auto ", "|"}) {
    expect_rejected(s, bad);
  }
}

TEST_F(SettingsTest, AStringsRangeAlternativeTakesIntegersInIt) {
  const Setting& s = settings::kProtoIncastBytes;  // auto|0..
  for (const char* good : {"auto", "0", "1048576"}) expect_accepted(s, good);
  for (const char* bad : {"-5", "lots", "1.5", "auto,0"}) expect_rejected(s, bad);
  EXPECT_THAT(s.check().message(), HasSubstr("an integer in [0, inf]"));
}

TEST_F(SettingsTest, ErrorMessageNamesTheExpectedValues) {
  set(settings::kLogLevel, "loud");
  EXPECT_THAT(settings::kLogLevel.check().message(), HasSubstr(settings::kLogLevel.allowed()));
}

TEST_F(SettingsTest, CheckSettingsNamesEveryRejectedVariable) {
  EXPECT_TRUE(check_settings().is_ok());
  set(settings::kProtoSendBatch, "many");
  set(settings::kCollBcastAlgo, "fast");
  const Status st = check_settings();
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("MCCL_PROTO_SEND_BATCH=\"many\""));
  EXPECT_THAT(st.message(), HasSubstr("MCCL_COLL_BCAST_ALGO=\"fast\""));
}

}  // namespace
}  // namespace mccl::common
