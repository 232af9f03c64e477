#include "scenarios/input/checker.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "scenarios/input/json_text.h"
#include "scenarios/input/quantity.h"
#include "scenarios/input/suggest.h"

namespace podsim::scenarios {

using nlohmann::json;

namespace {

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

}  // namespace

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
