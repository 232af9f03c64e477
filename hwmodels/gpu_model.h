#pragma once

#include <cstdint>
#include <string_view>

#include "hwmodels/attention_kernels.h"
#include "hwmodels/gpu_spec.h"
#include "hwmodels/kernel_efficiency.h"
#include "sim/number_format.h"

namespace podsim::hwmodels {

/// C[m,n] = A[m,k] B[k,n], `batch` independent products of that shape.
struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch = 1;
};

/// The factors of a GEMM's compute efficiency (see gemm_efficiency()).
struct GemmEfficiency {
  double plateau = 0;  ///< KernelEfficiency::gemm_plateau of the format
  /// m n batch / (waves x sms x tile_m x tile_n), in (0, 1]: SMs idle in the
  /// last wave and padding of ragged edge tiles (a dimension smaller than the
  /// tile gets a tile of that dimension rounded up to the MMA shape, 64 x 8).
  double wave = 0;
  double k_ramp = 0;  ///< k / (k + gemm_k_overhead), in (0, 1]
  int64_t tiles = 0;  ///< output tiles over all batches
  int64_t waves = 0;  ///< ceil(tiles / sms)
  double total() const { return plateau * wave * k_ramp; }
};

/// GEMM compute efficiency as a fraction of the format's dense peak:
/// plateau x wave quantisation x K ramp. A free function of plain data so
/// that calibration can fit KernelEfficiency's GEMM fields to measured GEMMs.
/// Throws std::invalid_argument for a non-positive dimension or sms.
GemmEfficiency gemm_efficiency(const KernelEfficiency& params, int sms, const GemmShape& shape,
                               sim::NumberFormat format);

/// Which limit set a kernel's time.
enum class KernelBound : uint8_t { kCompute, kMemory, kLaunch };

constexpr std::string_view to_string(KernelBound bound) {
  switch (bound) {
    case KernelBound::kCompute:
      return "compute";
    case KernelBound::kMemory:
      return "memory";
    case KernelBound::kLaunch:
      return "launch";
  }
  return "compute";
}

/// What a kernel (or a fixed sequence of kernels) costs.
struct KernelCost {
  double time_s = 0;                          ///< on its stream, launch overheads included
  double flops = 0;                           ///< useful FLOPs executed
  double bytes = 0;                           ///< bytes moved to/from memory (HBM or L2)
  double compute_s = 0;                       ///< FLOPs / (peak x efficiency), summed over kernels
  double memory_s = 0;                        ///< bytes / achievable bandwidth, summed over kernels
  double efficiency = 0;                      ///< compute efficiency used (last kernel for sums)
  int kernels = 0;                            ///< kernels launched
  KernelBound bound = KernelBound::kCompute;  ///< of the dominant kernel
  ParamSource source = ParamSource::kDatasheet;

  /// Sum of a sequence of kernels on one stream.
  KernelCost& operator+=(const KernelCost& other);
};

/// Forward or backward pass of a kernel family.
enum class Pass : uint8_t { kForward, kBackward };

/// One attention call: `heads` query heads share `kv_heads` K/V heads (GQA).
struct AttentionShape {
  int64_t batch = 1;
  int64_t heads = 1;
  int64_t kv_heads = 1;
  int64_t q_len = 0;
  int64_t kv_len = 0;
  int64_t head_dim = 0;
  /// Query i attends to keys j <= i + (kv_len - q_len) (queries are the last
  /// q_len positions).
  bool causal = true;
  /// Causal only: a query sees at most its last `window` keys (sliding-window
  /// attention; blocks wholly outside the window are skipped); 0 = no window.
  int64_t window = 0;
  /// Non-flash path only: dropout on the attention probabilities (Megatron
  /// 2021 used 0.1), an extra pass over the score tensor plus a 1-byte mask.
  bool dropout = true;
};

/// (query, key) pairs one head computes: q x kv, or the causal (windowed) count.
double attention_pairs(const AttentionShape& shape);

/// Useful over computed (query, key) pairs of a causal flash kernel that
/// works in `tile` x `tile` blocks: blocks the diagonal crosses are computed
/// whole and masked. 1 for non-causal shapes. In (0, 1].
double causal_block_fill(const AttentionShape& shape, int64_t tile);

/// The static draw P0 of the power model below (watts): what a board draws
/// with its tensor cores idle, so a cap at or below it leaves them nothing.
inline constexpr double kPowerModelStaticW = 100;

/// The tensor-core throughput a board sustains at its power limit over what
/// it sustains at its board power, in (0, 1]: compute-bound throughput
/// follows the SM clock f, and the board holds P = P0 + k f V(f)^2 at its
/// cap, so throughput(P) / throughput(P_board) = ((P - P0) / (P_board -
/// P0))^(1/a) (docs/research/kernels-host-power.md 5.2: P0 = 100 W static
/// draw, a = 2, fitted to AMD's MI300X/MI325X sustained clocks at 750 and
/// 1000 W, a = 2.03 at P0 = 100 W; the range a = 1.5-3 is what deep caps and
/// the textbook V ~ f give). 1 without a board power or a cap below it.
/// Memory-bound kernels draw less than the cap and are not affected.
/// Throws std::invalid_argument for a cap at or below P0 (no throughput).
double tensor_power_factor(const GpuSpec& gpu);

