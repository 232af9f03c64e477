#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace podsim::scenarios {

// The run-level parts of a scenario: what its cluster's parts fail at, where
// it saves checkpoints, and the whole training run. The step simulation never
// reads them; scenarios/run/ does. Every value is filled from the scenario or
// from the declared defaults (schema.cc, `podsim describe`).

/// Failures that stop a synchronous job, per 1,000 days of runtime of each
/// part (/cluster/reliability). A job's rate is the sum over its parts.
struct ReliabilitySpec {
  double gpu_per_1000_gpu_days = 0;    ///< faulty GPU, SRAM, GPU system processor, thermal
  double hbm_per_1000_gpu_days = 0;    ///< GPU memory
  double sdc_per_1000_gpu_days = 0;    ///< silent data corruption found and stopped for
  double host_per_1000_node_days = 0;  ///< CPU, DRAM, SSD, power supply, chassis, IO board
  double host_maintenance_per_1000_node_days = 0;  ///< unplanned maintenance of one host
  double software_per_1000_node_days = 0;  ///< software bugs, dependencies, NCCL watchdog timeouts
  double nic_per_1000_nic_days = 0;
  double network_per_1000_nic_days = 0;  ///< switches and cables, counted per NIC link
  double planned_per_day = 0;            ///< planned interruptions of the job as a whole
  std::string source;
};

/// Where checkpoints go (/cluster/storage), bytes per second.
struct StorageSpec {
  /// Sustained write bandwidth a job's checkpoints get; nullopt: in
  /// proportion to the cluster's nodes (scenarios/run/run_model.cc).
  std::optional<double> write_bytes_per_s;
  std::optional<double> read_bytes_per_s;  ///< nullopt = the write bandwidth
  double host_copy_bytes_per_s = 0;        ///< one GPU's copy of its state to pinned host memory
};

enum class SaveMode : uint8_t {
  kSync,   ///< training waits until the checkpoint is written
  kAsync,  ///< training waits for the copy to host memory; the write follows
};

enum class IntervalRule : uint8_t { kDaly, kYoung, kSteps, kTime };

/// The whole training run (/run).
struct RunSpec {
  /// Tokens to train; none when the scenario has no /run (then `run` reports
  /// one step, and `sweep --tokens` gives the budget).
  std::optional<double> tokens;
  int64_t samples = 0;
  uint64_t seed = 0;
  SaveMode save_mode = SaveMode::kAsync;
  IntervalRule interval_rule = IntervalRule::kDaly;
  int64_t interval_steps = 0;          ///< kSteps
  double interval_s = 0;               ///< kTime
  double restart_overhead_s = 0;       ///< failure -> training again, checkpoint load excluded
  double requeue_s = 0;                ///< waiting for replacement nodes or the scheduler
  double straggler_node_fraction = 0;  ///< nodes with a slow GPU at any time
  double straggler_gpu_slowdown = 1;   ///< that GPU's compute takes this many times as long
  double straggler_mean_duration_s = 0;
};

}  // namespace podsim::scenarios
