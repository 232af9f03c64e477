#pragma once

// Declaration helpers of the key tables (schema.cc, schema_software.cc;
// internal to scenarios/input): one line per key.

#include <string_view>

#include "scenarios/input/schema.h"

namespace podsim::scenarios::decl {

// Declaration helpers: one line per key in the tables below.
inline constexpr KeyDecl object(std::string_view path, Presence presence, std::string_view doc) {
  return {path, KeyKind::kObject, presence, "", Dimension::kNone, 0, 0, false, "", doc};
}
inline constexpr KeyDecl integer(std::string_view path, Presence presence, std::string_view value,
                                 double min, double max, std::string_view doc) {
  return {path, KeyKind::kInteger, presence, value, Dimension::kNone, min, max, false, "", doc};
}
inline constexpr KeyDecl number(std::string_view path, Presence presence, std::string_view value,
                                double min, double max, bool min_exclusive, std::string_view doc) {
  return {path, KeyKind::kNumber, presence, value, Dimension::kNone, min,
          max,  min_exclusive,    "",       doc};
}
inline constexpr KeyDecl quantity(std::string_view path, Presence presence, std::string_view value,
                                  Dimension dimension, double min, double max, bool min_exclusive,
                                  std::string_view doc) {
  return {path, KeyKind::kQuantity, presence, value, dimension, min, max, min_exclusive, "", doc};
}
inline constexpr KeyDecl boolean(std::string_view path, std::string_view value,
                                 std::string_view doc) {
  return {path, KeyKind::kBool, Presence::kDefault, value, Dimension::kNone, 0, 0, false, "", doc};
}
/// A boolean whose absence means something of its own (said in `doc`).
inline constexpr KeyDecl optional_boolean(std::string_view path, std::string_view doc) {
  return {path, KeyKind::kBool, Presence::kOptional, "", Dimension::kNone, 0, 0, false, "", doc};
}
/// A number that may also be null ("none"), optional.
inline constexpr KeyDecl nullable_number(std::string_view path, double min, double max,
                                         bool min_exclusive, std::string_view doc) {
  return {path,
          KeyKind::kNumber,
          Presence::kOptional,
          "",
          Dimension::kNone,
          min,
          max,
          min_exclusive,
          "",
          doc,
          true};
}
/// An array of strings, each one of `allowed`.
inline constexpr KeyDecl enum_array(std::string_view path, std::string_view doc) {
  return {path, KeyKind::kArray, Presence::kOptional, "", Dimension::kNone, 0, 64, false, "", doc};
}
inline constexpr KeyDecl text(std::string_view path, Presence presence, std::string_view value,
                              double max_length, std::string_view doc) {
  return {path, KeyKind::kString, presence, value, Dimension::kNone, 0, max_length, false, "", doc};
}
inline constexpr KeyDecl choice(std::string_view path, std::string_view value,
                                std::string_view allowed, std::string_view doc) {
  return {path, KeyKind::kEnum, Presence::kDefault, value, Dimension::kNone, 0, 0, false, allowed,
          doc};
}
inline constexpr KeyDecl preset_or_object(std::string_view path, std::string_view category,
                                          std::string_view doc) {
  return {path,
          KeyKind::kPresetOrObject,
          Presence::kRequired,
          "",
          Dimension::kNone,
          0,
          0,
          false,
          category,
          doc};
}
inline constexpr KeyDecl preset_base(std::string_view path, std::string_view category) {
  return {path,
          KeyKind::kPresetName,
          Presence::kOptional,
          "",
          Dimension::kNone,
          0,
          0,
          false,
          category,
          "start from this preset; the other keys of the object override it"};
}

inline constexpr double kNameLength = 256;
inline constexpr double kTextLength = 65536;
inline constexpr double kPathLength = 4096;
inline constexpr double kMaxDegree = 1e8;  // any parallel degree or GPU count
inline constexpr double kPeta = 1e15;

inline constexpr Presence kRequired = Presence::kRequired;
inline constexpr Presence kDefault = Presence::kDefault;
inline constexpr Presence kComputed = Presence::kComputed;
inline constexpr Presence kOptional = Presence::kOptional;

}  // namespace podsim::scenarios::decl
