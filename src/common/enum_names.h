// An enum's values and the words that name them, kept as one table read
// both ways: a value's name for logs and messages, a name's value for
// settings and options. One table instead of a switch that names and an
// if-chain that parses, which drift apart.
//
// A value missing from its table names as `unknown` and is never parsed;
// tests/unit/enum_names_test.cc checks the option tables against their
// enums and their settings' vocabularies.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace mccl::common {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

template <typename E, std::size_t N>
constexpr const char* name_of(E value, const EnumName<E> (&names)[N], const char* unknown = "?") {
  for (const EnumName<E>& n : names) {
    if (n.value == value) return n.name;
  }
  return unknown;
}

template <typename E, std::size_t N>
constexpr std::optional<E> value_named(std::string_view name, const EnumName<E> (&names)[N]) {
  for (const EnumName<E>& n : names) {
    if (name == n.name) return n.value;
  }
  return std::nullopt;
}

}  // namespace mccl::common
