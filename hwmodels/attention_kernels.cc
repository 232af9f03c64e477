#include "hwmodels/attention_kernels.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <stdexcept>
#include <string>

// Attention kernel benchmarks, in TFLOP/s as published, at 512, 1k, 2k, 4k,
// 8k and 16k keys (batch x seqlen = 16k tokens, hidden 2048, q = k = v length,
// no dropout, fp16 = bf16 speed), FLOPs counted as 4 b h d x pairs forward
// and 2.5x that backward, causal at half the pairs (flash-attention
// benchmarks/benchmark_flash_attention.py l.27-30; hopper/benchmark_attn.py
// l.62-72): the same convention as podsim's attention FLOPs, so a causal
// figure already contains the masked diagonal blocks.
//
// H100 SXM5 (700 W, burst): FlashAttention-3 paper (Shah et al., arXiv
// 2407.08608) Figure 5 (forward; read from assets/flash3_fp16_fwd.png of
// Dao-AILab/flash-attention @0251105) and Figure 6 (backward, non-causal;
// transcribed), FA2 / cuDNN / FA3 rows. A100 SXM4 80GB: the
// flash-attention README's FA2 forward+backward chart
// (assets/flash2_a100_fwd_bwd_benchmark.png), split into forward and
// backward with the H100 FA2 backward/forward ratio at the same length and
// head dim (docs/research/kernels-host-power.md 1.5, derived). Not published,
// and derived here (estimates): causal backward = non-causal backward x the
// causal/non-causal forward ratio of the same kernel; head dim 256 backward =
// 128 backward x the 256/128 forward ratio.
//
// Triton (kTriton) is the kernel llm-foundry calls with attn_impl 'triton':
// its llmfoundry/models/layers/flash_attn_triton.py is a copy of
// flash-attention's flash_attn_triton.py @eff9fe6 (2022, FlashAttention-1's
// algorithm) built with triton-pre-mlir (llm-foundry setup.py v0.3.0:
// vchiley/triton@triton_pre_mlir_sm90), a Triton from before the MLIR
// backend and before Hopper support: it emits Ampere-class mma.sync code on
// sm90 too, like FlashAttention-2, and has no wgmma/TMA path. (The FA3
// paper's "Triton" row is a different kernel: Triton 3's Hopper tutorial.)
// Its one published benchmark is the "FlashAttention Triton" bars of the same
// A100 forward+backward chart, beside FlashAttention-2's: the kernel is
// priced as FA2 x that measured Triton/FA2 ratio at the same head dim, keys
// and mask, on every generation (both Ampere-class kernels; the ratio applied
// to forward and backward alike, since the chart gives only their sum).

