#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hwmodels/gpu_spec.h"

namespace podsim::hwmodels {

/// The attention kernel a training framework calls. kTransformerEngine and
/// kSdpa are choices a library makes by GPU generation (resolve()); the
/// others name one kernel.
enum class AttentionKernel : uint8_t {
  kUnfused,  ///< scores in HBM: batched GEMMs + softmax (+ dropout) kernels (Megatron 2021)
  kFlash2,   ///< FlashAttention-2 (flash-attn package, PyTorch SDPA's flash backend)
  kFlash3,   ///< FlashAttention-3 (Hopper only)
  kCudnn,    ///< cuDNN fused attention (TE FusedAttention, SDPA's cuDNN backend)
  kTriton,   ///< a Triton flash-attention kernel (llm-foundry's flash_attn_triton)
  kTransformerEngine,  ///< TE's choice: cuDNN on Hopper and newer, FlashAttention-2 before
  kSdpa,               ///< PyTorch SDPA's default order (torch 2.5.1-2.10)
};

std::string_view to_string(AttentionKernel kernel);

/// GPU generations the kernel benchmarks distinguish.
enum class GpuArch : uint8_t { kAmpere, kHopper, kBlackwell, kCdna3, kOther };

/// By GpuSpec::name: A100 -> Ampere; H100, H200, H800 -> Hopper; B200,
/// GB200, B300, GB300 -> Blackwell; MI300X, MI325X -> CDNA3.
GpuArch gpu_arch(const GpuSpec& gpu);

/// The kernel a choice resolves to on `arch`: TE's get_attention_backend
/// prefers cuDNN FusedAttention on sm90 and newer and FlashAttention-2 on
/// sm80; PyTorch SDPA (2.5.1-2.10) runs its flash backend (FlashAttention-2)
/// on sm80/sm90 and cuDNN first on sm100; on CDNA3 both run a
/// FlashAttention-2-class kernel (CK / AOTriton). Concrete kernels stay.
AttentionKernel resolve(AttentionKernel kernel, GpuArch arch);

/// Why a (resolved) kernel cannot run on `arch`, or nullopt: FlashAttention-3
/// is Hopper-only, cuDNN is NVIDIA's.
std::optional<std::string> unavailable(AttentionKernel kernel, GpuArch arch);

/// A flash kernel's efficiency from its published benchmark: the fraction of
/// the dense bf16 peak it reached (a burst, on the benchmark's GPU), and the
/// bf16 GEMM plateau of that GPU in the same regime, so that the number can
/// be carried to the sustained clock and to other GPUs as the GEMMs are.
struct AttentionBenchmark {
  double fraction_of_peak = 0;
  double reference_gemm_plateau = 0;
  /// The benchmark ran on this generation (false: Hopper's stands in).
  bool measured_on_arch = false;
};

/// The benchmark efficiency of a resolved flash kernel (not kUnfused) with
/// `keys` keys per query at `head_dim`, interpolated in log2 between the
/// benchmark points (512..16384 keys; head dim 64, 128, 256), flat above
/// 16384 keys (the work per query tile stops growing) and clamped at 512
/// (the caller applies its sequence ramp below). Sources in the .cc.
AttentionBenchmark attention_benchmark(AttentionKernel kernel, GpuArch arch, int64_t head_dim,
                                       int64_t keys, bool causal, bool backward);

}  // namespace podsim::hwmodels
