#include "hwmodels/kernel_efficiency.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <span>
#include <string>

#include "hwmodels/gpu_model.h"

// Defaults for KernelEfficiency. Source keys [Sxx] refer to
// ../shared/reference/hardware.md section 7. Every GEMM plateau is fitted
// to the published measurements of its format ("anchors"): each anchor of
// training scale implies the plateau that makes the
// model reproduce it exactly (its measured time less the launch overhead,
// divided by its own wave and K-ramp factors); the plateau is the geometric
// mean of those, i.e. the least-squares fit in log time. Only anchors with
// every dimension >= 4096 take part: there the wave and K-ramp factors are
// within a few percent of 1, so the fit measures the main loop rather than
// the tile-count model (at 2048^3 cuBLAS switches to smaller tiles than the
// model assumes).
//
// Sustained, not burst: training runs tensor-core GEMMs back to back for
// seconds, and a GPU doing that sits at its power limit, at a lower clock
// than a short benchmark sees (matmuls on random data are power-limited on
// H100: H. He, "Strangely, matrix multiplications on GPUs run faster when
// given predictable data", thonking.ai, 2024; HPL figures are quoted at the
// clock sustained at the power limit, 1,305 MHz on A100 against its 1,410 MHz
// boost: G. Klockwood, "peak FLOPS" garden page). Each anchor says whether it
// was measured in that steady state (kSustained) or in a burst of a few tens
// of milliseconds (kBurst); a format's plateau is fitted to its sustained
// anchors when it has any, else to its burst ones. The [S32] sweep times 30
// calls after 6 warm-up calls per size, sizes in increasing order
// (zzc0721/torch-performance-test-data test.py), i.e. 5 ms (4096^3) to 41 ms
// (8192^3) of work, shorter than the power controller's averaging window
// (NVML averages board power over 1 s on Ampere and newer); only 10240^3,
// ~90 ms timed right after the 8192^3 run, shows the power limit acting: bf16
// and fp16 drop 10% from 8192^3 to 10240^3 while the wave and K-ramp factors
// stay within 1% and tf32 (half the tensor rate, less switching power) does
// not drop. [S27] times after 10,000 warm-up calls: steady state. MAMF [S03]
// (best shape found by brute force, shape not published, short runs) is
// burst, and the only number known for some GPUs: their plateau stays burst
// (said in their note).

