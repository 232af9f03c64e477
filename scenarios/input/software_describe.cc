// `podsim describe`'s software section: every software preset, every
// mechanism, its value and where the value comes from.
#include <nlohmann/json.hpp>
#include <string>

#include "scenarios/input/presets.h"
#include "scenarios/input/schema.h"

namespace podsim::scenarios {

namespace {

using nlohmann::json;

std::string value_text(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

/// Calls `visit(key, value, source)` for every mechanism of a software
/// preset, in the preset's order: "attention.kernel", "te", "TE ...".
template <typename Visit>
void for_each_mechanism(const json& preset, Visit visit) {
  for (const auto& [group, mechanisms] : preset.items()) {
    if (!mechanisms.is_object()) continue;
    const json sources = mechanisms.value("sources", json::object());
    for (const auto& [key, value] : mechanisms.items()) {
      if (key == "sources") continue;
      visit(group + "." + key, value_text(value), sources.value(key, std::string()));
    }
  }
}

}  // namespace

std::string software_presets_text(const PresetLibrary& presets) {
  std::string out = "Software presets (key = value: where the value comes from)\n";
  for (const std::string& name : presets.names("software")) {
    const json& preset = *presets.find("software", name);
    out += "\n" + name + ": " + preset.value("source", std::string()) + "\n";
    for_each_mechanism(
        preset, [&](const std::string& key, const std::string& value, const std::string& source) {
          out += "  " + key + " = " + value + ": " + source + "\n";
        });
  }
  return out;
}

json software_presets_json(const PresetLibrary& presets) {
  json out = json::object();
  for (const std::string& name : presets.names("software")) {
    const json& preset = *presets.find("software", name);
    json mechanisms = json::array();
    for_each_mechanism(
        preset, [&](const std::string& key, const std::string& value, const std::string& source) {
          mechanisms.push_back({{"key", key}, {"value", value}, {"source", source}});
        });
    out[name] = {{"source", preset.value("source", std::string())},
                 {"mechanisms", std::move(mechanisms)}};
  }
  return out;
}

}  // namespace podsim::scenarios