namespace podsim::hwmodels {
namespace {

constexpr int kPoints = 6;  // 512 .. 16384 keys
using Curve = std::array<double, kPoints>;
constexpr Curve kNotPublished{};  // no benchmark of that head dim or pass

struct KernelTable {
  AttentionKernel kernel;
  GpuArch arch;
  double peak_tflops;  // dense bf16 peak of the benchmark GPU
  /// bf16 GEMM plateau of the benchmark GPU in the benchmark's regime: the
  /// H100's burst anchors fit 0.830, the A100's (sustained) 0.819
  /// (hwmodels/README.md, defaults table).
  double reference_gemm_plateau;
  // [head dim 64, 128, 256]: forward non-causal, forward causal, backward non-causal.
  std::array<Curve, 3> fwd;
  std::array<Curve, 3> fwd_causal;
  std::array<Curve, 3> bwd;
  /// Published backward causal (A100 derived split) or empty (derived here).
  std::array<Curve, 3> bwd_causal;
};

constexpr double kH100Peak = 989.4;
constexpr double kA100Peak = 312.0;
constexpr double kH100BurstPlateau = 0.830;
constexpr double kA100Plateau = 0.819;

const KernelTable kTables[] = {
    {AttentionKernel::kFlash2,
     GpuArch::kHopper,
     kH100Peak,
     kH100BurstPlateau,
     {Curve{282, 306, 318, 321, 322, 324}, Curve{309, 350, 362, 368, 370, 370},
      Curve{275, 313, 321, 323, 324, 326}},
     {Curve{180, 229, 262, 284, 295, 299}, Curve{191, 260, 298, 319, 333, 335},
      Curve{208, 251, 278, 293, 297, 298}},
     {Curve{198, 238, 264, 279, 287, 291}, Curve{214, 260, 291, 310, 318, 322}, kNotPublished},
     {kNotPublished, kNotPublished, kNotPublished}},
    {AttentionKernel::kCudnn,
     GpuArch::kHopper,
     kH100Peak,
     kH100BurstPlateau,
     {Curve{335, 373, 395, 408, 412, 413}, Curve{497, 574, 617, 609, 600, 595},
      Curve{470, 546, 580, 581, 580, 581}},
     {Curve{225, 288, 334, 363, 379, 388}, Curve{315, 410, 484, 518, 529, 539},
      Curve{308, 391, 450, 483, 497, 509}},
     {Curve{266, 348, 395, 417, 432, 433}, Curve{305, 408, 465, 499, 518, 516}, kNotPublished},
     {kNotPublished, kNotPublished, kNotPublished}},
    {AttentionKernel::kFlash3,
     GpuArch::kHopper,
     kH100Peak,
     kH100BurstPlateau,
     {Curve{333, 392, 460, 476, 496, 497}, Curve{467, 565, 625, 638, 646, 648},
      Curve{482, 639, 707, 736, 746, 756}},
     {Curve{197, 265, 371, 420, 460, 473}, Curve{292, 423, 521, 579, 602, 616},
      Curve{286, 427, 537, 612, 628, 642}},
     {Curve{272, 363, 422, 453, 472, 474}, Curve{316, 424, 501, 542, 559, 561}, kNotPublished},
     {kNotPublished, kNotPublished, kNotPublished}},
    {AttentionKernel::kFlash2,
     GpuArch::kAmpere,
     kA100Peak,
     kA100Plateau,
     {Curve{172, 184, 186, 189, 190, 190}, Curve{199, 216, 220, 222, 224, 225}, kNotPublished},
     {Curve{115, 143, 160, 173, 179, 185}, Curve{130, 166, 182, 196, 203, 209}, kNotPublished},
     {Curve{121, 143, 154, 165, 170, 171}, Curve{138, 160, 177, 187, 193, 195}, kNotPublished},
     {Curve{81, 111, 133, 150, 160, 166}, Curve{90, 123, 146, 165, 175, 182}, kNotPublished}},
};

/// FlashAttention Triton over FlashAttention-2, forward + backward TFLOP/s on
/// A100 80GB SXM4 (assets/flash2_a100_fwd_bwd_benchmark.png, bar labels),
/// [head dim 64, 128] at 512 .. 16k keys. Two FA2 labels hidden by the legend
/// (1k at head dim 64, 512 at head dim 128) are the sums of the A100 FA2
/// forward and backward curves above (153, 151), which were split from the
/// same bars.
struct TritonRatio {
  std::array<Curve, 2> non_causal;
  std::array<Curve, 2> causal;
};
constexpr TritonRatio kTritonOverFa2{
    {Curve{90.0 / 132, 102.0 / 153, 98.0 / 162, 98.0 / 171, 100.0 / 175, 100.0 / 176},
     Curve{78.0 / 151, 85.0 / 172, 90.0 / 187, 93.0 / 196, 95.0 / 201, 95.0 / 203}},
    {Curve{59.0 / 88, 75.0 / 119, 79.0 / 140, 76.0 / 156, 79.0 / 165, 80.0 / 171},
     Curve{50.0 / 99, 61.0 / 133, 68.0 / 155, 74.0 / 173, 78.0 / 182, 80.0 / 189}}};

/// Position among the benchmark points in log2: 512 keys = 0 .. 16384 = 5.
double key_position(int64_t keys) {
  const double x = std::log2(static_cast<double>(std::max<int64_t>(keys, 1))) - 9.0;
  return std::clamp(x, 0.0, static_cast<double>(kPoints - 1));
}

double at(const Curve& c, double x) {
  const int i = std::min(static_cast<int>(x), kPoints - 2);
  const double f = x - i;
  return c[static_cast<size_t>(i)] +
         f * (c[static_cast<size_t>(i) + 1] - c[static_cast<size_t>(i)]);
}

bool empty(const Curve& c) { return c[0] == 0; }

const KernelTable* find_table(AttentionKernel kernel, GpuArch arch) {
  for (const KernelTable& t : kTables) {
    if (t.kernel == kernel && t.arch == arch) return &t;
  }
  return nullptr;
}

/// TFLOP/s of one (head-dim index) curve set at position x, with the
/// derivations stated at the top for what is not published.
class CurveReader {
 public:
  explicit CurveReader(const KernelTable& t) : t_(t) {}

  double forward(size_t d, bool causal, double x) const {
    const Curve& c = curve(causal ? t_.fwd_causal : t_.fwd, d);
    return at(c, x);
  }
  double backward(size_t d, bool causal, double x) const {
    if (causal && !empty(curve(t_.bwd_causal, d))) return at(curve(t_.bwd_causal, d), x);
    // Head dim 256 without a backward curve: 128's x the 256/128 forward ratio.
    const double nc = empty(t_.bwd[d])
                          ? at(t_.bwd[1], x) * forward(2, false, x) / forward(1, false, x)
                          : at(t_.bwd[d], x);
    return causal ? nc * forward(d, true, x) / forward(d, false, x) : nc;
  }

