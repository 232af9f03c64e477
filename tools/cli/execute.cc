// podsim execute SCENARIO [--layers N] [--json] [--report FILE] [--profile FILE]
//                          [--check] [--dry-run] [--passes N] [--warmup N] [--device N]
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <ostream>

#include "calibration/execute_report.h"
#include "hwmodels/gpu_model.h"
#include "scenarios/execute/execute_plan.h"
#include "scenarios/input/reader.h"
#include "scenarios/input/schema.h"
#include "scenarios/step/profile_fit.h"
#include "tools/cli/commands.h"
#include "tools/cli/cuda_module.h"

namespace podsim::cli {

namespace po = boost::program_options;

namespace {

constexpr int kExitChecksFailed = 4;
/// Timed or warm-up passes past this are a typo (each is a whole forward
/// and backward of the GPU's layers).
constexpr int kMaxPasses = 10000;

constexpr const char* kUsage =
    "podsim execute SCENARIO [--layers N] [--json] [--report FILE] [--check] [--dry-run] "
    "[--passes N] [--warmup N] [--device N] [--profile FILE]";

constexpr const char* kAbout =
    "Runs one GPU's share of the scenario for real on this machine's GPU: its pipeline stage's "
    "transformer layers, sharded as the plan shards them (TP/SP heads and MLP columns, "
    "micro-batch, "
    "sequence), forward, recompute and backward in bf16 (cuBLASLt GEMMs, podsim's flash-attention "
    "kernels, RMSNorm, rotary, SwiGLU, residuals) and the AdamW step over the rank's parameters, "
    "and prints, op by op and in total, the measured time beside the time podsim predicts for the "
    "same ops. Every run first checks the GPU's results against a double-precision host reference "
    "at small shapes, then samples every GEMM and attention at the real shapes. With 2+ GPUs the "
    "layer's tensor-parallel collectives are timed through NCCL. Dense Llama-style models only "
    "(RMSNorm, SwiGLU, 128-dim heads), no context parallelism.\n"
    "Exit status: 0 ran, every check passed; 4 ran, but a check failed or something could not run "
    "(see 'FAILED' and 'errors'); 3 no CUDA device; 2 bad input or a scenario the executor cannot "
    "run; 1 internal error.";

struct Options {
  std::string file;
  std::optional<int64_t> layers;
  bool json = false;
  std::string report;
  bool check = false;
  bool dry_run = false;
  int passes = 5;
  int warmup = 2;
  int device = 0;
};

int usage_error(CommandIo& io, const std::string& message) {
  io.err << "podsim execute: " << message << "\nusage: " << kUsage
         << "\n(podsim execute --help for more)\n";
  return kExitBadInput;
}

void write_report_file(const std::string& path, const std::string& json) {
  std::ofstream out(path);
  out << json;
  if (!out) throw std::runtime_error("cannot write the report to " + path);
}

int print_report(const calibration::ExecuteReport& report, const Options& o, CommandIo& io) {
  const std::string json = calibration::execute_report_json(report);
  io.out << (o.json ? json : calibration::format_execute_text(report));
  if (!o.report.empty()) {
    try {
      write_report_file(o.report, json);
    } catch (const std::exception& e) {
      io.err << "podsim execute: " << e.what() << "\n";
      return kExitInternal;
    }
  }
  return -1;
}

}  // namespace

int execute_command(const std::vector<std::string>& args, CommandIo& io) {
  po::options_description visible;
  visible.add_options()(
      "layers", po::value<int64_t>()->value_name("N"),
      "transformer layers per pass (default: the GPU's share, its pipeline stage's layers)")(
      "json", "print the report as one JSON object")(
      "report", po::value<std::string>()->value_name("FILE"), "also write the JSON report to FILE")(
      "check", "run only the correctness check at small shapes (no timing)")(
      "dry-run", "print the ops and their predictions; needs no GPU")(
      "passes", po::value<int>()->value_name("N")->default_value(5), "timed passes")(
      "warmup", po::value<int>()->value_name("N")->default_value(2), "warm-up passes")(
      "device", po::value<int>()->value_name("N")->default_value(0), "the CUDA device to run on")(
      "profile", po::value<std::string>()->value_name("FILE"),
      "predict with the efficiency curves fitted to this calibration profile (podsim calibrate) "
      "instead of the datasheet ones");
  po::variables_map values;
  if (const std::optional<int> status =
          parse_file_arguments("execute", kUsage, kAbout, visible, args, values, io)) {
    return *status;
  }
  Options o;
  if (values.count("file") == 0) return usage_error(io, "a scenario file is needed");
  o.file = values["file"].as<std::string>();
  if (values.count("layers") != 0) {
    o.layers = values["layers"].as<int64_t>();
    // The range a scenario's /model/layers has: past it, counts and times overflow.
    const auto max_layers = static_cast<int64_t>(
        scenarios::find_decl(scenarios::scenario_keys(), "/model/layers")->max);
    if (*o.layers < 1 || *o.layers > max_layers) {
      return usage_error(
          io, "--layers needs a number of layers from 1 to " + std::to_string(max_layers));
    }
  }
  o.json = values.count("json") != 0;
  o.check = values.count("check") != 0;
  o.dry_run = values.count("dry-run") != 0;
  o.passes = values["passes"].as<int>();
  o.warmup = values["warmup"].as<int>();
  o.device = values["device"].as<int>();
  if (o.passes < 1 || o.passes > kMaxPasses) {
    return usage_error(io, "--passes needs a number from 1 to " + std::to_string(kMaxPasses));
  }
  if (o.warmup < 0 || o.warmup > kMaxPasses) {
    return usage_error(io, "--warmup needs a number from 0 to " + std::to_string(kMaxPasses));
  }
  if (o.device < 0) return usage_error(io, "--device needs a device number >= 0");
  if (o.check && o.dry_run) return usage_error(io, "--check needs a GPU; --dry-run uses none");
  if (values.count("report") != 0) {
    o.report = values["report"].as<std::string>();
    const std::filesystem::path dir = std::filesystem::path(o.report).parent_path();
    std::error_code ec;
    if (o.report.empty() || (!dir.empty() && !std::filesystem::is_directory(dir, ec))) {
      return usage_error(
          io, "cannot write the report to '" + o.report + "': its directory does not exist");
    }
  }
  const std::string profile =
      values.count("profile") != 0 ? values["profile"].as<std::string>() : std::string();

  const scenarios::Result<scenarios::ScenarioSpec> spec = scenarios::read_scenario_file(o.file);
  if (!spec.ok()) {
    print_problems(io.err, o.file, spec.problems());
    return kExitBadInput;
  }
  print_input_warnings(io.err, o.file, spec.value().input_warnings);
  const scenarios::Result<scenarios::CalibratedHardware> gpu =
      scenarios::calibrated_hardware(spec.value(), profile);
  if (!gpu.ok()) {
    print_problems(io.err, o.file, gpu.problems());
    return kExitBadInput;
  }
  scenarios::ScenarioSpec measured_spec = spec.value();
  measured_spec.cluster = gpu.value().cluster;  // the profile's scale-up efficiency, if any
  scenarios::Result<scenarios::ExecuteSetup> setup =
      scenarios::prepare_execute(measured_spec, {o.layers}, gpu.value().gpu);
  if (!setup.ok()) {
    print_problems(io.err, o.file, setup.problems());
    return kExitBadInput;
  }
  calibration::ExecPlan& plan = setup.value().plan;
  plan.prediction_source = gpu.value().source;
  for (const std::string& note : gpu.value().notes) plan.notes.push_back("profile fit: " + note);

  if (o.dry_run) {
    const int status = print_report(calibration::compare(plan, nullptr), o, io);
    return status >= 0 ? status : kExitOk;
  }
  std::string why_not;
  const calibration::gpu::CudaModule* cuda = cuda_module(why_not);
  if (cuda == nullptr) {
    io.err << "no CUDA device: " << why_not << "\n";
    return kExitNoDevice;
  }
  const std::string reason = cuda->device_unavailable_reason();
  if (!reason.empty()) {
    io.err << "no CUDA device: " << reason << "\n";
    return kExitNoDevice;
  }
  calibration::gpu::ExecuteRunOptions run;
  run.device = o.device;
  run.warmup_passes = o.warmup;
  run.timed_passes = o.passes;
  run.check_only = o.check;
  const auto start = std::chrono::steady_clock::now();
  run.progress = [&io, start](const std::string& line) {
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char stamp[32];
    std::snprintf(stamp, sizeof stamp, "[%6.1f s] ", t);
    io.err << stamp << line << "\n";
  };
  calibration::ExecMeasurement measured;
  try {
    measured = cuda->run_execute(plan, setup.value().check, run);
  } catch (const calibration::gpu::NoDeviceError& e) {
    io.err << "no CUDA device: " << e.what() << "\n";
    return kExitNoDevice;
  } catch (const std::exception& e) {
    io.err << "podsim execute: " << e.what() << "\n";
    return kExitInternal;
  }
  const calibration::ExecuteReport report = calibration::compare(plan, &measured);
  const int status = print_report(report, o, io);
  if (status >= 0) return status;
  return report.all_checks_passed() ? kExitOk : kExitChecksFailed;
}

}  // namespace podsim::cli
