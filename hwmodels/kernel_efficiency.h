#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hwmodels/gpu_spec.h"
#include "hwmodels/spec_problem.h"
#include "sim/number_format.h"

namespace podsim::hwmodels {

/// Where a model's parameters came from. Every cost query reports it.
enum class ParamSource : uint8_t {
  kDatasheet,  ///< built-in defaults: datasheet peaks x published measurements
  kProfile,    ///< a calibration profile measured on the target machine
};

constexpr std::string_view to_string(ParamSource source) {
  return source == ParamSource::kProfile ? "profile" : "datasheet";
}

/// The efficiency curves of the GPU kernel model, as plain data.
///
/// A kernel takes max(FLOPs / (peak x efficiency), bytes / achievable
/// bandwidth) + launch_overhead_s. Every field below has a documented meaning
/// so that a calibration profile can fill it; `default_kernel_efficiency`
/// gives datasheet/published-measurement defaults per GPU with sources.
struct KernelEfficiency {
  ParamSource source = ParamSource::kDatasheet;
  /// Free text: which GPU/profile/measurements these numbers came from.
  std::string source_note;

  // --- GEMM (see gemm_efficiency()) ---------------------------------------
  /// Fraction of the format's dense peak that a GEMM reaches inside a full
  /// wave of output tiles at deep K (the main-loop efficiency). Indexed by
  /// sim::NumberFormat. 0 = format unsupported. Range (0, 1].
  std::array<double, sim::kNumberFormats> gemm_plateau{};
  /// Output tile of one CTA (rows x columns of C). Tiles per GEMM =
  /// batch x ceil(m/tile_m) x ceil(n/tile_n); they run in waves of `sms`,
  /// and the wave factor is useful output / (waves x sms x tile).
  int gemm_tile_m = 128;
  int gemm_tile_n = 256;
  /// K-depth equivalent of a tile's fixed cost (pipeline fill, epilogue):
  /// the K ramp is k / (k + gemm_k_overhead). Elements of K, >= 0.
  double gemm_k_overhead = 128;
  /// An fp8 GEMM that promotes its partial sums to fp32 every few K steps
  /// (cuBLASLt FAST_ACCUM off: how every per-tensor fp8 recipe runs its
  /// gradient GEMMs) takes this many times the time of the same GEMM with
  /// fast accumulation, which is what the fp8 plateau is fitted to. 1 where
  /// the tensor cores accumulate in full fp32 whatever the flag. >= 1.
  double fp8_promoted_accumulation_slowdown = 1.0;

  // --- attention (flash path; the non-flash path is GEMMs + memory-bound) --
  /// Fraction of the dense peak a flash-attention forward kernel reaches at
  /// long sequence (per-format peak is used). Range (0, 1].
  double attn_fwd_plateau = 0;
  /// Same for the backward kernel (which recomputes the scores).
  double attn_bwd_plateau = 0;
  /// Sequence ramp: with L the mean number of keys a query attends to, the
  /// efficiency is plateau x L / (L + attn_kv_half). Keys, >= 0.
  double attn_kv_half = 128;
  /// Query rows (forward) or key rows (backward) per CTA, for wave
  /// quantisation of the attention grid.
  int attn_tile = 128;

  // --- memory-bound kernels ----------------------------------------------
  /// Achievable fraction of GpuSpec::hbm_bw_bytes_per_s for a large
  /// streaming kernel (STREAM triad). Range (0, 1].
  double hbm_fraction = 0;
  /// Achievable fraction of GpuSpec::l2_bw_bytes_per_s when the working set
  /// fits in L2. Range (0, 1].
  double l2_fraction = 1.0;
  /// Fixed time a memory-bound kernel needs to fill and drain the memory
  /// pipeline: t = mem_latency_s + bytes / achievable bandwidth, i.e. the
  /// size ramp bytes / (bytes + bw x mem_latency_s). Seconds, >= 0.
  double mem_latency_s = 1.0e-6;
  /// Fraction of the SM FP32 rate (GpuSpec peak kFp32) that elementwise
  /// arithmetic reaches. Range (0, 1].
  double simt_fraction = 0.75;

  // --- every kernel --------------------------------------------------------
  /// Time one kernel adds to its stream besides its own execution (launch
  /// latency / gap between back-to-back kernels). Seconds, >= 0.
  double launch_overhead_s = 2.0e-6;

  double plateau(sim::NumberFormat format) const {
    return gemm_plateau[static_cast<size_t>(format)];
  }
};

/// Every field outside its documented range, for a profile reader to report
/// (paths are field names, "gemm_plateau/bf16"). A plateau of 0 is allowed
/// (format unsupported); it is an error only where `gpu` has a peak for it.
std::vector<SpecProblem> validate(const KernelEfficiency& params, const GpuSpec& gpu);

/// Datasheet/measurement defaults for `gpu`, chosen by GpuSpec::name
/// ("A100", "H100", "H200", "B200", "GB200", "MI300X", "MI325X"; anything
/// else gets a generic default). Sources are cited in kernel_efficiency.cc and
/// in `source_note`. If gpu.launch_overhead_s > 0 it wins over the table.
KernelEfficiency default_kernel_efficiency(const GpuSpec& gpu);

}  // namespace podsim::hwmodels
