#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/input/problem.h"

namespace podsim::scenarios {

/// The physical dimension of a scenario quantity. Values are always held in
/// SI base units: bytes, seconds, bytes/s, FLOP/s, Hz, W.
enum class Dimension : uint8_t {
  kNone,            ///< a plain number (count, ratio, dollars)
  kBytes,           ///< a size
  kSeconds,         ///< a time
  kBytesPerSecond,  ///< a bandwidth
  kFlopsPerSecond,  ///< a compute rate
  kHertz,           ///< a frequency
  kWatts,           ///< a power
};

/// "a size", "a bandwidth", ... for messages.
std::string_view dimension_name(Dimension dimension);
/// The SI base unit the value is held in: "bytes", "bytes/s", "FLOP/s", ...
std::string_view dimension_unit(Dimension dimension);
/// An example of a unit string of this dimension: "80 GiB", "400 Gb/s", ...
std::string_view dimension_example(Dimension dimension);

/// One accepted unit spelling and its factor to the SI base unit.
struct UnitSpelling {
  std::string name;
  Dimension dimension;
  double to_base;
};

/// Every accepted unit, in a fixed order (sizes, bandwidths, times, rates,
/// frequencies, powers). Bits are lower-case `b` (`Gb`, `Gb/s`, `Gbps`), bytes
/// upper-case `B` (`GB`, `GB/s`); `KiB`..`PiB` are binary.
const std::vector<UnitSpelling>& unit_spellings();

/// A number with a known dimension, in SI base units.
struct Quantity {
  double value = 0;
  Dimension dimension = Dimension::kNone;
};

/// Parses "80 GiB", "3.35 TB/s", "989 TFLOP/s", "2.5 us", "400 Gb/s" (space
/// optional) into SI base units. The problems it returns have an empty path
/// (the caller knows where the string was).
Result<Quantity> parse_quantity(std::string_view text);

/// Human-readable forms for reports, fixed formatting (same value, same text).
/// "12.34 s", "850.0 ms", "12.5 us"
std::string format_seconds(double seconds);
/// "61.2 GiB", "512.0 MiB" (binary units)
std::string format_bytes(double bytes);
/// "412 TFLOP/s", "1.98 PFLOP/s"
std::string format_flops_rate(double flops_per_s);
/// "450 GB/s", "50.0 GB/s" (decimal units)
std::string format_bandwidth(double bytes_per_s);
/// "41.3%"
std::string format_percent(double fraction);
/// A number with a short fixed format: integers as integers, else %.6g.
std::string format_number(double value);

}  // namespace podsim::scenarios
