#include "tools/cli/calibrate.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#include "calibration/datasheet.h"
#include "calibration/profile.h"
#include "calibration/summary.h"
#include "tools/cli/cuda_module.h"

#ifndef PODSIM_VERSION
#define PODSIM_VERSION "unknown"
#endif

namespace podsim::tools {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoDevice = 3;
constexpr int kExitProblems = 4;

constexpr const char* kUsage =
    "usage: podsim calibrate [--out FILE] [--quick] [--json] [--device N]\n"
    "  Measures this machine's GPU with CUDA microbenchmarks (HBM, L2, FP32, tensor cores,\n"
    "  cuBLASLt GEMMs, attention, memory-bound layers, launches, host copies, and peer copies\n"
    "  and NCCL collectives with 2+ GPUs), fits the model forms of calibration/profiles/SCHEMA.md\n"
    "  and writes the profile. Takes under 3 minutes on one H200 (--quick: about a third).\n"
    "  --out FILE   where to write the profile (default: podsim-profile.json)\n"
    "  --quick      reduced sweeps\n"
    "  --json       print the profile on standard output (the summary then goes to standard "
    "error)\n"
    "  --device N   the CUDA device to measure (default 0)\n"
    "Exit status: 0 written; 4 written, but some benchmarks failed (see 'problem:' lines);\n"
    "3 no CUDA device; 2 bad usage; 1 the profile could not be written.\n";

struct Options {
  std::string out = "podsim-profile.json";
  bool quick = false;
  bool json = false;
  int device = 0;
};

// Returns -1 when parsing succeeded, else the exit status to return.
int parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value = [&](std::string_view name) -> const char* {
      if (i + 1 >= argc) {
        std::cerr << "podsim calibrate: " << name << " needs a value\n" << kUsage;
        return nullptr;
      }
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return kExitOk;
    } else if (arg == "--quick") {
      o.quick = true;
    } else if (arg == "--json") {
      o.json = true;
    } else if (arg == "--out") {
      const char* v = value(arg);
      if (v == nullptr) return kExitUsage;
      o.out = v;
    } else if (arg == "--device") {
      const char* v = value(arg);
      if (v == nullptr) return kExitUsage;
      try {
        size_t used = 0;
        o.device = std::stoi(v, &used);
        if (used != std::string_view(v).size() || o.device < 0) throw std::invalid_argument(v);
      } catch (const std::exception&) {
        std::cerr << "podsim calibrate: --device needs a device number >= 0, got '" << v << "'\n";
        return kExitUsage;
      }
    } else {
      std::cerr << "podsim calibrate: unknown option '" << arg << "'\n" << kUsage;
      return kExitUsage;
    }
  }
  if (o.out.empty()) {
    std::cerr << "podsim calibrate: --out needs a file name\n";
    return kExitUsage;
  }
  // Found out now, not after minutes of measuring.
  const std::filesystem::path dir = std::filesystem::path(o.out).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
    std::cerr << "podsim calibrate: cannot write " << o.out << ": directory '" << dir.string()
              << "' does not exist; create it or pass another --out\n";
    return kExitUsage;
  }
  return -1;
}

}  // namespace

int run_calibrate_command(int argc, char** argv) {
  Options options;
  const int parsed = parse(argc, argv, options);
  if (parsed >= 0) return parsed;

  std::string why_not;
  const calibration::gpu::CudaModule* cuda = cli::cuda_module(why_not);
  if (cuda == nullptr) {
    std::cerr << "no CUDA device: " << why_not << "\n";
    return kExitNoDevice;
  }
  const std::string reason = cuda->device_unavailable_reason();
  if (!reason.empty()) {
    std::cerr << "no CUDA device: " << reason << "\n";
    return kExitNoDevice;
  }
  std::string command_line = "podsim";
  for (int i = 0; i < argc; ++i) command_line += std::string(" ") + argv[i];

  calibration::gpu::RunOptions run;
  run.quick = options.quick;
  run.device = options.device;
  run.command_line = command_line;
  run.podsim_version = PODSIM_VERSION;
  const auto start = std::chrono::steady_clock::now();
  run.progress = [start](const std::string& line) {
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char stamp[32];
    std::snprintf(stamp, sizeof stamp, "[%6.1f s] ", t);
    std::cerr << stamp << line << "\n";
  };
  std::optional<calibration::Datasheet> datasheet;
  std::string write_error;
  // Every section leaves a readable profile behind, so a run cut short still has one.
  run.checkpoint = [&](const calibration::RawMeasurements& raw) {
    if (!datasheet) datasheet = calibration::find_datasheet(raw.provenance.gpu_name);
    try {
      calibration::write_profile(calibration::build_profile(raw, datasheet), options.out);
    } catch (const std::exception& e) {
      write_error = e.what();
    }
  };

  calibration::Profile profile;
  try {
    const calibration::RawMeasurements raw = cuda->run_calibration(run);
    datasheet = calibration::find_datasheet(raw.provenance.gpu_name);
    profile = calibration::build_profile(raw, datasheet);
    calibration::write_profile(profile, options.out);
  } catch (const calibration::gpu::NoDeviceError& e) {
    std::cerr << "no CUDA device: " << e.what() << "\n";
    return kExitNoDevice;
  } catch (const std::exception& e) {
    std::cerr << "podsim calibrate: " << e.what() << "\n";
    if (!write_error.empty()) std::cerr << "podsim calibrate: " << write_error << "\n";
    return kExitFailure;
  }
  const std::string summary = calibration::format_summary(profile, datasheet);
  if (options.json) {
    std::cout << calibration::profile_to_json(profile);
    std::cerr << summary;
  } else {
    std::cout << summary;
  }
  std::cerr << "podsim calibrate: profile written to " << options.out << "\n";
  return profile.errors.empty() ? kExitOk : kExitProblems;
}

}  // namespace podsim::tools