 private:
  /// The head dim's curve, or the nearest one published (256 -> 128).
  static const Curve& curve(const std::array<Curve, 3>& curves, size_t d) {
    return empty(curves[d]) ? curves[1] : curves[d];
  }
  const KernelTable& t_;
};

}  // namespace

std::string_view to_string(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::kUnfused:
      return "unfused";
    case AttentionKernel::kFlash2:
      return "FlashAttention-2";
    case AttentionKernel::kFlash3:
      return "FlashAttention-3";
    case AttentionKernel::kCudnn:
      return "cuDNN fused attention";
    case AttentionKernel::kTriton:
      return "Triton flash attention";
    case AttentionKernel::kTransformerEngine:
      return "Transformer Engine's choice";
    case AttentionKernel::kSdpa:
      return "PyTorch SDPA's choice";
  }
  return "?";
}

GpuArch gpu_arch(const GpuSpec& gpu) {
  std::string name = gpu.name;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  auto has = [&](const char* key) { return name.find(key) != std::string::npos; };
  if (has("MI300") || has("MI325")) return GpuArch::kCdna3;
  if (has("B200") || has("B300")) return GpuArch::kBlackwell;  // GB200, GB300 too
  if (has("H100") || has("H200") || has("H800")) return GpuArch::kHopper;
  if (has("A100")) return GpuArch::kAmpere;
  return GpuArch::kOther;
}

AttentionKernel resolve(AttentionKernel kernel, GpuArch arch) {
  switch (kernel) {
    case AttentionKernel::kTransformerEngine:
      return arch == GpuArch::kHopper || arch == GpuArch::kBlackwell ? AttentionKernel::kCudnn
                                                                     : AttentionKernel::kFlash2;
    case AttentionKernel::kSdpa:
      return arch == GpuArch::kBlackwell ? AttentionKernel::kCudnn : AttentionKernel::kFlash2;
    default:
      return kernel;
  }
}

std::optional<std::string> unavailable(AttentionKernel kernel, GpuArch arch) {
  if (kernel == AttentionKernel::kFlash3 && arch != GpuArch::kHopper) {
    return "FlashAttention-3 runs on Hopper (sm90) only";
  }
  if (kernel == AttentionKernel::kCudnn && arch == GpuArch::kCdna3) {
    return "cuDNN is NVIDIA's; AMD GPUs run CK or Triton flash kernels";
  }
  return std::nullopt;
}

AttentionBenchmark attention_benchmark(AttentionKernel kernel, GpuArch arch, int64_t head_dim,
                                       int64_t keys, bool causal, bool backward) {
  // On Ampere every flash kernel is an Ampere-class kernel: FA2's chart
  // stands for cuDNN there too (estimate). Elsewhere a kernel's own Hopper
  // benchmark stands in for generations without one. Triton is FA2 times its
  // measured ratio to FA2 (see the top).
  const GpuArch table_arch = arch == GpuArch::kAmpere ? GpuArch::kAmpere : GpuArch::kHopper;
  const bool triton = kernel == AttentionKernel::kTriton;
  const AttentionKernel table_kernel =
      table_arch == GpuArch::kAmpere || triton ? AttentionKernel::kFlash2 : kernel;
  const KernelTable* t = find_table(table_kernel, table_arch);
  if (t == nullptr) {
    throw std::invalid_argument("attention_benchmark: no benchmark for " +
                                std::string(to_string(kernel)));
  }
  // Head dim 64 / 128 / 256 at log2 positions 0 / 1 / 2.
  const double hd =
      std::clamp(std::log2(static_cast<double>(std::max<int64_t>(head_dim, 1))) - 6.0, 0.0, 2.0);
  const size_t lo = std::min<size_t>(static_cast<size_t>(hd), 1);
  const double f = hd - static_cast<double>(lo);
  const double x = key_position(keys);
  const CurveReader reader(*t);
  auto tflops = [&](size_t d) {
    const double kernel_tflops =
        backward ? reader.backward(d, causal, x) : reader.forward(d, causal, x);
    if (!triton) return kernel_tflops;
    // The Triton chart has head dims 64 and 128; 256 takes 128's ratio.
    const auto& ratios = causal ? kTritonOverFa2.causal : kTritonOverFa2.non_causal;
    return kernel_tflops * at(ratios[std::min<size_t>(d, 1)], x);
  };
  AttentionBenchmark b;
  b.fraction_of_peak = ((1 - f) * tflops(lo) + f * tflops(lo + 1)) / t->peak_tflops;
  b.reference_gemm_plateau = t->reference_gemm_plateau;
  // Triton's ratio was measured on an A100 only.
  b.measured_on_arch =
      table_arch == arch && (triton ? arch == GpuArch::kAmpere : table_kernel == kernel);
  return b;
}

}  // namespace podsim::hwmodels
