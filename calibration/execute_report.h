#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "calibration/execute_ops.h"

// Measured beside predicted: what `podsim execute` prints. The CUDA executor
// fills an ExecMeasurement; everything here is plain C++ and is tested on
// machines without a GPU by feeding synthetic measurements.

namespace podsim::calibration {

/// The measured instances of one op of the plan.
struct OpMeasurement {
  /// Seconds of every timed instance (CUDA events around it, after warm-up),
  /// over all timed passes and layers.
  std::vector<double> times_s;
  /// Why there are none ("1 GPU"); empty when measured.
  std::string not_measured;
};

/// One correctness check of the run.
struct CheckOutcome {
  std::string name;  ///< "layer forward x_out", "gemm qkv samples", ...
  bool passed = false;
  std::string detail;  ///< the errors found against their tolerance
};

/// Everything one execution measured.
struct ExecMeasurement {
  std::string device_name;  ///< cudaDeviceProp::name
  int device_count = 0;     ///< CUDA devices visible
  std::string software;     ///< driver, runtime, cuBLASLt, NCCL versions
  int warmup_passes = 0;
  int timed_passes = 0;
  /// Parallel to ExecPlan::layer_ops and ::optimizer_ops.
  std::vector<OpMeasurement> layer_ops;
  std::vector<OpMeasurement> optimizer_ops;
  /// Per timed pass: the forward, recompute and backward of the whole layer
  /// stack between two CUDA events (kernel gaps included, collectives not).
  std::vector<double> pass_s;
  /// Per timed pass: the optimizer step.
  std::vector<double> optimizer_pass_s;
  std::vector<CheckOutcome> checks;
  /// Problems that kept something from being measured.
  std::vector<std::string> errors;
};

/// One op, measured beside predicted.
struct OpRow {
  std::string name;
  OpClass op_class = OpClass::kGemm;
  ExecPhase phase = ExecPhase::kForward;
  std::string shape;                 ///< "8192x6144x4096", "b1 h32/8 s8192 d128", "268 MB"
  int64_t per_pass = 0;              ///< instances in one pass (count x layers; optimizer: count)
  std::optional<double> measured_s;  ///< median of the instances
  double predicted_s = 0;            ///< one instance
  std::optional<double> error;       ///< predicted / measured - 1
  std::string bound;                 ///< what set the prediction
  std::string status;                ///< "" or why not measured
  double model_bytes = 0;            ///< memory-bound: bytes the model counts
  double executor_bytes = 0;         ///< memory-bound: bytes the executor moves
};

/// Sums over the measured ops of one class, one pass.
struct ClassRow {
  OpClass op_class = OpClass::kGemm;
  int ops = 0;                 ///< ops of the class in the plan
  int measured_ops = 0;        ///< ... with a measurement
  double measured_s = 0;       ///< sum of median x per_pass over measured ops
  double predicted_s = 0;      ///< sum of predicted x per_pass over the same ops
  double predicted_all_s = 0;  ///< ... over every op of the class
  std::optional<double> error;
};

/// The whole comparison.
struct ExecuteReport {
  std::string scenario;
  std::string device;  ///< the GPU that ran it, or "" (dry run)
  int device_count = 0;
  std::string software;
  std::string predicted_gpu;
  std::string prediction_source;
  std::string layer;  ///< one line describing the rank's layer
  int64_t layers = 0;
  int warmup_passes = 0;
  int timed_passes = 0;
  bool measured = false;  ///< false: a dry run (predictions only)

  std::vector<OpRow> ops;  ///< layer ops, then optimizer ops
  std::array<ClassRow, kOpClasses> classes{};

  /// Forward + recompute + backward compute of the stack, one pass.
  double predicted_pass_s = 0;
  std::optional<double> measured_pass_s;  ///< median of the event-timed passes
  std::optional<double> measured_ops_s;   ///< sum of the op medians
  std::optional<double> pass_error;       ///< predicted / measured pass - 1
  /// The same per layer (the acceptance number: within 10%).
  double predicted_layer_s = 0;
  std::optional<double> measured_layer_s;
  /// Every measured op of every class, summed (sum of op medians).
  std::optional<double> overall_error;
  std::optional<double> measured_optimizer_s;
  double predicted_optimizer_s = 0;

  std::vector<CheckOutcome> checks;
  std::vector<std::string> errors;
  std::vector<std::string> notes;

  /// Every check passed and nothing failed to run.
  bool all_checks_passed() const;
  /// The layer's forward+backward prediction is within `tolerance` of the
  /// measurement (false when not measured).
  bool layer_within(double tolerance) const;
};

/// Relative error of a prediction: predicted / measured - 1 (nullopt when
/// measured is not positive).
std::optional<double> relative_error(double predicted, double measured);

/// calibration::median (fit.h) of a measurement's samples, or nullopt when it
/// has none: a missing measurement is not a zero-second one.
std::optional<double> median_if_measured(const std::vector<double>& values);

/// Compares the plan's predictions with a measurement, or lays out the
/// predictions alone when `measurement` is null (a dry run). Throws
/// std::invalid_argument when the measurement's op lists do not match the plan's.
ExecuteReport compare(const ExecPlan& plan, const ExecMeasurement* measurement);

/// Aligned text: the op table, class totals, the per-layer verdict, checks.
std::string format_execute_text(const ExecuteReport& report);
/// One JSON object (keys sorted; times in seconds).
std::string execute_report_json(const ExecuteReport& report);

}  // namespace podsim::calibration
