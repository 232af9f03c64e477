// `podsim describe`: the declaration tables (schema.cc) as aligned text or
// one JSON document, then the software presets' mechanisms
// (software_describe.cc).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scenarios/input/presets.h"
#include "scenarios/input/quantity.h"
#include "scenarios/input/schema.h"
#include "scenarios/input/suggest.h"

namespace podsim::scenarios {

namespace {

std::string unit_text(const KeyDecl& decl) {
  if (decl.kind == KeyKind::kQuantity) return std::string(dimension_unit(decl.dimension));
  if (decl.path.ends_with("price_per_gpu_hour")) return "$";
  if (decl.path.ends_with("_s")) return "s";
  if (decl.path.ends_with("_gib")) return "GiB";
  return "";
}

void describe_table(std::string& out, std::string_view title, std::span<const KeyDecl> table) {
  struct Row {
    std::string key, type, unit, fallback, allowed, doc;
  };
  std::vector<Row> rows;
  rows.push_back({"KEY", "TYPE", "UNIT", "DEFAULT", "ALLOWED", "MEANING"});
  for (const KeyDecl& decl : table) {
    rows.push_back({decl.path.empty() ? "/" : std::string(decl.path), std::string(kind_text(decl)),
                    unit_text(decl), default_text(decl), allowed_text(decl),
                    std::string(decl.doc)});
  }
  size_t widths[4] = {0, 0, 0, 0};
  for (const Row& row : rows) {
    widths[0] = std::max(widths[0], row.key.size());
    widths[1] = std::max(widths[1], row.type.size());
    widths[2] = std::max(widths[2], row.unit.size());
    widths[3] = std::max(widths[3], std::min<size_t>(row.fallback.size(), 40));
  }
  out += title;
  out += "\n\n";
  for (const Row& row : rows) {
    std::string line;
    const std::string* cells[4] = {&row.key, &row.type, &row.unit, &row.fallback};
    for (size_t i = 0; i < 4; ++i) {
      line += *cells[i];
      line += std::string(widths[i] + 2 - std::min(widths[i], cells[i]->size()), ' ');
    }
    line += row.doc;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (!row.allowed.empty() && &row != &rows.front()) {
      out += std::string(widths[0] + 2, ' ') + "allowed: " + row.allowed + "\n";
    }
  }
}

}  // namespace

std::string describe_text() {
  std::string out;
  describe_table(out,
                 "Scenario keys (scenario-format.md; quantities take SI numbers or unit strings)",
                 scenario_keys());
  out += "\n";
  describe_table(out, "Validation-case file keys (podsim validate FILE)", validation_keys());
  out += "\nUnits: ";
  std::vector<std::string> names;
  for (const UnitSpelling& unit : unit_spellings()) names.push_back(unit.name);
  out += join_list(names, 1000);
  out += "\n(b = bits, B = bytes; KiB..PiB are binary; bandwidths are per direction)\n\n";
  out += software_presets_text(builtin_presets());
  return out;
}

std::string describe_json_text() {
  nlohmann::json out;
  const auto table_json = [](std::span<const KeyDecl> table) {
    nlohmann::json keys = nlohmann::json::array();
    for (const KeyDecl& decl : table) {
      nlohmann::json key;
      key["path"] = decl.path.empty() ? "/" : std::string(decl.path);
      key["type"] = std::string(kind_text(decl));
      key["unit"] = unit_text(decl);
      key["required"] = decl.presence == Presence::kRequired;
      key["default"] = default_text(decl);
      key["allowed"] = allowed_text(decl);
      key["doc"] = std::string(decl.doc);
      keys.push_back(std::move(key));
    }
    return keys;
  };
  out["scenario"] = table_json(scenario_keys());
  out["validation"] = table_json(validation_keys());
  nlohmann::json units = nlohmann::json::array();
  for (const UnitSpelling& unit : unit_spellings()) {
    units.push_back({{"unit", unit.name},
                     {"dimension", std::string(dimension_unit(unit.dimension))},
                     {"factor", unit.to_base}});
  }
  out["units"] = std::move(units);
  out["software_presets"] = software_presets_json(builtin_presets());
  return out.dump(2) + "\n";
}

}  // namespace podsim::scenarios
