#pragma once

namespace podsim::tools {

/// `podsim calibrate [--out FILE] [--quick] [--json] [--device N]`: measures
/// the GPU with the CUDA microbenchmarks, writes the calibration profile and
/// prints a summary against the datasheet. argv[0] is "calibrate".
/// Exit status: 0 profile written, no problems (benchmarks this machine cannot
/// run are listed as skipped); 4 profile written but some benchmarks failed (listed); 3 no CUDA
/// device (or a build without CUDA); 2 bad usage; 1 the profile could not be written.
int run_calibrate_command(int argc, char** argv);

}  // namespace podsim::tools