/// The same model between any two board powers: tensor-core throughput at
/// `watts` over that at `reference_watts` (above 1 for more power: a GPU
/// whose only measurements are a same-silicon sibling's at a lower board
/// power, GB300 at 1400 W from GB200's at 1200 W). 1 when either is unknown.
double tensor_power_ratio(double watts, double reference_watts);

/// How an fp8 GEMM accumulates along K: in the tensor cores' own reduced
/// precision (cuBLASLt FAST_ACCUM, the forward GEMMs of fp8 recipes), or
/// promoting the partial sums to fp32 every few K steps (the gradient
/// GEMMs). Other formats ignore it.
enum class GemmAccumulation : uint8_t { kFast, kPromoted };

/// GPU kernel costs. Holds its spec and parameters by value.
class GpuModel {
 public:
  /// Uses default_kernel_efficiency(gpu).
  explicit GpuModel(GpuSpec gpu);
  /// Throws std::invalid_argument listing validate(params, gpu)'s problems.
  GpuModel(GpuSpec gpu, KernelEfficiency params);

  const GpuSpec& spec() const { return gpu_; }
  const KernelEfficiency& params() const { return params_; }
  ParamSource source() const { return params_.source; }

  /// tensor_power_factor of its spec: applied to GEMM and attention compute.
  double power_factor() const { return power_factor_; }

  /// C[m,n] = A[m,k] B[k,n] x batch in `format` (A, B, C stored in it; an
  /// fp8 GEMM writes a 16-bit C). Bytes = A + B + C once, so skinny or
  /// small-k GEMMs come out memory-bound. A promoted fp8 GEMM's main loop
  /// is KernelEfficiency::fp8_promoted_accumulation_slowdown times slower.
  /// Throws std::invalid_argument for a format the GPU does not support.
  KernelCost gemm_time(int64_t m, int64_t n, int64_t k, int64_t batch, sim::NumberFormat format,
                       GemmAccumulation accumulation = GemmAccumulation::kFast) const;
  KernelCost gemm_time(const GemmShape& shape, sim::NumberFormat format,
                       GemmAccumulation accumulation = GemmAccumulation::kFast) const;

  /// Attention scores+softmax+values for one pass. `flash`: one fused kernel
  /// (no score matrix in HBM; causal skips masked blocks; backward = 2.5x the
  /// forward FLOPs including the score recompute). Non-flash: batched QK^T
  /// GEMM, softmax (+dropout) over the b*h*q*kv score tensor in HBM, batched
  /// AV GEMM (and the mirror-image kernels in backward); masked scores are
  /// computed anyway.
  KernelCost attention_time(const AttentionShape& shape, Pass pass, bool flash,
                            sim::NumberFormat format) const;

  /// Attention with a framework's kernel, resolved for this GPU's generation
  /// (resolve()): kUnfused is the non-flash path above; a flash kernel takes
  /// its published benchmark efficiency (attention_benchmark) at the shape's
  /// head dim and keys per query, scaled by this GPU's sustained bf16 GEMM
  /// plateau over the benchmark GPU's (the clock and the generation), by the
  /// power limit, by wave quantisation against the benchmark's grid and,
  /// below 512 keys, by the sequence ramp. A causal call whose queries are
  /// the last of more keys is a non-causal block plus a causal square.
  /// Throws std::invalid_argument for a kernel the GPU has not (FlashAttention-3
  /// on an A100).
  KernelCost attention_time(const AttentionShape& shape, Pass pass, AttentionKernel kernel,
                            sim::NumberFormat format) const;

  /// A memory-bound kernel (norm, softmax, elementwise, optimizer) moving
  /// `bytes` and doing `flops` on the SM FP32 units. Uses L2 bandwidth when
  /// `bytes` fits in L2, else HBM, with the size ramp of mem_latency_s. A
  /// kernel that reaches only a fraction of what a hand-written one streams
  /// (a generated reduction) passes it as `bandwidth_fraction`, in (0, 1].
  KernelCost memory_bound_time(double bytes, double flops, sim::NumberFormat format,
                               double bandwidth_fraction = 1.0) const;

  /// Achievable bandwidth of a memory-bound kernel moving `bytes`, before the
  /// fixed latency (bytes/s): HBM or L2 peak x fraction.
  double achievable_bandwidth(double bytes) const;

 private:
  KernelCost finish(double flops, double bytes, double peak_flops, double efficiency,
                    double bandwidth, double fixed_s) const;
  /// One flash kernel call of `kernel` (resolved), causal or not, whose keys
  /// per query are kv_len (non-causal) or the causal square's.
  KernelCost flash_kernel_time(const AttentionShape& shape, Pass pass, AttentionKernel kernel,
                               sim::NumberFormat format) const;

  GpuSpec gpu_;
  KernelEfficiency params_;
  double power_factor_ = 1.0;  ///< tensor_power_factor(gpu_)
};

}  // namespace podsim::hwmodels
