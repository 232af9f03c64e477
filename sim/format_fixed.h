#pragma once

#include <cstdio>
#include <string>

namespace podsim {

/// `value` with `decimals` digits after the point, as printf's "%.*f" writes
/// it; the one plain fixed-point formatter of every layer's text output.
inline std::string format_fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

}  // namespace podsim
