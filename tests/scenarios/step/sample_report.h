#pragma once

// A report with every field set to a distinct, recognisable value, for the
// tests of what reads and writes reports.
#include "scenarios/step/report.h"
#include "tests/scenarios/test_units.h"

namespace podsim::scenarios::testing {

inline Report sample_report() {
  Report r;
  r.scenario = "sample";
  r.step_time_s = 12.3456;
  r.tokens_per_s = 1.3e6;
  r.tokens_per_s_per_gpu = 81.25;
  r.model_tflops_per_gpu = 412.0;
  r.hardware_tflops_per_gpu = 430.5;
  r.mfu = 0.4164;
  r.hfu = 0.4351;
  r.flops_convention = "6 x parameters x tokens + causal attention";
  r.model_flops_per_step = 8.3e19;
  r.hardware_flops_per_step = 8.7e19;
  r.bubble_fraction = 0.0625;
  r.breakdown.compute = 9.5;
  r.breakdown.recompute = 0.25;
  r.breakdown.exposed_comm = {0.5, 0.125, 0.0625, 1.0, 0.03125};
  r.breakdown.bubble = 0.75;
  r.breakdown.optimizer = 0.1;
  // Adds up to 9.85 with a plan that offloads activations (host_copy_wait).
  r.breakdown.compute_split = {6.5, 1.5, 1.2, 0.25, 0.1, 0.25, 0.05};
  r.memory_capacity_bytes = 80 * kGiB;
  r.memory_peak_bytes = 61.2 * kGiB;
  r.memory_device_peak_bytes = 62.4 * kGiB;
  r.memory_counter = "reserved";
  r.memory_fits = true;
  // stage, weights, grads, optimizer, activations, temporaries, allocated,
  // reserved, outside the allocator, peak (= reserved), device.
  r.per_stage = {{0, 10 * kGiB, 5 * kGiB, 2 * kGiB, 40 * kGiB, 1.5 * kGiB, 58.6 * kGiB, 61.2 * kGiB,
                  1.2 * kGiB, 61.2 * kGiB, 62.4 * kGiB},
                 {1, 10 * kGiB, 5 * kGiB, 2 * kGiB, 30 * kGiB, 1.25 * kGiB, 48.4 * kGiB, 50 * kGiB,
                  1.2 * kGiB, 50 * kGiB, 51.2 * kGiB}};
  r.gpus = 16384;
  r.critical_stage = 0;
  r.simulation_mode = "symmetric";
  r.simulated_ranks = 16;
  r.engine_events = 123456789;
  r.fingerprint = 0x0123456789abcdefULL;
  r.hardware_source = "datasheet";
  r.warnings = {"first", "second"};
  return r;
}

}  // namespace podsim::scenarios::testing
