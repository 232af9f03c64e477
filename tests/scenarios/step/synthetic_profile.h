#pragma once

// A calibration profile of a GPU that behaves exactly like hwmodels with
// known parameters (`truth`), for tests of the profile fit and of --profile.
#include <map>
#include <string>
#include <utility>

#include "calibration/datasheet.h"
#include "calibration/profile.h"
#include "hwmodels/gpu_model.h"
#include "tests/hwmodels/test_specs.h"

namespace podsim::scenarios::testing {

using calibration::Point;
using calibration::RawMeasurements;
using calibration::Series;
using sim::NumberFormat;

/// The parameters the synthetic GPU "really" has, away from the defaults so
/// that recovering them shows the fit moved them.
inline hwmodels::KernelEfficiency truth(const hwmodels::GpuSpec& gpu) {
  hwmodels::KernelEfficiency e = hwmodels::default_kernel_efficiency(gpu);
  e.gemm_plateau[static_cast<size_t>(NumberFormat::kBf16)] = 0.74;
  e.gemm_plateau[static_cast<size_t>(NumberFormat::kFp8)] = 0.61;
  e.gemm_k_overhead = 220;
  e.attn_fwd_plateau = 0.52;
  e.attn_bwd_plateau = 0.41;
  e.attn_kv_half = 350;
  e.launch_overhead_s = 3.0e-6;
  e.hbm_fraction = 0.86;
  e.mem_latency_s = 2.5e-6;
  return e;
}

inline Point point(std::map<std::string, double> params, double work, double seconds) {
  Point p;
  p.params = std::move(params);
  p.work = work;
  p.times_s = {seconds * 1.001, seconds, seconds * 0.999};
  return p;
}

/// A calibration run on a GPU that behaves exactly like hwmodels with `truth`.
inline calibration::Profile synthetic_profile() {
  const hwmodels::GpuSpec gpu = hwmodels::testing::h100();
  const hwmodels::GpuModel model(gpu, truth(gpu));
  RawMeasurements raw;
  raw.provenance.gpu_name = "NVIDIA H100 80GB HBM3";
  raw.provenance.sm_count = 132;
  raw.provenance.date_utc = "2026-11-30T00:00:00Z";

  Series launch{"launch.stream", "launches", "", {{"fit", "alpha_beta"}}, {}};
  for (double kernels : {1.0, 10.0, 100.0, 1000.0}) {
    launch.points.push_back(point({{"kernels", kernels}}, kernels, 1e-6 + kernels * 3.0e-6));
  }
  raw.series.push_back(launch);

  for (NumberFormat f : {NumberFormat::kBf16, NumberFormat::kFp8}) {
    Series gemm{"gemm." + std::string(sim::to_string(f)), "flops", "", {{"fit", "none"}}, {}};
    for (int64_t m : {512, 2048, 8192}) {
      for (int64_t k : {256, 1024, 8192}) {
        const double flops = 2.0 * static_cast<double>(m * 4096 * k);
        gemm.points.push_back(point({{"m", double(m)}, {"n", 4096.0}, {"k", double(k)}}, flops,
                                    model.gemm_time(m, 4096, k, 1, f).time_s));
      }
    }
    raw.series.push_back(gemm);
  }

  for (const char* name : {"attention.fwd", "attention.bwd"}) {
    Series attention{name, "flops", "", {{"fit", "none"}}, {}};
    const auto pass =
        std::string(name) == "attention.bwd" ? hwmodels::Pass::kBackward : hwmodels::Pass::kForward;
    for (int64_t seq : {512, 1024, 2048, 4096, 8192}) {
      hwmodels::AttentionShape shape{16384 / seq, 32, 8, seq, seq, 128, true, false};
      attention.points.push_back(
          point({{"seq", double(seq)},
                 {"batch", double(shape.batch)},
                 {"heads_q", 32.0},
                 {"heads_kv", 8.0},
                 {"head_dim", 128.0},
                 {"causal", 1.0}},
                1.0, model.attention_time(shape, pass, true, NumberFormat::kBf16).time_s));
    }
    raw.series.push_back(attention);
  }

  Series triad{"hbm.triad", "bytes", "", {{"fit", "alpha_beta"}}, {}};
  const double bw = gpu.hbm_bw_bytes_per_s * 0.86;
  for (double bytes : {64e6, 256e6, 1e9, 4e9}) {
    triad.points.push_back(point({{"bytes", bytes}}, bytes, 2e-6 + bytes / bw));
  }
  raw.series.push_back(triad);

  Series norm{"kernel.rmsnorm", "bytes", "", {{"fit", "alpha_beta"}}, {}};
  for (double bytes : {64e6, 256e6, 1e9}) {
    norm.points.push_back(point({{"bytes", bytes}}, bytes,
                                model.memory_bound_time(bytes, 0, NumberFormat::kBf16).time_s));
  }
  raw.series.push_back(norm);
  return calibration::build_profile(raw, calibration::find_datasheet(raw.provenance.gpu_name));
}

}  // namespace podsim::scenarios::testing
