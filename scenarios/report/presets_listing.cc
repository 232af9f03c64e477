#include "scenarios/report/presets_listing.h"

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/input/quantity.h"
#include "scenarios/report/text_table.h"

namespace podsim::scenarios {

using nlohmann::json;

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
  out += format_columns(rows, "LLRRRRL") + "\n";

  rows.clear();
  rows.push_back({"SOFTWARE", "attention", "element-wise", "data parallel", "stands for"});
  for (const std::string& name : presets.names("software")) {
    const json& s = *presets.find("software", name);
    const std::string source = string_value(s, "source");
    rows.push_back({name, string_value(s["attention"], "kernel"),
                    s["elementwise"].value("compiled", false)
                        ? "compiled"
                        : string_value(s["elementwise"], "norm"),
                    string_value(s["data_parallel"], "param_gather"),
                    source.size() > 60 ? source.substr(0, 57) + "..." : source});
  }
  out += format_columns(rows, "L");
  out +=
      "\nEach preset's source: podsim presets --json; software mechanisms and their sources: "
      "podsim describe\n";
  return out;
}

std::string presets_json_text(const PresetLibrary& presets) { return presets.all().dump(2) + "\n"; }

}  // namespace podsim::scenarios
