#include "scenarios/input/checker.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>

#include "scenarios/input/json_text.h"
#include "scenarios/input/quantity.h"
#include "scenarios/input/suggest.h"

namespace podsim::scenarios {

using nlohmann::json;

namespace {

/// "a string", "an array", ... of a JSON value, for "expected X, got Y".
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

/// Training frameworks' names for the scenario's keys (Megatron-LM and
/// NeMo arguments, torchtitan's job config, DeepSpeed's config, Hugging Face
/// model configs, plain words), folded (folded_name) -> the key. Unknown
/// keys are looked up here before edit distance: "pipeline_parallel" is
/// "pp", not a typo of "pipeline".
constexpr std::pair<std::string_view, std::string_view> kKeySynonyms[] = {
    // Megatron-LM / NeMo (--tensor-model-parallel-size, ...)
    {"tensormodelparallelsize", "tp"},
    {"pipelinemodelparallelsize", "pp"},
    {"contextparallelsize", "cp"},
    {"expertmodelparallelsize", "ep"},
    {"experttensorparallelsize", "expert_tp"},
    {"virtualpipelinemodelparallelsize", "virtual_stages"},
    {"microbatchsize", "micro_batch"},
    {"globalbatchsize", "global_batch"},
    {"seqlength", "seq_len"},
    {"numlayers", "layers"},
    {"hiddensize", "hidden"},
    {"ffnhiddensize", "ffn_hidden"},
    {"numattentionheads", "heads"},
    {"numquerygroups", "kv_heads"},
    {"kvchannels", "head_dim"},
    {"numexperts", "experts"},
    {"moeroutertopk", "top_k"},
    {"moeffnhiddensize", "ffn_hidden"},
    {"recomputegranularity", "recompute"},
    {"usedistributedoptimizer", "zero"},
    // torchtitan (parallelism.*_degree, training.*)
    {"tensorparalleldegree", "tp"},
    {"pipelineparalleldegree", "pp"},
    {"contextparalleldegree", "cp"},
    {"expertparalleldegree", "ep"},
    {"experttensorparalleldegree", "expert_tp"},
    {"dataparallelreplicatedegree", "dp"},
    {"dataparallelsharddegree", "shard_group"},
    {"pipelineparallelschedule", "schedule"},
    {"pipelineparallelmicrobatchsize", "micro_batch"},
    {"activationcheckpoint", "recompute"},
    {"nlayers", "layers"},
    {"nheads", "heads"},
    {"nkvheads", "kv_heads"},
    // DeepSpeed
    {"trainmicrobatchsizepergpu", "micro_batch"},
    {"trainbatchsize", "global_batch"},
    {"zerooptimization", "zero"},
    {"zerostage", "zero"},
    // Hugging Face configs
    {"numhiddenlayers", "layers"},
    {"intermediatesize", "ffn_hidden"},
    {"numkeyvalueheads", "kv_heads"},
    {"vocabsize", "vocab"},
    {"numlocalexperts", "experts"},
    {"numexpertspertok", "top_k"},
    // Plain words
    {"tensorparallel", "tp"},
    {"tensorparallelism", "tp"},
    {"pipelineparallel", "pp"},
    {"pipelineparallelism", "pp"},
    {"dataparallel", "dp"},
    {"dataparallelism", "dp"},
    {"contextparallel", "cp"},
    {"contextparallelism", "cp"},
    {"expertparallel", "ep"},
    {"expertparallelism", "ep"},
    {"sequencelength", "seq_len"},
    {"microbatches", "micro_batch"},
    {"globalbatch", "global_batch"},
    {"activationcheckpointing", "recompute"},
    {"gradientcheckpointing", "recompute"},
};

/// The scenario key a framework's name stands for, or "".
std::string_view key_for_synonym(std::string_view key) {
  const std::string folded = folded_name(key);
  for (const auto& [synonym, target] : kKeySynonyms) {
    if (synonym == folded) return target;
  }
  return {};
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

/// The state of one check() call.
struct Checker::Walk {
  const Checker& checker;
  std::vector<Problem>& problems;
  const ScenarioHook& on_scenario;
  CheckedDocument out;

  void problem(const std::string& path, std::string message, std::string hint = "") {
    add_problem(problems, {checker.prefix_ + path, std::move(message), std::move(hint)});
  }

  const KeyDecl& decl_for(const std::string& pattern) const {
    const KeyDecl* decl = find_decl(checker.table_, pattern);
    if (decl == nullptr) {
      std::fprintf(stderr, "podsim: internal: undeclared pattern %s\n", pattern.c_str());
      std::abort();
    }
    return *decl;
  }

  void node(const json& value, const std::string& pattern, const std::string& path) {
    const KeyDecl& decl = decl_for(pattern);
    switch (decl.kind) {
      case KeyKind::kObject:
        if (!value.is_object()) {
          problem(path, "expected an object, got " + json_kind(value));
          out.bad.insert(path);
          return;
        }
        object(value, pattern, path);
        return;
      case KeyKind::kPresetOrObject:
        preset_or_object(value, decl, pattern, path);
        return;
      case KeyKind::kEnumOrObject:
        if (value.is_object()) {
          object(value, pattern, path);
          return;
        }
        leaf(value, decl, path);
        return;
      case KeyKind::kArray:
        array(value, decl, pattern, path);
        return;
      case KeyKind::kTextOrArray:
        if (value.is_array()) {
          array(value, decl, pattern, path);
          return;
        }
        leaf(value, decl, path);
        return;
      case KeyKind::kScenario:
        out.present.insert(path);
        if (on_scenario) on_scenario(value, path);
        return;
      case KeyKind::kTextMap:
        text_map(value, decl, pattern, path);
        return;
      default:
        leaf(value, decl, path);
        return;
    }
  }

  void leaf(const json& value, const KeyDecl& decl, const std::string& path) {
    out.present.insert(path);
    if (decl.nullable && value.is_null()) return;  // given as "none": no value
    std::string message;
    std::string hint;
    std::optional<CheckedValue> converted = convert_value(value, decl, message, hint);
    if (!converted) {
      problem(path, std::move(message), std::move(hint));
      out.bad.insert(path);
      return;
    }
    out.values[path] = std::move(*converted);
  }

  void array(const json& value, const KeyDecl& decl, const std::string& pattern,
             const std::string& path) {
    out.present.insert(path);
    if (!value.is_array()) {
      problem(path, "expected an array, got " + json_kind(value));
      out.bad.insert(path);
      return;
    }
    const auto size = static_cast<double>(value.size());
    if (size < decl.min || size > decl.max) {
      problem(path, "has " + std::to_string(value.size()) +
                        " elements (allowed: " + allowed_text(decl) + ")");
      out.bad.insert(path);
      return;
    }
    out.array_sizes[path] = value.size();
    for (size_t i = 0; i < value.size(); ++i) {
      node(value[i], pattern + "/*", path + "/" + std::to_string(i));
    }
  }

  /// An object of strings keyed by the parent object's other declared keys.
  void text_map(const json& value, const KeyDecl& decl, const std::string& pattern,
                const std::string& path) {
    out.present.insert(path);
    if (!value.is_object()) {
      problem(path, "expected an object of strings, got " + json_kind(value));
      out.bad.insert(path);
      return;
    }
    const std::string parent = pattern.substr(0, pattern.rfind('/'));
    std::vector<std::string> keys = declared_children(checker.table_, parent);
    std::erase(keys, pattern.substr(pattern.rfind('/') + 1));
    for (const auto& [key, text] : value.items()) {
      const std::string child_path = path + "/" + pointer_segment(key);
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        const std::string guess = closest_match(key, keys);
        problem(
            child_path, "names no key of " + parent,
            guess.empty() ? "keys here: " + join_list(keys, 40) : "did you mean '" + guess + "'?");
        out.bad.insert(child_path);
        continue;
      }
      if (!text.is_string()) {
        problem(child_path, "expected a string, got " + json_kind(text));
        out.bad.insert(child_path);
        continue;
      }
      const std::string& words = text.get_ref<const std::string&>();
      if (static_cast<double>(words.size()) > decl.max) {
        problem(child_path, "string of " + std::to_string(words.size()) +
                                " bytes is too long (at most " + format_number(decl.max) + ")");
        out.bad.insert(child_path);
        continue;
      }
      out.present.insert(child_path);
      out.values[child_path] = words;
    }
  }

  void unknown_key(const std::string& key, const std::string& pattern, const std::string& path) {
    const std::string child_path = path + "/" + pointer_segment(key);
    const std::vector<std::string> siblings = declared_children(checker.table_, pattern);
    std::string hint;
    const std::string_view synonym = key_for_synonym(key);
    const std::string guess = closest_match(key, siblings);
    if (!synonym.empty()) {
      const bool here = std::find(siblings.begin(), siblings.end(), synonym) != siblings.end();
      const std::vector<std::string> elsewhere = patterns_ending_with(checker.table_, synonym);
      hint = here || elsewhere.empty()
                 ? "did you mean '" + std::string(synonym) + "'? it is podsim's key for " +
                       quote_for_message(key)
                 : "podsim's key for " + quote_for_message(key) + " is " + elsewhere.front();
    } else if (!guess.empty()) {
      hint = "did you mean '" + guess + "'?";
    } else {
      const std::vector<std::string> elsewhere = patterns_ending_with(checker.table_, key);
      if (!elsewhere.empty()) {
        hint = "'" + key + "' belongs in " + elsewhere.front();
      } else {
        hint = "keys here: " + join_list(siblings, 40);
      }
    }
    problem(child_path, "unknown key " + quote_for_message(key), hint);
  }

  void object(const json& value, const std::string& pattern, const std::string& path) {
    out.present.insert(path);
    for (const auto& [key, child] : value.items()) {
      const std::string child_pattern = pattern + "/" + key;
      const KeyDecl* decl = find_decl(checker.table_, child_pattern);
      if (decl == nullptr || key == "*" || decl->kind == KeyKind::kPresetName) {
        // "base" is consumed by preset expansion; anywhere else it is unknown.
        unknown_key(key, pattern, path);
        continue;
      }
      node(child, child_pattern, path + "/" + pointer_segment(key));
    }
    for (const std::string& key : declared_children(checker.table_, pattern)) {
      const KeyDecl& decl = decl_for(pattern + "/" + key);
      if (decl.kind == KeyKind::kPresetOrObject && decl.presence == Presence::kDefault &&
          !value.contains(key)) {
        // An absent preset key with a default is its default preset.
        preset_or_object(json::parse(decl.default_value), decl, pattern + "/" + key,
                         path + "/" + key);
        continue;
      }
      if (decl.presence == Presence::kRequired && !value.contains(key)) {
        problem(path + "/" + key, "missing (required)",
                decl.doc.empty() ? "" : "give " + std::string(decl.doc));
        out.bad.insert(path + "/" + key);
      }
    }
  }

  void preset_or_object(const json& value, const KeyDecl& decl, const std::string& pattern,
                        const std::string& path) {
    const std::string category(decl.allowed);
    if (value.is_string()) {
      const KeyDecl& base_decl = decl_for(pattern + "/base");
      std::string message;
      std::string hint;
      const std::optional<CheckedValue> converted = convert_value(value, base_decl, message, hint);
      if (!converted) {
        problem(path, std::move(message), std::move(hint));
        out.bad.insert(path);
        return;
      }
      const std::string& name = std::get<std::string>(*converted);
      note_resolved(path, value.get_ref<const std::string&>(), name);
      out.presets[path] = name;
      object(*checker.presets_.find(category, name), pattern, path);
      return;
    }
    if (!value.is_object()) {
      problem(path, "expected a preset name or an object, got " + json_kind(value),
              "presets: " + join_list(checker.presets_.names(category), 40));
      out.bad.insert(path);
      return;
    }
    if (!value.contains("base")) {
      object(value, pattern, path);
      return;
    }
    const KeyDecl& base_decl = decl_for(pattern + "/base");
    std::string message;
    std::string hint;
    const std::optional<CheckedValue> converted =
        convert_value(value["base"], base_decl, message, hint);
    if (!converted) {
      // Without its base the object would miss required keys: report only this.
      problem(path + "/base", std::move(message), std::move(hint));
      out.bad.insert(path);
      return;
    }
    const std::string& name = std::get<std::string>(*converted);
    note_resolved(path + "/base", value["base"].get_ref<const std::string&>(), name);
    out.presets[path] = name;
    json overrides = value;
    overrides.erase("base");
    mark_overridden(overrides, path);
    object(merge(*checker.presets_.find(category, name), overrides, pattern), pattern, path);
  }

  /// A preset named by a prefix or common name: the reader says which it took.
  void note_resolved(const std::string& path, const std::string& given, const std::string& name) {
    if (given == name) return;
    add_problem(out.notes, {checker.prefix_ + path,
                            quote_for_message(given) + " read as preset '" + name + "'",
                            "write \"" + name + "\" to be sure"});
  }

  /// Records the leaves an override object sets over its preset.
  void mark_overridden(const json& overrides, const std::string& path) {
    for (const auto& [key, value] : overrides.items()) {
      const std::string child = path + "/" + pointer_segment(key);
      if (value.is_object()) {
        mark_overridden(value, child);
      } else {
        out.overridden.insert(child);
      }
    }
  }

  /// `base` with `overrides` laid over it, key by key: objects merge
  /// recursively, a preset name under an override object without "base"
  /// becomes that object's base, anything else (scalars, arrays) is replaced.
  json merge(const json& base, const json& overrides, const std::string& pattern) const {
    json result = base;
    for (const auto& [key, value] : overrides.items()) {
      const std::string child_pattern = pattern + "/" + key;
      const KeyDecl* decl = find_decl(checker.table_, child_pattern);
      const auto existing = result.find(key);
      if (decl == nullptr || existing == result.end() || !value.is_object()) {
        result[key] = value;
        continue;
      }
      if (decl->kind == KeyKind::kPresetOrObject && value.contains("base")) {
        result[key] = value;  // a new base replaces the preset's choice
      } else if (decl->kind == KeyKind::kPresetOrObject && existing->is_string()) {
        json with_base = value;
        with_base["base"] = *existing;
        result[key] = std::move(with_base);
      } else if (existing->is_object()) {
        result[key] = merge(*existing, value, child_pattern);
      } else {
        result[key] = value;
      }
    }
    return result;
  }
};

Checker::Checker(std::span<const KeyDecl> table, const PresetLibrary& presets,
                 std::string path_prefix)
    : table_(table), presets_(presets), prefix_(std::move(path_prefix)) {}

CheckedDocument Checker::check(const json& document, std::vector<Problem>& problems,
                               const ScenarioHook& on_scenario) const {
  Walk walk{*this, problems, on_scenario, {}};
  walk.node(document, "", "");
  return std::move(walk.out);
}

CheckedDocument Checker::check_subtree(const json& node, const std::string& pattern,
                                       std::vector<Problem>& problems) const {
  const ScenarioHook none;
  Walk walk{*this, problems, none, {}};
  walk.node(node, pattern, pattern);
  return std::move(walk.out);
}

}  // namespace podsim::scenarios
