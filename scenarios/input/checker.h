#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "scenarios/input/presets.h"
#include "scenarios/input/problem.h"
#include "scenarios/input/schema.h"

namespace podsim::scenarios {

/// A checked leaf value: integers as int64_t, numbers and quantities as
/// double (SI base units), booleans, strings (also enum values).
using CheckedValue = std::variant<int64_t, double, bool, std::string>;

/// What the checker found in a document, by actual JSON pointer (relative to
/// the table's root, e.g. "/cluster/scale_out/tiers/1/name").
struct CheckedDocument {
  std::map<std::string, CheckedValue> values;
  std::set<std::string> present;               ///< every key given (after preset expansion)
  std::set<std::string> bad;                   ///< keys whose value had a problem
  std::map<std::string, size_t> array_sizes;   ///< arrays given, by path
  std::map<std::string, std::string> presets;  ///< "/model" -> "llama3-405b"
  /// Leaves an override object ({"base": ..., key: value}) set over its
  /// preset, by path ("/software/attention/kernel").
  std::set<std::string> overridden;
  /// Remarks that are not problems (a preset named by a prefix), for stderr.
  std::vector<Problem> notes;
};

/// Walks a JSON document against a declaration table: expands presets
/// ("name" or {"base": name, ...}, merged key by key), checks every key is
/// declared (did-you-mean otherwise), every required key is given, and every
/// value has the declared type, unit and range. Collects all problems.
class Checker {
 public:
  /// Called for each kScenario node (validation files): the node and its path.
  using ScenarioHook = std::function<void(const nlohmann::json&, const std::string&)>;

  Checker(std::span<const KeyDecl> table, const PresetLibrary& presets, std::string path_prefix);

  /// Checks `document`; problems are appended to `problems` with paths
  /// prefixed by the path prefix.
  CheckedDocument check(const nlohmann::json& document, std::vector<Problem>& problems,
                        const ScenarioHook& on_scenario = {}) const;

  /// Checks one declared subtree (e.g. a cluster alone at "/cluster"): the
  /// values come back under their full paths.
  CheckedDocument check_subtree(const nlohmann::json& node, const std::string& pattern,
                                std::vector<Problem>& problems) const;

 private:
  struct Walk;
  std::span<const KeyDecl> table_;
  const PresetLibrary& presets_;
  std::string prefix_;
};

/// Converts one JSON value by its declaration (type, unit, range). On failure
/// returns nullopt and sets `message`/`hint`. Also used for declared defaults
/// (checker_values.cc, with declared_default and pattern_of).
std::optional<CheckedValue> convert_value(const nlohmann::json& value, const KeyDecl& decl,
                                          std::string& message, std::string& hint);

/// A declared default (Presence::kDefault) as a value; aborts if the
/// declaration's literal is broken (a bug the schema tests catch).
CheckedValue declared_default(const KeyDecl& decl);

/// "/cluster/scale_out/tiers/3/name" -> "/cluster/scale_out/tiers/*/name".
std::string pattern_of(std::string_view path);

/// "a string (\"x\")", "an array", ... of a JSON value, for "expected X, got Y"
/// (checker_values.cc).
std::string json_kind(const nlohmann::json& value);

}  // namespace podsim::scenarios
