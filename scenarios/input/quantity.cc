#include "scenarios/input/quantity.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <system_error>

#include "scenarios/input/suggest.h"
#include "sim/format_fixed.h"

namespace podsim::scenarios {

std::string_view dimension_name(Dimension dimension) {
  switch (dimension) {
    case Dimension::kNone:
      return "a plain number";
    case Dimension::kBytes:
      return "a size";
    case Dimension::kSeconds:
      return "a time";
    case Dimension::kBytesPerSecond:
      return "a bandwidth";
    case Dimension::kFlopsPerSecond:
      return "a compute rate";
    case Dimension::kHertz:
      return "a frequency";
    case Dimension::kWatts:
      return "a power";
  }
  return "a plain number";
}

std::string_view dimension_unit(Dimension dimension) {
  switch (dimension) {
    case Dimension::kNone:
      return "";
    case Dimension::kBytes:
      return "bytes";
    case Dimension::kSeconds:
      return "s";
    case Dimension::kBytesPerSecond:
      return "bytes/s";
    case Dimension::kFlopsPerSecond:
      return "FLOP/s";
    case Dimension::kHertz:
      return "Hz";
    case Dimension::kWatts:
      return "W";
  }
  return "";
}

std::string_view dimension_example(Dimension dimension) {
  switch (dimension) {
    case Dimension::kNone:
      return "8";
    case Dimension::kBytes:
      return "80 GiB";
    case Dimension::kSeconds:
      return "2.5 us";
    case Dimension::kBytesPerSecond:
      return "400 Gb/s";
    case Dimension::kFlopsPerSecond:
      return "989 TFLOP/s";
    case Dimension::kHertz:
      return "1.83 GHz";
    case Dimension::kWatts:
      return "500 W";
  }
  return "8";
}

namespace {

std::vector<UnitSpelling> make_unit_spellings() {
  struct Prefix {
    std::string_view name;
    double factor;
  };
  // Decimal prefixes for bytes and bits; "k" and "K" both mean 1e3.
  const Prefix decimal[] = {{"", 1.0},  {"k", 1e3},  {"K", 1e3}, {"M", 1e6},
                            {"G", 1e9}, {"T", 1e12}, {"P", 1e15}};
  const double kib = 1024.0;
  const Prefix binary[] = {{"Ki", kib},
                           {"Mi", kib * kib},
                           {"Gi", kib * kib * kib},
                           {"Ti", kib * kib * kib * kib},
                           {"Pi", kib * kib * kib * kib * kib}};
  std::vector<std::pair<std::string, double>> sizes;  // spelling -> bytes
  for (const Prefix& p : decimal) sizes.emplace_back(std::string(p.name) + "B", p.factor);
  for (const Prefix& p : binary) sizes.emplace_back(std::string(p.name) + "B", p.factor);
  for (const Prefix& p : decimal) sizes.emplace_back(std::string(p.name) + "b", p.factor / 8.0);

  std::vector<UnitSpelling> units;
  for (const auto& [name, factor] : sizes) units.push_back({name, Dimension::kBytes, factor});
  for (const auto& [name, factor] : sizes) {
    units.push_back({name + "/s", Dimension::kBytesPerSecond, factor});
  }
  for (const Prefix& p : decimal) {
    units.push_back({std::string(p.name) + "bps", Dimension::kBytesPerSecond, p.factor / 8.0});
  }
  units.push_back({"ps", Dimension::kSeconds, 1e-12});
  units.push_back({"ns", Dimension::kSeconds, 1e-9});
  units.push_back({"us", Dimension::kSeconds, 1e-6});
  units.push_back({"\u00b5s", Dimension::kSeconds, 1e-6});  // micro sign
  units.push_back({"\u03bcs", Dimension::kSeconds, 1e-6});  // Greek mu
  units.push_back({"ms", Dimension::kSeconds, 1e-3});
  units.push_back({"s", Dimension::kSeconds, 1.0});
  // Run-level times (restarts, checkpoint intervals) are minutes and hours.
  units.push_back({"min", Dimension::kSeconds, 60.0});
  units.push_back({"h", Dimension::kSeconds, 3600.0});

  units.push_back({"FLOP/s", Dimension::kFlopsPerSecond, 1.0});
  units.push_back({"KFLOP/s", Dimension::kFlopsPerSecond, 1e3});
  units.push_back({"MFLOP/s", Dimension::kFlopsPerSecond, 1e6});
  units.push_back({"GFLOP/s", Dimension::kFlopsPerSecond, 1e9});
  units.push_back({"TFLOP/s", Dimension::kFlopsPerSecond, 1e12});
  units.push_back({"PFLOP/s", Dimension::kFlopsPerSecond, 1e15});
  units.push_back({"EFLOP/s", Dimension::kFlopsPerSecond, 1e18});
  units.push_back({"FLOPS", Dimension::kFlopsPerSecond, 1.0});
  units.push_back({"GFLOPS", Dimension::kFlopsPerSecond, 1e9});
  units.push_back({"TFLOPS", Dimension::kFlopsPerSecond, 1e12});
  units.push_back({"PFLOPS", Dimension::kFlopsPerSecond, 1e15});

  units.push_back({"Hz", Dimension::kHertz, 1.0});
  units.push_back({"kHz", Dimension::kHertz, 1e3});
  units.push_back({"MHz", Dimension::kHertz, 1e6});
  units.push_back({"GHz", Dimension::kHertz, 1e9});

  units.push_back({"W", Dimension::kWatts, 1.0});
  units.push_back({"kW", Dimension::kWatts, 1e3});
  return units;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

const std::vector<UnitSpelling>& unit_spellings() {
  static const std::vector<UnitSpelling> units = make_unit_spellings();
  return units;
}

Result<Quantity> parse_quantity(std::string_view text) {
  const std::string shown = quote_for_message(text);
  const std::string_view body = trim(text);
  if (body.empty()) {
    return std::vector<Problem>{{"", "empty string, expected a number with a unit", ""}};
  }
  double number = 0;
  const char* begin = body.data();
  const char* end = body.data() + body.size();
  const auto [ptr, ec] = std::from_chars(begin, end, number);
  if (ec == std::errc::result_out_of_range) {
    return std::vector<Problem>{{"", shown + ": the number is out of range", ""}};
  }
  if (ec != std::errc() || ptr == begin) {
    return std::vector<Problem>{
        {"", shown + " does not start with a number", "write a number and a unit, like '80 GiB'"}};
  }
  if (!std::isfinite(number)) {
    return std::vector<Problem>{{"", shown + " is not a finite number", ""}};
  }
  const std::string_view unit = trim(std::string_view(ptr, static_cast<size_t>(end - ptr)));
  if (unit.empty()) {
    return std::vector<Problem>{
        {"", shown + " has no unit",
         "give a plain JSON number in SI base units, or a number with a unit like '80 GiB'"}};
  }
  for (const UnitSpelling& spelling : unit_spellings()) {
    if (spelling.name == unit) return Quantity{number * spelling.to_base, spelling.dimension};
  }
  std::vector<std::string> names;
  for (const UnitSpelling& spelling : unit_spellings()) names.emplace_back(spelling.name);
  const std::string suggestion = closest_match(unit, names);
  return std::vector<Problem>{
      {"", shown + ": unknown unit " + quote_for_message(unit),
       suggestion.empty() ? "units: B, KB, KiB, GB, GiB, Gb, GB/s, Gb/s, Gbps, ns, us, ms, s, "
                            "TFLOP/s, GHz (see `podsim describe`)"
                          : "did you mean '" + suggestion + "'?"}};
}

std::string format_seconds(double seconds) {
  const double magnitude = std::fabs(seconds);
  if (magnitude >= 1.0 || magnitude == 0.0) return format_fixed(seconds, 2) + " s";
  if (magnitude >= 1e-3) return format_fixed(seconds * 1e3, 2) + " ms";
  return format_fixed(seconds * 1e6, 2) + " us";
}

std::string format_bytes(double bytes) {
  const double kib = 1024.0;
  const double magnitude = std::fabs(bytes);
  if (magnitude >= kib * kib * kib * kib)
    return format_fixed(bytes / (kib * kib * kib * kib), 2) + " TiB";
  if (magnitude >= kib * kib * kib) return format_fixed(bytes / (kib * kib * kib), 1) + " GiB";
  if (magnitude >= kib * kib) return format_fixed(bytes / (kib * kib), 1) + " MiB";
  if (magnitude >= kib) return format_fixed(bytes / kib, 1) + " KiB";
  return format_fixed(bytes, 0) + " B";
}

std::string format_flops_rate(double flops_per_s) {
  const double magnitude = std::fabs(flops_per_s);
  if (magnitude >= 1e15) return format_fixed(flops_per_s / 1e15, 2) + " PFLOP/s";
  if (magnitude >= 100e12) return format_fixed(flops_per_s / 1e12, 0) + " TFLOP/s";
  if (magnitude >= 1e12) return format_fixed(flops_per_s / 1e12, 1) + " TFLOP/s";
  return format_fixed(flops_per_s / 1e9, 1) + " GFLOP/s";
}

std::string format_bandwidth(double bytes_per_s) {
  const double magnitude = std::fabs(bytes_per_s);
  if (magnitude >= 1e12) return format_fixed(bytes_per_s / 1e12, 2) + " TB/s";
  if (magnitude >= 100e9) return format_fixed(bytes_per_s / 1e9, 0) + " GB/s";
  if (magnitude >= 1e9) return format_fixed(bytes_per_s / 1e9, 1) + " GB/s";
  return format_fixed(bytes_per_s / 1e6, 1) + " MB/s";
}

std::string format_percent(double fraction) { return format_fixed(fraction * 100.0, 1) + "%"; }

std::string format_number(double value) {
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15) {
    return format_fixed(value, 0);
  }
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.6g", value);
  return buffer;
}

}  // namespace podsim::scenarios
