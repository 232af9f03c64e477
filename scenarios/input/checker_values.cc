// Leaf values of a checked document: one JSON value converted by its
// declaration (type, unit, range, allowed values), and the declared defaults.
// The walk over the document is checker.cc.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>

#include "scenarios/input/checker.h"
#include "scenarios/input/json_text.h"
#include "scenarios/input/quantity.h"
#include "scenarios/input/suggest.h"

namespace podsim::scenarios {

using nlohmann::json;

std::string json_kind(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string (" + quote_for_message(value.get_ref<const std::string&>()) + ")";
    case json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "the number " + value.dump();
    case json::value_t::binary:
    case json::value_t::discarded:
      return "binary data";
  }
  return "something else";
}

namespace {

/// The value as the user wrote it, short.
std::string shown(const json& value) {
  if (value.is_string()) return quote_for_message(value.get_ref<const std::string&>());
  const std::string text = value.dump();
  return text.size() > 60 ? text.substr(0, 60) + "..." : text;
}

/// Nonzero numbers closer to zero than this (subnormal doubles) are too
/// small to compute with: products with them underflow to 0 (5e-324 B/s x
/// 0.5 is 0 B/s) and quotients overflow to infinity.
constexpr double kSmallestNonzero = std::numeric_limits<double>::min();

bool subnormal(double v) { return v != 0 && std::fabs(v) < kSmallestNonzero; }

bool in_range(double v, const KeyDecl& decl) {
  if (!(v <= decl.max)) return false;  // also false for NaN
  if (subnormal(v)) return false;
  return decl.min_exclusive ? v > decl.min : v >= decl.min;
}

std::string range_message(const std::string& what, double v, const KeyDecl& decl) {
  if (subnormal(v)) {
    return what +
           " is out of range: too close to zero to compute with (nonzero values need "
           "a magnitude of at least 2.2e-308)";
  }
  return what + " is out of range (allowed: " + allowed_text(decl) + ")";
}

/// A JSON number within the declared range, or nullopt with the message.
std::optional<double> number_in_range(const json& value, const KeyDecl& decl,
                                      std::string_view expected, std::string& message,
                                      std::string& hint) {
  if (!value.is_number()) {
    message = "expected " + std::string(expected) + ", got " + json_kind(value);
    if (value.is_string()) hint = "write the number without quotes";
    return std::nullopt;
  }
  const double v = value.get<double>();
  if (!in_range(v, decl)) {
    message = range_message(shown(value), v, decl);
    return std::nullopt;
  }
  return v == 0 ? 0.0 : v;  // -0 is 0: it must not print as "-0"
}

/// The rank-layout string: a permutation of tp, cp, ep, dp, pp.
bool check_order(const std::string& order, std::string& message, std::string& hint) {
  const std::vector<std::string> dims = {"tp", "cp", "ep", "dp", "pp"};
  std::vector<int> seen(dims.size(), 0);
  size_t start = 0;
  while (start <= order.size()) {
    const size_t dash = order.find('-', start);
    const size_t end = dash == std::string::npos ? order.size() : dash;
    const std::string part = order.substr(start, end - start);
    size_t index = 0;
    while (index < dims.size() && dims[index] != part) ++index;
    if (index == dims.size()) {
      message = quote_for_message(order) + ": " + quote_for_message(part) +
                " is not a parallel dimension";
      const std::string guess = closest_match(part, dims);
      hint = guess.empty() ? "use tp, cp, ep, dp, pp joined by '-', e.g. \"tp-cp-ep-dp-pp\""
                           : "did you mean '" + guess + "'?";
      return false;
    }
    ++seen[index];
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    if (seen[i] != 1) {
      message = quote_for_message(order) +
                " is not a permutation of tp, cp, ep, dp, pp: " + dims[i] +
                (seen[i] == 0 ? " is missing" : " appears twice");
      hint = "name each of the five once, innermost first, e.g. \"tp-cp-ep-dp-pp\"";
      return false;
    }
  }
  return true;
}

std::string enum_hint(std::string_view given, const std::vector<std::string>& allowed) {
  const std::string guess = closest_match(given, allowed);
  if (!guess.empty()) return "did you mean '" + guess + "'?";
  return "one of: " + join_list(allowed, 40);
}

}  // namespace

std::string pattern_of(std::string_view path) {
  std::string out;
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start + 1);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view segment = path.substr(start + 1, end - start - 1);
    const bool index =
        !segment.empty() && segment.find_first_not_of("0123456789") == std::string_view::npos;
    out += "/";
    out += index ? std::string("*") : std::string(segment);
    start = end;
  }
  return out;
}

