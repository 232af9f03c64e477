#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/input/quantity.h"

namespace podsim::scenarios {

/// What JSON a key takes.
enum class KeyKind : uint8_t {
  kObject,          ///< an object with declared keys
  kArray,           ///< an array of objects ("<path>/*" declares the elements)
  kPresetOrObject,  ///< a preset name, or an object (optionally {"base": preset, ...})
  kPresetName,      ///< the "base" key: a preset name of the parent's category
  kEnumOrObject,    ///< one of the allowed strings, or an object with declared keys
  kScenario,        ///< a whole scenario (validation cases)
  kInteger,         ///< a JSON number with an integral value
  kNumber,          ///< a JSON number
  kQuantity,        ///< a number in SI base units or a string with a unit
  kBool,
  kString,
  kEnum,         ///< one of the allowed strings
  kTextOrArray,  ///< a string, or an array whose elements "<path>/*" declares
  /// An object of strings keyed by the parent object's other declared keys
  /// (a software group's `sources`: mechanism -> where its value comes from).
  kTextMap,
};

/// Whether a key must be given, and what it is when it is not.
enum class Presence : uint8_t {
  kRequired,  ///< must be given
  kDefault,   ///< `default_value` (a JSON literal) when absent
  kComputed,  ///< derived from other keys when absent (`default_value` says how, in words)
  kOptional,  ///< absent means "none" (no default value)
};

/// The declaration of one key: the single place its type, unit, default,
/// allowed values and meaning are written. The reader checks input with it,
/// the spec builder reads values only through declared paths, and
/// `podsim describe` prints it.
struct KeyDecl {
  /// JSON-pointer pattern from the document root; "*" stands for any array
  /// index ("/cluster/scale_out/tiers/*/name").
  std::string_view path;
  KeyKind kind;
  Presence presence;
  /// kDefault: a JSON literal (`1`, `false`, `"ring"`, `"0 s"`);
  /// kComputed: the rule in words ("= heads").
  std::string_view default_value;
  Dimension dimension = Dimension::kNone;  ///< kQuantity only
  /// Numeric range in SI base units, for kInteger, kNumber, kQuantity.
  double min = 0;
  double max = 0;
  bool min_exclusive = false;
  /// kEnum / kEnumOrObject: allowed values separated by '|';
  /// kPresetOrObject / kPresetName: the preset category ("models", "gpus", "clusters",
  /// "software");
  /// kString: empty, "order" for the rank-layout permutation, or "grid" for
  /// axis lengths joined by 'x' ("16x16x24", parse_grid).
  std::string_view allowed;
  std::string_view doc;
  /// kNumber: JSON null is accepted and means "none" (the key reads as unset).
  bool nullable = false;
};

/// Axis lengths of a "grid" string ("8x16x12"); empty when it is not 2 or 3
/// positive integers joined by 'x'.
std::vector<int> parse_grid(std::string_view text);

/// The keys of a scenario (scenario-format.md plus documented extensions),
/// patterns relative to the scenario object.
std::span<const KeyDecl> scenario_keys();

/// The `software` section of scenario_keys() (schema_software.cc).
std::span<const KeyDecl> software_keys();

/// The keys of a validation-case file; "/cases/*/scenario" is a kScenario
/// whose keys are scenario_keys().
std::span<const KeyDecl> validation_keys();

/// The declaration whose pattern matches `pattern` exactly, or nullptr.
const KeyDecl* find_decl(std::span<const KeyDecl> table, std::string_view pattern);

/// The declared children of an object/array pattern, in table order
/// (their last path segments).
std::vector<std::string> declared_children(std::span<const KeyDecl> table,
                                           std::string_view pattern);

/// Every declared pattern whose last segment is `key` (to tell a user that
/// "tp" belongs in /parallelism/tp).
std::vector<std::string> patterns_ending_with(std::span<const KeyDecl> table, std::string_view key);

/// The allowed strings of an enum, or the preset names of a preset key.
std::vector<std::string> allowed_values(const KeyDecl& decl);

/// "1 .. 100000", "> 0 bytes", "bf16 | fp16 | ...", preset names...: the
/// allowed values of a key in words.
std::string allowed_text(const KeyDecl& decl);

/// The type of a key in words: "integer", "quantity (bandwidth)", "enum", ...
std::string_view kind_text(const KeyDecl& decl);

/// The default of a key in words: "1", "\"ring\"", "= heads", "(required)", "(none)".
std::string default_text(const KeyDecl& decl);

/// The declaration tables as text for `podsim describe` (aligned columns),
/// then every software preset's mechanisms with their sources
/// (schema_describe.cc).
std::string describe_text();
/// The declaration tables as one JSON document (a string, pretty-printed).
std::string describe_json_text();

class PresetLibrary;
/// Every software preset: its source line, then "group.key = value: source"
/// per mechanism (software_describe.cc).
std::string software_presets_text(const PresetLibrary& presets);
/// The same as {"<preset>": {"source", "mechanisms": [{"key", "value", "source"}]}}.
nlohmann::json software_presets_json(const PresetLibrary& presets);

}  // namespace podsim::scenarios
