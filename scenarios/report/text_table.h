#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace podsim::scenarios {

/// Rows of cells as aligned text columns, two spaces apart, one line per
/// row without trailing spaces. `align` holds 'L' or 'R' per column; columns
/// past its end are right-aligned (numbers, mostly).
std::string format_columns(const std::vector<std::vector<std::string>>& rows,
                           std::string_view align);

}  // namespace podsim::scenarios
