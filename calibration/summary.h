#pragma once

#include <optional>
#include <string>
#include <vector>

#include "calibration/datasheet.h"
#include "calibration/profile.h"

namespace podsim::calibration {

/// One line of the calibration summary: a measured number beside the
/// datasheet's (0 when the datasheet has none).
struct SummaryRow {
  std::string quantity;
  std::string unit;      ///< "TFLOP/s", "GB/s", "MiB", "us", "GHz", "%"
  double measured = 0;   ///< in `unit`
  double datasheet = 0;  ///< in `unit`; 0 = none
};

/// The headline numbers of a profile, in a fixed order; rows whose
/// measurement is missing are left out.
std::vector<SummaryRow> summary_rows(const Profile& profile,
                                     const std::optional<Datasheet>& datasheet);

/// The rows as an aligned text table (quantity, measured, datasheet,
/// measured/datasheet), followed by the fits' residuals and any errors.
std::string format_summary(const Profile& profile, const std::optional<Datasheet>& datasheet);

}  // namespace podsim::calibration
