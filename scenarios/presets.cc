#include "scenarios/presets.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "scenarios/embedded_data.h"
#include "scenarios/json_text.h"
#include "scenarios/quantity.h"
#include "scenarios/text_table.h"

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
                                                std::string_view clusters) {
  std::vector<Problem> problems;
  auto data = std::make_shared<json>(json::object());
  const std::pair<std::string_view, std::string_view> files[] = {
      {"models", models}, {"gpus", gpus}, {"clusters", clusters}};
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
        embedded_file("presets/models.json"), embedded_file("presets/gpus.json"),
        embedded_file("presets/clusters.json"));
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

namespace {

/// A number or unit string of a preset, in SI base units (0 if unreadable:
/// the listing is informational; the reader checks presets for real).
double si_value(const json& object, std::initializer_list<std::string_view> path) {
  const json* node = &object;
  for (const std::string_view key : path) {
    if (!node->is_object()) return 0;
    const auto it = node->find(std::string(key));
    if (it == node->end()) return 0;
    node = &*it;
  }
  if (node->is_number()) return node->get<double>();
  if (node->is_string()) {
    const Result<Quantity> quantity = parse_quantity(node->get<std::string>());
    return quantity.ok() ? quantity.value().value : 0;
  }
  return 0;
}

std::string string_value(const json& object, std::string_view key) {
  const auto it = object.find(std::string(key));
  if (it == object.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return format_number(it->get<double>());
  return "";
}

}  // namespace

std::string presets_text(const PresetLibrary& presets) {
  std::string out;
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"MODEL", "layers", "hidden", "ffn", "heads", "kv", "vocab", "mlp", "experts"});
  for (const std::string& name : presets.names("models")) {
    const json& m = *presets.find("models", name);
    std::string experts = "-";
    if (m.contains("moe")) {
      experts = string_value(m["moe"], "experts") + " top-" + string_value(m["moe"], "top_k");
    }
    rows.push_back({name, string_value(m, "layers"), string_value(m, "hidden"),
                    string_value(m, "ffn_hidden"), string_value(m, "heads"),
                    m.contains("kv_heads") ? string_value(m, "kv_heads") : string_value(m, "heads"),
                    string_value(m, "vocab"), string_value(m, "mlp"), experts});
  }
  out += format_columns(rows, "L") + "\n";

  rows.clear();
  rows.push_back({"GPU", "bf16", "fp8", "HBM", "HBM bw", "L2", "SMs", "clock", "NVLS"});
  for (const std::string& name : presets.names("gpus")) {
    const json& g = *presets.find("gpus", name);
    const double fp8 = si_value(g, {"peak_flops", "fp8"});
    rows.push_back({name, format_flops_rate(si_value(g, {"peak_flops", "bf16"})),
                    fp8 > 0 ? format_flops_rate(fp8) : "-",
                    format_bytes(si_value(g, {"hbm", "capacity"})),
                    format_bandwidth(si_value(g, {"hbm", "bandwidth"})),
                    format_bytes(si_value(g, {"l2", "capacity"})), string_value(g, "sms"),
                    format_number(si_value(g, {"clock"}) / 1e6) + " MHz",
                    g.value("has_nvls", false) ? "yes" : "no"});
  }
  out += format_columns(rows, "L") + "\n";

  rows.clear();
  rows.push_back({"CLUSTER", "gpu", "nodes", "GPUs", "scale-up", "NICs x bw", "tiers"});
  for (const std::string& name : presets.names("clusters")) {
    const json& c = *presets.find("clusters", name);
    const double nodes = si_value(c, {"nodes"});
    const double per_node = si_value(c, {"gpus_per_node"});
    std::string tiers;
    const json scale_out = c.value("scale_out", json::object());
    for (const json& tier : scale_out.value("tiers", json::array())) {
      if (!tiers.empty()) tiers += " > ";
      tiers += string_value(tier, "name");
      const double over = si_value(tier, {"oversubscription"});
      if (over != 0 && over != 1.0) tiers += " 1:" + format_number(over);
    }
    const double nic_gbit = si_value(c, {"scale_out", "nic_bandwidth"}) * 8 / 1e9;
    rows.push_back(
        {name, string_value(c, "gpu"), format_number(nodes), format_number(nodes * per_node),
         format_bandwidth(si_value(c, {"scale_up", "bandwidth"})),
         string_value(scale_out, "nics_per_node") + " x " + format_number(nic_gbit) + " Gb/s",
         tiers});
  }
  out += format_columns(rows, "LLRRRRL");
  out += "\nEach preset's source: podsim presets --json\n";
  return out;
}

std::string presets_json_text(const PresetLibrary& presets) { return presets.all().dump(2) + "\n"; }

}  // namespace podsim::scenarios
