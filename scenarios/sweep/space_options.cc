#include "scenarios/sweep/space_options.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/input/quantity.h"
#include "scenarios/input/suggest.h"

namespace podsim::scenarios {
namespace {

using strategies::ContextAlgorithm;
using strategies::PipelineSchedule;
using strategies::RecomputeMode;

/// A key of --fix: its canonical name, the other spellings it takes, and
/// what one value looks like (for the hint).
struct FixKey {
  const char* name;
  std::vector<const char*> synonyms;
  const char* values;
};

const std::vector<FixKey>& fix_keys() {
  static const std::vector<FixKey> keys{
      {"tp", {"tensor_parallel"}, "a degree, e.g. tp=8"},
      {"cp", {"context_parallel"}, "a degree, e.g. cp=2"},
      {"pp", {"pipeline_parallel"}, "a degree, e.g. pp=4"},
      {"dp", {"data_parallel"}, "a degree, e.g. dp=32"},
      {"ep", {"expert_parallel"}, "a degree, e.g. ep=8"},
      {"expert_tp", {"etp", "expert_tensor_parallel"}, "a degree, e.g. expert_tp=1"},
      {"cp_algorithm", {"context", "context_algorithm"}, "ring, ulysses or all_gather"},
      {"zero", {"zero_stage"}, "0, 1, 2 or 3"},
      {"shard_group", {"hsdp"}, "an HSDP shard group size, or 0 for all of dp*cp"},
      {"schedule",
       {"pipeline", "pipeline_schedule"},
       "gpipe, 1f1b, interleaved_1f1b or zero_bubble"},
      {"virtual_stages", {"v", "vpp"}, "interleaved virtual stages, e.g. virtual_stages=4"},
      {"recompute", {}, "none, selective or full"},
      {"micro_batch", {"mb", "micro_batch_size"}, "a size, e.g. micro_batch=1"},
  };
  return keys;
}

/// "8" -> 8; nullopt for anything but a whole number in [lo, 2^40].
std::optional<int64_t> whole_number(std::string_view text, int64_t lo) {
  if (text.empty() || text.size() > 12 || text.find_first_not_of("0123456789") != text.npos) {
    return std::nullopt;
  }
  const int64_t v = std::stoll(std::string(text));
  if (v < lo || v > (int64_t{1} << 40)) return std::nullopt;
  return v;
}

template <typename T>
std::optional<T> named(std::string_view text, const std::vector<std::pair<const char*, T>>& names) {
  for (const auto& [name, value] : names) {
    if (text == name) return value;
  }
  return std::nullopt;
}

Problem fix_problem(const std::string& message, const std::string& hint) {
  return {"--fix", message, hint};
}

}  // namespace

std::vector<std::string> sweep_fix_keys() {
  std::vector<std::string> out;
  for (const FixKey& k : fix_keys()) out.emplace_back(k.name);
  return out;
}

std::optional<Problem> apply_sweep_fix(std::string_view key_value, SweepSpace& space,
                                       std::vector<std::string>& already) {
  const size_t eq = key_value.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == key_value.size()) {
    return fix_problem("needs KEY=VALUE, got " + quote_for_message(key_value),
                       "e.g. --fix tp=8 --fix zero=1; keys: " + join_list(sweep_fix_keys(), 20));
  }
  const std::string key(key_value.substr(0, eq));
  const std::string value(key_value.substr(eq + 1));
  const FixKey* found = nullptr;
  std::vector<std::string> spellings;
  for (const FixKey& k : fix_keys()) {
    spellings.emplace_back(k.name);
    if (key == k.name) found = &k;
    for (const char* s : k.synonyms) {
      spellings.emplace_back(s);
      if (key == s) found = &k;
    }
  }
  if (found == nullptr) {
    const std::string guess = closest_match(key, spellings);
    return fix_problem("unknown key " + quote_for_message(key),
                       (guess.empty() ? std::string() : "did you mean '" + guess + "'? ") +
                           "keys: " + join_list(sweep_fix_keys(), 20));
  }
  const std::string name = found->name;
  if (std::find(already.begin(), already.end(), name) != already.end()) {
    return fix_problem(name + " is pinned twice", "give each key once");
  }
  already.push_back(name);
  auto bad_value = [&]() {
    return fix_problem("unknown value " + quote_for_message(value) + " for " + name,
                       name + " takes " + found->values);
  };
  SweepSpace::Pinned& pin = space.pinned;
  const std::vector<std::pair<const char*, std::optional<int64_t>*>> degrees{
      {"tp", &pin.tp},
      {"cp", &pin.cp},
      {"pp", &pin.pp},
      {"dp", &pin.dp},
      {"ep", &pin.ep},
      {"expert_tp", &pin.expert_tp},
      {"virtual_stages", &pin.virtual_stages}};
  for (const auto& [degree, slot] : degrees) {
    if (name != degree) continue;
    const std::optional<int64_t> v = whole_number(value, 1);
    if (!v) return bad_value();
    *slot = *v;
    return std::nullopt;
  }
  if (name == "shard_group") {
    const std::optional<int64_t> v = whole_number(value, 0);
    if (!v || *v == 1) return bad_value();
    pin.shard_group = *v;
    // Shard groups exist only for ZeRO-3; a group of 0 is plain FSDP.
    if (*v > 1) space.zero = {3};
    return std::nullopt;
  }
  if (name == "micro_batch") {
    const std::optional<int64_t> v = whole_number(value, 1);
    if (!v) return bad_value();
    space.micro_batches = {*v};
    return std::nullopt;
  }
  if (name == "zero") {
    const std::optional<int64_t> v = whole_number(value, 0);
    if (!v || *v > 3) return bad_value();
    space.zero = {static_cast<int>(*v)};
    return std::nullopt;
  }
  if (name == "cp_algorithm") {
    const auto v = named<ContextAlgorithm>(value, {{"ring", ContextAlgorithm::kRing},
                                                   {"ulysses", ContextAlgorithm::kUlysses},
                                                   {"all_gather", ContextAlgorithm::kAllGather}});
    if (!v) return bad_value();
    space.context_algorithms = {*v};
    return std::nullopt;
  }
  if (name == "schedule") {
    const auto v = named<PipelineSchedule>(
        value, {{"gpipe", PipelineSchedule::kGpipe},
                {"1f1b", PipelineSchedule::kOneFOneB},
                {"interleaved_1f1b", PipelineSchedule::kInterleavedOneFOneB},
                {"zero_bubble", PipelineSchedule::kZeroBubble}});
    if (!v) return bad_value();
    space.schedules = {*v};
    return std::nullopt;
  }
  // recompute
  const auto v = named<RecomputeMode>(value, {{"none", RecomputeMode::kNone},
                                              {"selective", RecomputeMode::kSelective},
                                              {"full", RecomputeMode::kFull}});
  if (!v) return bad_value();
  space.recompute = {*v};
  return std::nullopt;
}