std::optional<CheckedValue> convert_value(const json& value, const KeyDecl& decl,
                                          std::string& message, std::string& hint) {
  switch (decl.kind) {
    case KeyKind::kInteger: {
      const std::optional<double> v = number_in_range(value, decl, "an integer", message, hint);
      if (!v) return std::nullopt;
      if (value.is_number_float() && *v != std::floor(*v)) {
        message = "expected an integer, got " + shown(value);
        return std::nullopt;
      }
      return CheckedValue(static_cast<int64_t>(*v));
    }
    case KeyKind::kNumber: {
      const std::optional<double> v = number_in_range(value, decl, "a number", message, hint);
      if (!v) return std::nullopt;
      return CheckedValue(*v);
    }
    case KeyKind::kQuantity: {
      double v = 0;
      if (value.is_number()) {
        v = value.get<double>();
      } else if (value.is_string()) {
        const Result<Quantity> quantity = parse_quantity(value.get_ref<const std::string&>());
        if (!quantity.ok()) {
          message = quantity.problems().front().message;
          hint = quantity.problems().front().hint;
          return std::nullopt;
        }
        if (quantity.value().dimension != decl.dimension) {
          message = shown(value) + " is " +
                    std::string(dimension_name(quantity.value().dimension)) + ", expected " +
                    std::string(dimension_name(decl.dimension)) + " like '" +
                    std::string(dimension_example(decl.dimension)) + "'";
          if (decl.dimension == Dimension::kBytesPerSecond &&
              quantity.value().dimension == Dimension::kBytes) {
            hint = "a bandwidth needs '/s': 'Gb/s' for bits, 'GB/s' for bytes";
          }
          return std::nullopt;
        }
        v = quantity.value().value;
      } else {
        message = "expected " + std::string(dimension_name(decl.dimension)) + " (a number in " +
                  std::string(dimension_unit(decl.dimension)) + " or a string like '" +
                  std::string(dimension_example(decl.dimension)) + "'), got " + json_kind(value);
        return std::nullopt;
      }
      if (!in_range(v, decl)) {
        message = range_message(
            shown(value) + (value.is_string() ? " = " + format_number(v) + " " +
                                                    std::string(dimension_unit(decl.dimension))
                                              : ""),
            v, decl);
        return std::nullopt;
      }
      return CheckedValue(v == 0 ? 0.0 : v);
    }
    case KeyKind::kBool:
      if (!value.is_boolean()) {
        message = "expected true or false, got " + json_kind(value);
        if (value.is_string()) hint = "write true or false without quotes";
        return std::nullopt;
      }
      return CheckedValue(value.get<bool>());
    case KeyKind::kString:
    case KeyKind::kTextOrArray: {
      if (!value.is_string()) {
        message = "expected a string, got " + json_kind(value);
        return std::nullopt;
      }
      const std::string& text = value.get_ref<const std::string&>();
      if (static_cast<double>(text.size()) > decl.max) {
        message = "string of " + std::to_string(text.size()) + " bytes is too long (at most " +
                  format_number(decl.max) + ")";
        return std::nullopt;
      }
      if (decl.allowed == "order" && !check_order(text, message, hint)) return std::nullopt;
      if (decl.allowed == "grid" && parse_grid(text).empty()) {
        message = quote_for_message(text) + " is not a grid of axis lengths";
        hint = "write 2 or 3 positive integers joined by 'x', e.g. \"16x16x24\"";
        return std::nullopt;
      }
      return CheckedValue(text);
    }
    case KeyKind::kEnum:
    case KeyKind::kEnumOrObject: {
      const std::vector<std::string> allowed = allowed_values(decl);
      if (!value.is_string()) {
        message = "expected one of " + join_list(allowed, 40) + ", got " + json_kind(value);
        return std::nullopt;
      }
      const std::string& text = value.get_ref<const std::string&>();
      for (const std::string& a : allowed) {
        if (a == text) return CheckedValue(text);
      }
      message = quote_for_message(text) + " is not one of " + join_list(allowed, 40);
      hint = enum_hint(text, allowed);
      return std::nullopt;
    }
    case KeyKind::kPresetName:
    case KeyKind::kPresetOrObject: {  // the string form (a declared default)
      if (!value.is_string()) {
        message = "expected a preset name, got " + json_kind(value);
        return std::nullopt;
      }
      const std::string& text = value.get_ref<const std::string&>();
      const std::vector<std::string> names = allowed_values(decl);
      // A unique prefix or common name is the preset ("h100", "H100 SXM").
      const NameMatch match = match_name(text, names);
      if (!match.name.empty()) return CheckedValue(match.name);
      const std::string_view category = decl.allowed;  // "models" -> "model"; "software"
      message = "unknown " +
                std::string(category.ends_with('s') ? category.substr(0, category.size() - 1)
                                                    : category) +
                " preset " + quote_for_message(text);
      hint = match.ambiguous.empty()
                 ? enum_hint(text, names)
                 : quote_for_message(text) + " could be " + join_list(match.ambiguous, 40) +
                       ": give more of the name";
      return std::nullopt;
    }
    case KeyKind::kObject:
    case KeyKind::kArray:
    case KeyKind::kScenario:
    case KeyKind::kTextMap:
      break;
  }
  message = "internal: no leaf conversion for this key";
  return std::nullopt;
}

CheckedValue declared_default(const KeyDecl& decl) {
  std::string message;
  std::string hint;
  const json literal = json::parse(decl.default_value, nullptr, /*allow_exceptions=*/false);
  std::optional<CheckedValue> value;
  if (!literal.is_discarded()) value = convert_value(literal, decl, message, hint);
  if (!value) {
    std::fprintf(stderr, "podsim: broken default '%s' of %s: %s\n",
                 std::string(decl.default_value).c_str(), std::string(decl.path).c_str(),
                 message.c_str());
    std::abort();
  }
  return *value;
}

}  // namespace podsim::scenarios
