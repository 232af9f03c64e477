#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "calibration/datasheet.h"
#include "calibration/fit.h"
#include "calibration/measurements.h"

namespace podsim::calibration {

/// The "schema" field every profile carries, and the version this podsim writes
/// and reads (calibration/profiles/SCHEMA.md).
inline constexpr std::string_view kProfileSchema = "podsim.calibration.profile";
inline constexpr int kProfileSchemaVersion = 1;

/// A profile that cannot be read: the message names the file, the JSON path
/// and the fix.
class ProfileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What one GPU measured like: provenance, every raw sample, and fits of the
/// documented model forms (calibration/profiles/SCHEMA.md).
struct Profile {
  int schema_version = kProfileSchemaVersion;
  /// provenance, series (every sample), scalars and errors of the run.
  RawMeasurements raw;
  /// FLOP/s that GEMM and attention efficiencies are fractions of, by format
  /// ("bf16", "fp16", "tf32", "fp8"), and where they came from.
  std::map<std::string, double> reference_peak_flops_per_s;
  std::string reference_peak_source;
  /// Named numbers derived from the raw data ("l2.capacity_bytes", ...).
  std::map<std::string, double> derived;
  /// Fits by name ("hbm.triad", "gemm.bf16", "attention.fwd", ...).
  std::map<std::string, Fit> fits;
  /// Problems met while measuring or fitting (raw.errors plus fit failures).
  /// Empty: everything that ran was measured, checked and fitted (what this
  /// machine cannot run is in raw.skipped, not here).
  std::vector<std::string> errors;

  const Fit* find_fit(const std::string& name) const;
  std::optional<double> find_derived(const std::string& name) const;
};

/// Turns raw measurements into a profile: runs the fit each series asks for
/// (Series::attributes["fit"], see SCHEMA.md) on the points whose check
/// passed, and derives the named numbers. Reference peaks are the datasheet's
/// when one is given, else the measured tensor peaks. A fit that fails is
/// recorded in `errors`, never thrown.
Profile build_profile(const RawMeasurements& raw, const std::optional<Datasheet>& datasheet);

/// The profile as JSON text (2-space indent, keys sorted: same profile, same bytes).
std::string profile_to_json(const Profile& profile);
/// Parses and checks a profile; `origin` (a path) prefixes every error.
/// Throws ProfileError naming the JSON path and the fix.
Profile profile_from_json(std::string_view text, std::string_view origin);

/// Writes the profile to `path` (via a temporary file and a rename, so a
/// reader never sees half a file). Throws ProfileError when it cannot.
void write_profile(const Profile& profile, const std::string& path);
/// Reads and checks the profile at `path`. Throws ProfileError.
Profile read_profile(const std::string& path);

}  // namespace podsim::calibration
