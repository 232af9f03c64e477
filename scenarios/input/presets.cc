#include "scenarios/input/presets.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "scenarios/input/embedded_data.h"
#include "scenarios/input/json_text.h"

namespace podsim::scenarios {

using nlohmann::json;

namespace {

/// "/models/name..." built by appending (GCC 12 warns falsely, -Wrestrict,
/// on "literal" + std::string chains).
std::string category_path(std::string_view category, std::string_view rest = {}) {
  std::string path = "/";
  path += category;
  path += rest;
  return path;
}

}  // namespace

Result<PresetLibrary> PresetLibrary::from_texts(std::string_view models, std::string_view gpus,
                                                std::string_view clusters,
                                                std::string_view software) {
  std::vector<Problem> problems;
  auto data = std::make_shared<json>(json::object());
  const std::pair<std::string_view, std::string_view> files[] = {
      {"models", models}, {"gpus", gpus}, {"clusters", clusters}, {"software", software}};
  for (const auto& [category, text] : files) {
    Result<json> parsed = parse_json_text(text);
    if (!parsed.ok()) {
      for (Problem problem : parsed.problems()) {
        problem.path = category_path(category, problem.path);
        problems.push_back(std::move(problem));
      }
      continue;
    }
    if (!parsed.value().is_object()) {
      problems.push_back({category_path(category), "expected an object of name -> preset", ""});
      continue;
    }
    for (const auto& [name, preset] : parsed.value().items()) {
      if (!preset.is_object()) {
        problems.push_back({category_path(category, "/" + name), "a preset must be an object", ""});
      } else if (!preset.contains("source") || !preset["source"].is_string()) {
        problems.push_back({category_path(category, "/" + name),
                            "a preset needs a \"source\" string",
                            "say where its numbers come from"});
      }
    }
    (*data)[std::string(category)] = std::move(parsed.value());
  }
  if (!problems.empty()) return problems;
  return PresetLibrary(std::move(data));
}

namespace {

/// Natural order: digit runs compare as numbers ("megatron-3.6b" before
/// "megatron-18.4b"), then the plain byte order breaks ties.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    const bool digit_a = a[i] >= '0' && a[i] <= '9';
    const bool digit_b = b[j] >= '0' && b[j] <= '9';
    if (digit_a && digit_b) {
      size_t end_a = i;
      size_t end_b = j;
      while (end_a < a.size() && a[end_a] >= '0' && a[end_a] <= '9') ++end_a;
      while (end_b < b.size() && b[end_b] >= '0' && b[end_b] <= '9') ++end_b;
      const std::string_view run_a = std::string_view(a).substr(i, end_a - i);
      const std::string_view run_b = std::string_view(b).substr(j, end_b - j);
      const size_t trimmed_a = run_a.find_first_not_of('0');
      const size_t trimmed_b = run_b.find_first_not_of('0');
      const std::string_view na =
          trimmed_a == std::string_view::npos ? "" : run_a.substr(trimmed_a);
      const std::string_view nb =
          trimmed_b == std::string_view::npos ? "" : run_b.substr(trimmed_b);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = end_a;
      j = end_b;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j)) return (a.size() - i) < (b.size() - j);
  return a < b;
}

}  // namespace

std::vector<std::string> PresetLibrary::names(std::string_view category) const {
  std::vector<std::string> out;
  const auto it = data_->find(std::string(category));
  if (it == data_->end()) return out;
  for (const auto& [name, preset] : it->items()) out.push_back(name);
  std::sort(out.begin(), out.end(), natural_less);
  return out;
}

const json* PresetLibrary::find(std::string_view category, std::string_view name) const {
  const auto it = data_->find(std::string(category));
  if (it == data_->end()) return nullptr;
  const auto preset = it->find(std::string(name));
  return preset == it->end() ? nullptr : &*preset;
}

const PresetLibrary& builtin_presets() {
  static const PresetLibrary presets = [] {
    Result<PresetLibrary> parsed = PresetLibrary::from_texts(
        embedded_file("input/presets/models.json"), embedded_file("input/presets/gpus.json"),
        embedded_file("input/presets/clusters.json"), embedded_file("input/presets/software.json"));
    if (!parsed.ok()) {
      // The embedded data is part of the build; broken data is a bug.
      for (const Problem& problem : parsed.problems()) {
        std::fprintf(stderr, "podsim: embedded presets: %s\n", problem.to_string().c_str());
      }
      std::abort();
    }
    return std::move(parsed).value();
  }();
  return presets;
}

std::string_view default_scenario_text() { return embedded_file("examples/llama3-405b-16k.json"); }

}  // namespace podsim::scenarios
