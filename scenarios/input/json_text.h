#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "scenarios/input/problem.h"

namespace podsim::scenarios {

/// Limits on untrusted JSON input, so hostile files fail fast and cleanly.
struct JsonLimits {
  size_t max_bytes = 64u << 20;  ///< file size
  int max_depth = 64;            ///< nesting of objects and arrays
};

/// Parses JSON text into a DOM without recursion and with bounded nesting:
/// deeper input stops at the first container past `max_depth` with the
/// problem "<path>: nesting deeper than N". Syntax errors, invalid UTF-8 and
/// duplicate keys are problems with the JSON pointer where they occur; a
/// syntax error says line and column, and its excerpt shows the line with a
/// caret under the offending byte. A number beyond a double (1e999) is "out
/// of range". No library's wording or exception leaves this function.
Result<nlohmann::json> parse_json_text(std::string_view text, const JsonLimits& limits = {});

/// Reads a whole file as bytes (at most `limits.max_bytes`; special files and
/// directories are refused). Problems have path "/".
Result<std::string> read_text_file(const std::string& path, const JsonLimits& limits = {});

/// Escapes one JSON-pointer segment ("a/b" -> "a~1b", "~" -> "~0").
std::string pointer_segment(std::string_view key);

}  // namespace podsim::scenarios