namespace podsim::hwmodels {
namespace {

using sim::NumberFormat;

// How long the measured GEMM ran: in the power-limited steady state of
// sustained training, or a burst before the power limit acts (see above).
enum class Regime : uint8_t { kBurst, kSustained };

struct GemmAnchor {
  NumberFormat format;
  double tflops;  // measured
  int64_t m = 0;  // 0 = MAMF (shape unknown)
  int64_t n = 0;  // 0 = m (square)
  int64_t k = 0;  // 0 = m (square)
  Regime regime = Regime::kBurst;
};

struct GpuDefaults {
  const char* key;  // matched against GpuSpec::name, case-insensitive
  const char* note;
  /// Published GEMM measurements, in up to two tables.
  std::span<const GemmAnchor> anchors;
  std::span<const GemmAnchor> more_anchors;
  // Flash attention plateaus; 0 = derive from the bf16 GEMM plateau (below).
  double attn_fwd;
  double attn_bwd;
  double hbm_fraction;
  // CTA output tile of the vendor BLAS's large-GEMM kernels: Hopper cuBLAS
  // kernels are named "...tilesize128x256x64...", Ampere ones
  // "..._128x128_ldg8_..." (kernel names in profiles). With 128x128 the model
  // gets A100 fp16 [S27] at 1024/2048/4096^3 to +1%/-15%/+4%; with 128x256 it
  // would be -46%/-36% (cuBLAS picks the smaller tile there).
  int tile_m = 128;
  int tile_n = 256;
  /// Sustained over burst throughput of tensor-core work, for a GPU whose
  /// anchors are all bursts; 0 = from its own anchors (both regimes), or 1.
  double sustained_over_burst = 0;
  /// The anchors are another GPU's of the same silicon, measured at this
  /// board power (watts): the plateaus are taken to this GPU's own board
  /// power by the power model (tensor_power_ratio). 0 = its own anchors.
  double anchors_power_w = 0;
  /// KernelEfficiency::fp8_promoted_accumulation_slowdown; 0 = 1.
  double fp8_promoted_accumulation_slowdown = 0;
};

// The measured ratio of flash-attention to GEMM efficiency is ~0.8 forward on
// both A100 (FlashAttention-2: ~70% of peak [FA2, arXiv:2307.08691, abstract:
// up to 73%] vs GEMM 87% MAMF [S03]) and H100 (FlashAttention-3: ~65% at head
// dim 128 [FA3, arXiv:2407.08608; 75% at its best configuration] vs 81% [S32]).
// Backward reaches ~0.62 of the GEMM plateau on both (approximate readings of
// the FA2/FA3 papers' backward figures). GPUs without their own numbers get
// these ratios.
constexpr double kAttnFwdOverGemm = 0.80;
constexpr double kAttnBwdOverGemm = 0.62;

// Hopper's fp8 tensor cores accumulate in reduced precision; cuBLASLt's
// FAST_ACCUM flag keeps it, otherwise the kernel promotes the partial sums
// to fp32 registers every few K steps, which costs main-loop time. The flag
// acts on Ada and Hopper only (cuBLAS documentation of
// CUBLASLT_MATMUL_DESC_FAST_ACCUM); Blackwell's tensor cores accumulate fp8
// in fp32. The [S27] fp8 sweeps ran with it on (superbenchmark's
// cublaslt_gemm sets FAST_ACCUM = 1 for fp8 inputs, cublaslt_utils.cc), and
// turning it on speeds tensor-wise fp8 GEMMs on H100 up 1.1x to 1.2x
// (pytorch/ao issue #2377, a cuBLAS _scaled_mm benchmark over training
// shapes): the middle of that range.
constexpr double kHopperPromotedAccumulation = 1.15;

// torch.matmul (cuBLAS, CUDA 12.8) bf16/fp16/tf32/fp32 square sweeps on H100
// [S32], bf16 also [S33]; the H200 has the same GH100 SMs, tensor cores and
// clocks, so both use them.
// The 10240^3 points ran long enough to reach the power limit (see above).
constexpr Regime kS = Regime::kSustained;
constexpr GemmAnchor kGh100Matmul[] = {
    {NumberFormat::kBf16, 676.6, 2048}, {NumberFormat::kBf16, 788.7, 4096},
    {NumberFormat::kBf16, 797.5, 8192}, {NumberFormat::kBf16, 719.7, 10240, 0, 0, kS},
    {NumberFormat::kBf16, 716.0, 4096}, {NumberFormat::kBf16, 795.0, 8192},
    {NumberFormat::kFp16, 645.1, 2048}, {NumberFormat::kFp16, 760.0, 4096},
    {NumberFormat::kFp16, 736.2, 8192}, {NumberFormat::kFp16, 668.4, 10240, 0, 0, kS},
    {NumberFormat::kTf32, 335.0, 2048}, {NumberFormat::kTf32, 402.2, 4096},
    {NumberFormat::kTf32, 372.1, 8192}, {NumberFormat::kTf32, 376.7, 10240, 0, 0, kS},
    {NumberFormat::kFp32, 49.6, 2048},  {NumberFormat::kFp32, 51.9, 4096},
    {NumberFormat::kFp32, 51.8, 8192},  {NumberFormat::kFp32, 49.6, 10240, 0, 0, kS}};
// cuBLASLt fp8 sweeps, random inputs, 10,000 warm-up calls [S27]: sustained.
constexpr GemmAnchor kH100Fp8[] = {{NumberFormat::kFp8, 1011.3, 2048, 0, 0, kS},
                                   {NumberFormat::kFp8, 1216.9, 4096, 0, 0, kS},
                                   {NumberFormat::kFp8, 1290.1, 8192, 0, 0, kS},
                                   {NumberFormat::kFp8, 1377.3, 16384, 0, 0, kS},
                                   {NumberFormat::kFp8, 1382.2, 32768, 0, 0, kS},
                                   {NumberFormat::kFp8, 1351.4, 6144, 12288, 12288, kS}};
constexpr GemmAnchor kH200Fp8[] = {{NumberFormat::kFp8, 1013.4, 2048, 0, 0, kS},
                                   {NumberFormat::kFp8, 1249.1, 4096, 0, 0, kS},
                                   {NumberFormat::kFp8, 1300.6, 8192, 0, 0, kS},
                                   {NumberFormat::kFp8, 1366.3, 16384, 0, 0, kS},
                                   {NumberFormat::kFp8, 1349.5, 32768, 0, 0, kS},
                                   {NumberFormat::kFp8, 1318.0, 6144, 12288, 12288, kS}};
// cuBLASLt fp16 sweep on A100, 10,000 warm-up calls [S27] (sustained); bf16
// runs on the same units at the same rate.
constexpr GemmAnchor kA100Matmul[] = {{NumberFormat::kFp16, 221.8, 2048, 0, 0, kS},
                                      {NumberFormat::kFp16, 228.0, 4096, 0, 0, kS},
                                      {NumberFormat::kFp16, 253.7, 8192, 0, 0, kS},
                                      {NumberFormat::kFp16, 256.5, 16384, 0, 0, kS},
                                      {NumberFormat::kFp16, 250.8, 6144, 12288, 12288, kS},
                                      {NumberFormat::kBf16, 221.8, 2048, 0, 0, kS},
                                      {NumberFormat::kBf16, 228.0, 4096, 0, 0, kS},
                                      {NumberFormat::kBf16, 253.7, 8192, 0, 0, kS},
                                      {NumberFormat::kBf16, 256.5, 16384, 0, 0, kS},
                                      {NumberFormat::kBf16, 250.8, 6144, 12288, 12288, kS}};

// Maximum achievable matmul (shape not published: the plateau itself) [S03]:
// bursts of 0.1-1 ms. GB200 fp8 also has the Azure cuBLASLt sweep after
// 10,000 warm-up calls [S27] (sustained).
constexpr GemmAnchor kGb200Anchors[] = {{NumberFormat::kBf16, 1822.0, 0},
                                        {NumberFormat::kFp16, 1822.0, 0},
                                        {NumberFormat::kFp8, 3615.6, 0},
                                        {NumberFormat::kFp8, 2834.6, 4096, 0, 0, kS},
                                        {NumberFormat::kFp8, 2876.6, 8192, 0, 0, kS},
                                        {NumberFormat::kFp8, 2906.9, 16384, 0, 0, kS},
                                        {NumberFormat::kFp8, 2825.6, 32768, 0, 0, kS},
                                        {NumberFormat::kFp8, 2895.6, 6144, 12288, 12288, kS}};
constexpr GemmAnchor kB200Mamf[] = {{NumberFormat::kBf16, 1745.0, 0},
                                    {NumberFormat::kFp16, 1745.0, 0},
                                    {NumberFormat::kFp8, 3432.5, 0}};
// AMD's hipBLASLt measurement at 4096x4864x32896 in ~1 s runs after a 25%
// warm-up: the clock settles under power management, 1,207 MHz on MI300X
// (750 W) and 1,447 MHz on MI325X (1000 W) (ROCm blogs, "Measuring
// Max-Achievable FLOPs - Part 2", Feb 2025, docs/research/hardware.md [N11]):
// sustained; and the MI300X fp8 sweep after 10,000 warm-up calls [S28].
constexpr GemmAnchor kMi325xAnchors[] = {{NumberFormat::kBf16, 843.0, 4096, 4864, 32896, kS},
                                         {NumberFormat::kFp16, 794.0, 4096, 4864, 32896, kS},
                                         {NumberFormat::kFp8, 1519.0, 4096, 4864, 32896, kS}};
constexpr GemmAnchor kMi300xAnchors[] = {{NumberFormat::kBf16, 708.0, 4096, 4864, 32896, kS},
                                         {NumberFormat::kFp16, 654.0, 4096, 4864, 32896, kS},
                                         {NumberFormat::kFp8, 1273.0, 4096, 4864, 32896, kS},
                                         {NumberFormat::kFp8, 1159.2, 8192, 0, 0, kS}};

// Blackwell Ultra B300 (1000 W, as B200): bf16 and fp8 MAMF [S03], bursts
// (the row's sustained_over_burst takes them to the power limit as B200's).
constexpr GemmAnchor kB300Mamf[] = {{NumberFormat::kBf16, 1769.0, 0},
                                    {NumberFormat::kFp16, 1769.0, 0},
                                    {NumberFormat::kFp8, 3353.3, 0}};
// MI355X bf16 MAMF 1565 TFLOP/s, 12288x8192x8192 best shape, 100 timed
// iterations after 50 warm-up, ~0.15 s of work [S03]: near-sustained (on
// MI300X the shorter MAMF run gave 668 against AMD's 1 s sustained 708 [N11],
// so AMD's MAMF shows no burst inflation).
constexpr GemmAnchor kMi355xAnchors[] = {{NumberFormat::kBf16, 1565.0, 12288, 8192, 8192, kS},
                                         {NumberFormat::kFp16, 1565.0, 12288, 8192, 8192, kS}};
// TPUs (docs/hardware.md): jax matmul bf16 8192^3 on v6e, device-trace time
// 827.5 TFLOP/s [N09]; TPU7x gemm_multiple_run bf16 per TensorCore (half a
// chip, both run at once) 950.1 at 16384^3 and 956.4 at 32768^3 (~73 ms per
// call) [N09], i.e. 1900.2 and 1912.8 per chip. TPUs are not known to boost
// above the clock their peak is quoted at, so these are the sustained rate.
// No v5p matmul benchmark is published: the geometric mean of the v6e and
// TPU7x fractions (0.901, 0.829) = 0.864 of its 459 TFLOP/s is assumed.
constexpr GemmAnchor kTpuV6eMatmul[] = {{NumberFormat::kBf16, 827.5, 8192, 0, 0, kS}};
constexpr GemmAnchor kTpu7xMatmul[] = {{NumberFormat::kBf16, 1900.2, 16384, 0, 0, kS},
                                       {NumberFormat::kBf16, 1912.8, 32768, 0, 0, kS}};
constexpr GemmAnchor kTpuV5pAssumed[] = {{NumberFormat::kBf16, 396.6, 0, 0, 0, kS}};

// Achievable HBM fraction = STREAM triad / datasheet bandwidth [S27][S28].
const GpuDefaults kTable[] = {
    {"TPU7X",
     "TPU7x: bf16 matmul 1900.2 / 1912.8 TFLOP/s per chip at 16384^3 / 32768^3 (two TensorCores "
     "at once) [N09]; fp8 the bf16 fraction (assumed); MXU tile 256x256; HBM 85% generic (the "
     "benchmark's 7.38 TB/s roofline is a model constant, not a measurement)",
     kTpu7xMatmul,
     {},
     0,
     0,
     0.85,
     256,
     256},
    {"TPU-V6E",
     "TPU v6e: bf16 matmul 827.5 TFLOP/s at 8192^3 (device trace) [N09]; fp8 the bf16 fraction "
     "(assumed); MXU tile 256x256; HBM copy 1359.6 of 1638 GB/s at 32 MiB [N09]",
     kTpuV6eMatmul,
     {},
     0,
     0,
     1359.6 / 1638.0,
     256,
     256},
    {"TPU-V5P",
     "TPU v5p: no matmul benchmark published: bf16 plateau 0.864 of 459 TFLOP/s assumed (the "
     "geometric mean of the measured v6e and TPU7x fractions) [N09]; MaxText measures 328 "
     "TFLOP/s per chip end to end (71.5% MFU) [N08], a lower bound; MXU tile 128x128; HBM 85% "
     "generic",
     kTpuV5pAssumed,
     {},
     0,
     0,
     0.85,
     128,
     128},
    {"GB300",
     "GB300 (1400 W): no matmul measurement published; GB200's anchors (bf16 MAMF 1822 x 0.853 "
     "sustained, fp8 Azure sweep [S27][S03][N22]), measured at 1200 W, taken to 1400 W by the "
     "power model (tensor_power_factor: ((1400-100)/(1200-100))^(1/2) = 1.087); HBM fraction "
     "assumed as B200",
     kGb200Anchors,
     {},
     0,
     0,
     0.844,
     128,
     256,
     0.853,
     1200},
    {"B300",
     "B300 (1000 W, as B200): bf16 MAMF 1769 TFLOP/s (78.6%), fp8 MAMF 3353.3 [S03], bursts, x "
     "0.853, the throughput B200 keeps once its clock settles at the power limit [N22]; HBM "
     "fraction assumed as B200",
     kB300Mamf,
     {},
     0,
     0,
     0.844,
     128,
     256,
     0.853},
    {"GB200",
     "GB200: bf16 MAMF 1822 TFLOP/s (72.9%) [S03], a burst, x 0.853, the throughput B200 keeps "
     "once its clock settles at the power limit (assumed for GB200's Blackwell die; [N22]); "
     "fp8 cuBLASLt sweep 4096^3..32768^3 and 6144x12288x12288 after 10,000 warm-up calls [S27] "
     "(sustained); HBM fraction assumed as B200",
     kGb200Anchors,
     {},
     0,
     0,
     0.844,
     128,
     256,
     0.853},
    {"B200",
     "B200: bf16 MAMF 1745 TFLOP/s (77.6%), fp8 MAMF 3432.5 (76.3%) [S03], bursts, x 0.853: "
     "back-to-back FlashAttention-4 on a 1000 W B200 loses 15% (1,450 -> 1,237 TFLOP/s) as the "
     "clock drops from 1,965 to ~1,580 MHz at the power limit (flashinfer PR #2899, "
     "docs/research/hardware.md [N22]); HBM 6.75 of 8.0 TB/s read [S18, unverified]",
     kB200Mamf,
     {},
     0,
     0,
     0.844,
     128,
     256,
     0.853},
    {"H200",
     "H200: same GH100 compute as H100 (bf16/fp16/tf32/fp32 sweeps of H100 [S32][S33], plateau "
     "from the power-limited 10240^3 points); fp8 cuBLASLt sweep 2048^3..32768^3 and "
     "6144x12288x12288 after 10,000 warm-up calls [S27], fast accumulation; promoted (gradient) "
     "fp8 GEMMs 1.15x slower (pytorch/ao#2377); triad 4.15 of 4.8 TB/s [S27]",
     kGh100Matmul, kH200Fp8, 0.65, 0.50, 4.15 / 4.8, 128, 256, 0, 0, kHopperPromotedAccumulation},
    {"H800",
     "H800 SXM: the H100 SXM die at the same 700 W (docs/hardware.md), so H100's anchors: "
     "torch.matmul bf16/fp16/tf32/fp32 sweeps [S32][S33], plateau from the power-limited 10240^3 "
     "points; fp8 cuBLASLt sweep [S27] and its promoted-accumulation factor as H100; "
     "FlashAttention-3 as H100; triad as H100 [S27]",
     kGh100Matmul, kH100Fp8, 0.65, 0.50, 2.97 / 3.35, 128, 256, 0, 0, kHopperPromotedAccumulation},
    {"H100",
     "H100 SXM: torch.matmul (cuBLAS, CUDA 12.8) bf16/fp16/tf32/fp32 sweeps 2048^3..10240^3 "
     "[S32][S33], plateau from the power-limited 10240^3 points (sustained); fp8 cuBLASLt sweep "
     "2048^3..32768^3 and 6144x12288x12288 after 10,000 warm-up calls [S27], fast "
     "accumulation; promoted (gradient) fp8 GEMMs 1.15x slower (pytorch/ao#2377); FlashAttention-3 "
     "~65% fwd / ~50% bwd at head dim 128 (approximate, FA3 paper) x sustained/burst bf16; "
     "triad 2.97 of 3.35 TB/s [S27]",
     kGh100Matmul, kH100Fp8, 0.65, 0.50, 2.97 / 3.35, 128, 256, 0, 0, kHopperPromotedAccumulation},
    {"A100",
     "A100 SXM: fp16 cuBLASLt sweep 2048^3..16384^3 and 6144x12288x12288 after 10,000 warm-up "
     "calls [S27] (sustained; bf16 runs on the same unit); "
     "tf32/fp32: no measurement, the bf16 fraction is assumed; FlashAttention-2 ~70% fwd / ~55% "
     "bwd (approximate, FA2 paper); triad 1.70 of 2.039 TB/s [S27]",
     kA100Matmul,
     {},
     0.70,
     0.55,
     1.70 / 2.039,
     128,
     128},
    {"MI355X",
     "MI355X: bf16 MAMF 1565 TFLOP/s (62.2%) at 12288x8192x8192 [S03], near-sustained (see the "
     "anchor); fp8 the bf16 fraction (assumed); HBM fraction assumed as MI300X [S28]",
     kMi355xAnchors,
     {},
     0,
     0,
     4.09 / 5.3},
    {"MI350X",
     "MI350X (1000 W): the MI355X silicon at 2200 MHz [S03]; no matmul measurement, so MI355X's "
     "near-sustained bf16 1565 TFLOP/s at 1400 W taken to 1000 W by the power model "
     "(tensor_power_factor: ((1000-100)/(1400-100))^(1/2) = 0.832); fp8 the bf16 fraction "
     "(assumed); HBM fraction assumed as MI300X [S28]",
     kMi355xAnchors,
     {},
     0,
     0,
     4.09 / 5.3,
     128,
     256,
     0,
     1400},
    {"MI325X",
     "MI325X (1000 W): hipBLASLt bf16/fp16/fp8 843 / 794 / 1519 TFLOP/s at 4096x4864x32896 in "
     "~1 s runs at the settled 1,447 MHz clock [N11] (sustained); HBM fraction as MI300X [S28]",
     kMi325xAnchors,
     {},
     0,
     0,
     4.09 / 5.3},
    {"MI300X",
     "MI300X (750 W): hipBLASLt bf16/fp16/fp8 708 / 654 / 1273 TFLOP/s at 4096x4864x32896 in "
     "~1 s runs at the settled 1,207 MHz clock [N11] (sustained; MAMF's 668.4 [S03] is lower); "
     "fp8 also 1159.2 at 8192^3 after 10,000 warm-up calls [S28]; triad 4.09 of 5.3 TB/s [S28]",
     kMi300xAnchors,
     {},
     0,
     0,
     4.09 / 5.3},
};

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

const GpuDefaults* find_defaults(const std::string& name) {
  const std::string key = upper(name);
  for (const GpuDefaults& d : kTable) {
    if (key.find(d.key) != std::string::npos) return &d;
  }
  return nullptr;
}

// The plateau that makes the model reproduce one measured GEMM: its time
// less the launch overhead, over its wave and K-ramp factors.
double plateau_from_anchor(const KernelEfficiency& shape_params, const GpuSpec& gpu,
                           const GemmAnchor& anchor) {
  const double peak_tflops = gpu.peak(anchor.format) / 1e12;
  if (!(peak_tflops > 0)) return 0.0;
  if (anchor.m == 0 || gpu.sms <= 0) return std::min(1.0, anchor.tflops / peak_tflops);
  const GemmShape shape{anchor.m, anchor.n > 0 ? anchor.n : anchor.m,
                        anchor.k > 0 ? anchor.k : anchor.m, 1};
  const double flops = 2.0 * static_cast<double>(shape.m) * static_cast<double>(shape.n) *
                       static_cast<double>(shape.k);
  const double kernel_s = flops / (anchor.tflops * 1e12) - shape_params.launch_overhead_s;
  KernelEfficiency unit = shape_params;
  unit.gemm_plateau.fill(1.0);
  const GemmEfficiency e = gemm_efficiency(unit, gpu.sms, shape, anchor.format);
  return std::min(1.0, flops / (kernel_s * peak_tflops * 1e12) / (e.wave * e.k_ramp));
}

// Least squares in log time over the training-scale anchors of one format
// measured in `regime`: the geometric mean of their plateaus. 0 when the
// format has no such anchor.
double fitted_plateau(const KernelEfficiency& shape_params, const GpuSpec& gpu,
                      const GpuDefaults& d, NumberFormat format, Regime regime) {
  constexpr int64_t kTrainingScale = 4096;
  double log_sum = 0;
  int n = 0;
  for (const std::span<const GemmAnchor> table : {d.anchors, d.more_anchors}) {
    for (const GemmAnchor& a : table) {
      if (a.format != format || a.regime != regime) continue;
      const int64_t smallest = std::min({a.m, a.n > 0 ? a.n : a.m, a.k > 0 ? a.k : a.m});
      if (a.m != 0 && smallest < kTrainingScale) continue;
      const double p = plateau_from_anchor(shape_params, gpu, a);
      if (!(p > 0)) continue;
      log_sum += std::log(p);
      ++n;
    }
  }
  return n == 0 ? 0.0 : std::exp(log_sum / n);
}

// Sustained over burst bf16 GEMM plateau of one GPU (the clock the power
// limit allows over the clock of a short benchmark): where the anchors show
// both regimes, their ratio; else the GPU's stated factor; else 1. Scales
// tensor-core measurements taken in bursts (MAMF, the flash-attention
// papers' benchmarks).
double sustained_over_burst(const KernelEfficiency& shape_params, const GpuSpec& gpu,
                            const GpuDefaults& d) {
  const double sustained =
      fitted_plateau(shape_params, gpu, d, NumberFormat::kBf16, Regime::kSustained);
  const double burst = fitted_plateau(shape_params, gpu, d, NumberFormat::kBf16, Regime::kBurst);
  if (sustained > 0 && burst > 0) return std::min(1.0, sustained / burst);
  return d.sustained_over_burst > 0 ? d.sustained_over_burst : 1.0;
}

// The plateau of sustained training: from the sustained anchors when the
// format has any, else the burst ones at the sustained clock.
double sustained_plateau(const KernelEfficiency& shape_params, const GpuSpec& gpu,
                         const GpuDefaults& d, NumberFormat format) {
  const double sustained = fitted_plateau(shape_params, gpu, d, format, Regime::kSustained);
  if (sustained > 0) return sustained;
  return fitted_plateau(shape_params, gpu, d, format, Regime::kBurst) *
         sustained_over_burst(shape_params, gpu, d);
}

}  // namespace

std::vector<SpecProblem> validate(const KernelEfficiency& p, const GpuSpec& gpu) {
  std::vector<SpecProblem> out;
  auto fraction = [&](const std::string& path, double v, bool zero_ok) {
    if (!(v <= 1.0) || !(v > 0 || (zero_ok && v == 0))) {
      out.push_back({path, "must be in (0, 1], is " + std::to_string(v), ""});
    }
  };
  for (int f = 0; f < sim::kNumberFormats; ++f) {
    const auto format = static_cast<sim::NumberFormat>(f);
    const bool has_peak = gpu.peak(format) > 0;
    const std::string path = "gemm_plateau/" + std::string(sim::to_string(format));
    fraction(path, p.plateau(format), !has_peak);
    if (has_peak && p.plateau(format) == 0) {
      out.back().hint = "the GPU has a " + std::string(sim::to_string(format)) + " peak";
    }
  }
  if (p.gemm_tile_m <= 0) out.push_back({"gemm_tile_m", "must be positive", ""});
  if (p.gemm_tile_n <= 0) out.push_back({"gemm_tile_n", "must be positive", ""});
  if (!(p.gemm_k_overhead >= 0)) out.push_back({"gemm_k_overhead", "must be >= 0", ""});
  if (!(p.fp8_promoted_accumulation_slowdown >= 1)) {
    out.push_back({"fp8_promoted_accumulation_slowdown", "must be >= 1", ""});
  }
  fraction("attn_fwd_plateau", p.attn_fwd_plateau, false);
  fraction("attn_bwd_plateau", p.attn_bwd_plateau, false);
  if (!(p.attn_kv_half >= 0)) out.push_back({"attn_kv_half", "must be >= 0", ""});
  if (p.attn_tile <= 0) out.push_back({"attn_tile", "must be positive", ""});
  fraction("hbm_fraction", p.hbm_fraction, false);
  fraction("l2_fraction", p.l2_fraction, false);
  fraction("simt_fraction", p.simt_fraction, false);
  if (!(p.mem_latency_s >= 0)) out.push_back({"mem_latency_s", "must be >= 0", ""});
  if (!(p.launch_overhead_s >= 0)) out.push_back({"launch_overhead_s", "must be >= 0", ""});
  return out;
}

KernelEfficiency default_kernel_efficiency(const GpuSpec& gpu) {
  KernelEfficiency p;
  p.source = ParamSource::kDatasheet;
  // Tile 128x256 per CTA unless the table says otherwise (see GpuDefaults);
  // with it the model gets H100 bf16 at 1024^3 (32 tiles on 132 SMs) to -13%
  // and 2048^3 / 4096^3 to +4% / -1% of [S32].
  p.gemm_tile_m = 128;
  p.gemm_tile_n = 256;
  const GpuDefaults* d = find_defaults(gpu.name);
  if (d != nullptr) {
    p.gemm_tile_m = d->tile_m;
    p.gemm_tile_n = d->tile_n;
    if (d->fp8_promoted_accumulation_slowdown > 0) {
      p.fp8_promoted_accumulation_slowdown = d->fp8_promoted_accumulation_slowdown;
    }
  }
  // K ramp: fitted by hand to the [S32] H100 bf16 sweep (1024..8192) together
  // with the 2 us launch overhead; residuals above. Calibration replaces it.
  p.gemm_k_overhead = 128;
  // One 128-key block: a query tile's fixed work (load Q, rescale, write O)
  // costs about one K/V block iteration.
  p.attn_kv_half = 128;
  p.attn_tile = 128;
  // L2: presets carry measured L2 bandwidth where there is one (H100 ~5.5 TB/s
  // [S13][S31]), so no further derating.
  p.l2_fraction = 1.0;
  // ~1 us to fill and drain the memory pipeline: one DRAM round trip is
  // ~0.4 us (656 cycles pointer chase on Hopper [S34]); ramp-up plus tail plus
  // CTA scheduling about doubles it. An estimate until calibrated.
  p.mem_latency_s = 1.0e-6;
  // Elementwise arithmetic: the SIMT FP32 GEMM fraction on H100 at 4096^3
  // (51.9 of 66.9 TFLOP/s [S32]) as a ceiling for non-tensor arithmetic.
  p.simt_fraction = 51.9 / 66.9;
  // Launch: H100 kernel launch on a stream ~2.1 us (Hazy Research, [S37]);
  // A100 one more kernel in a stream 1.5 us, cudaLaunchKernel to start 2.26 us
  // [S37]; GpuSpec::launch_overhead_s wins when a preset sets it.
  p.launch_overhead_s = gpu.launch_overhead_s > 0 ? gpu.launch_overhead_s : 2.0e-6;

  if (d == nullptr) {
    // Generic: Meta's roofline model uses 0.78 x peak as achievable GEMM [S17];
    // HBM 85% (the middle of the measured 77-89% triad range [S27][S28]).
    p.gemm_plateau.fill(0.78);
    for (int f = 0; f < sim::kNumberFormats; ++f) {
      if (!(gpu.peak_flops_per_s[static_cast<size_t>(f)] > 0)) p.gemm_plateau[f] = 0;
    }
    p.attn_fwd_plateau = kAttnFwdOverGemm * 0.78;
    p.attn_bwd_plateau = kAttnBwdOverGemm * 0.78;
    p.hbm_fraction = 0.85;
    p.source_note = "generic defaults for '" + gpu.name +
                    "': GEMM 0.78 x peak [S17], HBM 85% [S27], attention 0.8/0.62 x GEMM";
    return p;
  }
  p.source_note = d->note;
  // Another GPU's anchors at its board power: this GPU's board power moves
  // the sustained clock (the power model of tensor_power_factor).
  const double sibling =
      d->anchors_power_w > 0 ? tensor_power_ratio(gpu.board_power_w, d->anchors_power_w) : 1.0;
  for (int f = 0; f < sim::kNumberFormats; ++f) {
    p.gemm_plateau[static_cast<size_t>(f)] =
        std::min(1.0, sibling * sustained_plateau(p, gpu, *d, static_cast<NumberFormat>(f)));
  }
  // fp4 has no anchor of its own: the NVFP4 GEMM sustains what TE measured
  // against MXFP8 on the same GPU and shapes -- 3.764 ms against 7.161 ms for
  // a 5B layer's 12 GEMMs, pre-quantized operands, B300 (TE
  // docs/examples/gemm_profiling, docs/research/moe.md 6): 1.90x the fp8
  // throughput, not the datasheet's 3x (B300) or 2x (B200) peak ratio.
  const double fp8_plateau = p.plateau(NumberFormat::kFp8);
  if (gpu.peak(NumberFormat::kFp4) > 0 && fp8_plateau > 0 && !(p.plateau(NumberFormat::kFp4) > 0)) {
    constexpr double kFp4OverFp8Throughput = 7.161 / 3.764;
    p.gemm_plateau[static_cast<size_t>(NumberFormat::kFp4)] =
        std::min(fp8_plateau, kFp4OverFp8Throughput * fp8_plateau * gpu.peak(NumberFormat::kFp8) /
                                  gpu.peak(NumberFormat::kFp4));
  }
  // Formats without an anchor but with a datasheet rate: the GEMM fraction of
  // the closest measured format (bf16), an assumption stated in the note.
  const double bf16 = p.plateau(NumberFormat::kBf16);
  for (int f = 0; f < sim::kNumberFormats; ++f) {
    const bool supported = gpu.peak_flops_per_s[static_cast<size_t>(f)] > 0;
    if (!supported) {
      p.gemm_plateau[static_cast<size_t>(f)] = 0;
    } else if (!(p.gemm_plateau[static_cast<size_t>(f)] > 0)) {
      p.gemm_plateau[static_cast<size_t>(f)] = bf16 > 0 ? bf16 : 0.78;
    }
  }
  // Flash-attention plateaus read from the papers were measured in bursts:
  // they lose what the bf16 GEMMs of the same GPU lose at the power limit.
  // Those derived from the (sustained) GEMM plateau already have.
  const double power = sustained_over_burst(p, gpu, *d);
  p.attn_fwd_plateau = d->attn_fwd > 0 ? power * d->attn_fwd : kAttnFwdOverGemm * bf16;
  p.attn_bwd_plateau = d->attn_bwd > 0 ? power * d->attn_bwd : kAttnBwdOverGemm * bf16;
  p.hbm_fraction = d->hbm_fraction;
  return p;
}

}  // namespace podsim::hwmodels