Result<HeadroomRequirement> parse_min_headroom(std::string_view text) {
  const std::string hint = "a size such as 4GiB, or a fraction of the GPU's memory such as 0.1";
  if (text.empty()) return std::vector<Problem>{{"--min-headroom", "needs a value", hint}};
  // A bare number: a fraction of the capacity.
  char* end = nullptr;
  const std::string s(text);
  const double number = std::strtod(s.c_str(), &end);
  if (end != s.c_str() && *end == '\0') {
    if (!(number >= 0 && number < 1)) {
      return std::vector<Problem>{
          {"--min-headroom",
           "a bare number is a fraction of the GPU's memory and must be in [0, 1), got " +
               quote_for_message(text),
           "for a size give its unit, e.g. " + s + "GiB"}};
    }
    HeadroomRequirement r;
    r.fraction = number;
    return r;
  }
  Result<Quantity> q = parse_quantity(text);
  if (!q.ok() || q.value().dimension != Dimension::kBytes || !(q.value().value >= 0) ||
      !std::isfinite(q.value().value)) {
    return std::vector<Problem>{
        {"--min-headroom", "not a size or a fraction: " + quote_for_message(text), hint}};
  }
  HeadroomRequirement r;
  r.bytes = q.value().value;
  return r;
}

}  // namespace podsim::scenarios
