// common/enum_names.h and the option tables of common/option_names.h: each
// table names every value once, reads back both ways, and spells exactly
// the vocabulary its setting accepts (settings.def), so that a value the
// environment may set always parses and every name logged can be set.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/option_names.h"
#include "common/settings.h"

namespace mccl::common {
namespace {

enum class Colour { kRed, kGreen, kBlue };
constexpr EnumName<Colour> kColours[] = {{Colour::kRed, "red"}, {Colour::kGreen, "green"}};

TEST(EnumNames, NamesAValueAndParsesAName) {
  EXPECT_STREQ(name_of(Colour::kGreen, kColours), "green");
  EXPECT_EQ(value_named("red", kColours), Colour::kRed);
}

TEST(EnumNames, AValueMissingFromTheTableIsUnknownAndNeverParsed) {
  EXPECT_STREQ(name_of(Colour::kBlue, kColours), "?");
  EXPECT_STREQ(name_of(Colour::kBlue, kColours, "no colour"), "no colour");
  EXPECT_EQ(value_named("blue", kColours), std::nullopt);
  EXPECT_EQ(value_named("", kColours), std::nullopt);
  EXPECT_EQ(value_named("Red", kColours), std::nullopt);  // words are exact
}

// The table's words joined by '|', as settings.def writes a vocabulary;
// and every value and every word distinct, each read back to the other.
template <typename E, std::size_t N>
std::string vocabulary(const EnumName<E> (&names)[N]) {
  std::string words;
  std::set<E> values;
  std::set<std::string> seen;
  for (const EnumName<E>& n : names) {
    EXPECT_TRUE(values.insert(n.value).second) << n.name;
    EXPECT_TRUE(seen.insert(n.name).second) << n.name;
    EXPECT_EQ(value_named(n.name, names), n.value) << n.name;
    EXPECT_STREQ(name_of(n.value, names), n.name);
    words += (words.empty() ? "" : "|") + std::string(n.name);
  }
  return words;
}

TEST(OptionNames, EachTableSpellsItsSettingsVocabulary) {
  EXPECT_EQ(vocabulary(kTransportNames), settings::kTransport.allowed());
  EXPECT_EQ(vocabulary(kProgressNames), settings::kProgress.allowed());
  EXPECT_EQ(vocabulary(kBroadcastNames), settings::kCollBcastAlgo.allowed());
  EXPECT_EQ(vocabulary(kAllgatherNames), settings::kCollAllgatherAlgo.allowed());
  EXPECT_EQ(vocabulary(kAllreduceNames), settings::kCollAllreduceAlgo.allowed());
  EXPECT_EQ(vocabulary(kCompressNames), settings::kCollCompress.allowed());
}

// Every value from 0 up to the enum's last enumerator (mccl/options.h) has
// a name: a value added before the last one without a word fails here, one
// appended after it fails the vocabulary test once its setting lists it.
template <typename E, std::size_t N>
void names_every_value_up_to(E last, const EnumName<E> (&names)[N]) {
  for (int i = 0; i <= static_cast<int>(last); ++i) {
    EXPECT_STRNE(name_of(static_cast<E>(i), names, "?"), "?") << "value " << i;
  }
}

TEST(OptionNames, EachTableNamesEveryValueOfItsEnum) {
  names_every_value_up_to(TransportKind::kIb, kTransportNames);
  names_every_value_up_to(ProgressKind::kOffload, kProgressNames);
  names_every_value_up_to(BroadcastAlgorithm::kFlat, kBroadcastNames);
  names_every_value_up_to(AllgatherAlgorithm::kStar, kAllgatherNames);
  names_every_value_up_to(AllreduceAlgorithm::kRecursiveDoubling, kAllreduceNames);
  names_every_value_up_to(CompressMode::kZfp, kCompressNames);
}

}  // namespace
}  // namespace mccl::common
