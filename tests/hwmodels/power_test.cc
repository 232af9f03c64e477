// gpu.power_limit: tensor-core work runs at the clock the cap allows, memory-
// bound work does not care; and GPUs whose published GEMM numbers are bursts
// get the sustained plateau.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "hwmodels/gpu_model.h"
#include "hwmodels/kernel_efficiency.h"
#include "tests/hwmodels/test_specs.h"

namespace podsim::hwmodels {
namespace {

using sim::NumberFormat;
using testing::h100;
using testing::set_peak;

GpuSpec capped_h100(double cap_w) {
  GpuSpec g = h100();
  g.board_power_w = 700;
  g.power_limit_w = cap_w;
  return g;
}

TEST(PowerLimit, FactorFollowsTheStatedModel) {
  // ((500 - 100) / (700 - 100))^(1/2) (kernels-host-power.md 5.3: 0.816).
  EXPECT_NEAR(tensor_power_factor(capped_h100(500)), std::sqrt(400.0 / 600.0), 1e-12);
  EXPECT_NEAR(tensor_power_factor(capped_h100(500)), 0.816, 0.001);
  EXPECT_DOUBLE_EQ(tensor_power_factor(capped_h100(700)), 1.0);
  EXPECT_DOUBLE_EQ(tensor_power_factor(h100()), 1.0);  // no board power: no model
  // The factor falls with the cap.
  EXPECT_LT(tensor_power_factor(capped_h100(400)), tensor_power_factor(capped_h100(600)));
  // ... and stays above 0 down to the static draw, where the model has no
  // throughput left to give: a model of such a board is refused, not priced
  // with free matrix products.
  EXPECT_GT(tensor_power_factor(capped_h100(kPowerModelStaticW + 1)), 0.0);
  EXPECT_THROW(tensor_power_factor(capped_h100(kPowerModelStaticW)), std::invalid_argument);
  EXPECT_THROW(GpuModel{capped_h100(50)}, std::invalid_argument);
}

TEST(PowerLimit, SlowsComputeBoundGemmsAndAttentionNotMemoryBoundKernels) {
  const GpuModel full(capped_h100(700));
  const GpuModel capped(capped_h100(500));
  const double f = capped.power_factor();
  // A large GEMM is compute-bound: its body takes 1/f as long.
  const KernelCost g_full = full.gemm_time(8192, 8192, 8192, 1, NumberFormat::kBf16);
  const KernelCost g_cap = capped.gemm_time(8192, 8192, 8192, 1, NumberFormat::kBf16);
  ASSERT_EQ(g_full.bound, KernelBound::kCompute);
  EXPECT_NEAR(g_cap.compute_s, g_full.compute_s / f, 1e-12 * g_full.compute_s);
  EXPECT_GT(g_cap.time_s, 1.2 * g_full.time_s);
  // Flash attention is tensor-core work too.
  AttentionShape a;
  a.batch = 2;
  a.heads = 32;
  a.kv_heads = 8;
  a.q_len = a.kv_len = 8192;
  a.head_dim = 128;
  const KernelCost a_full = full.attention_time(a, Pass::kForward, true, NumberFormat::kBf16);
  const KernelCost a_cap = capped.attention_time(a, Pass::kForward, true, NumberFormat::kBf16);
  EXPECT_NEAR(a_cap.compute_s, a_full.compute_s / f, 1e-9 * a_full.compute_s);
  // A memory-bound kernel is the same at any cap.
  EXPECT_DOUBLE_EQ(capped.memory_bound_time(1e9, 1e8, NumberFormat::kBf16).time_s,
                   full.memory_bound_time(1e9, 1e8, NumberFormat::kBf16).time_s);
  // A GEMM skinny enough to be memory-bound barely changes.
  const KernelCost thin_full = full.gemm_time(262144, 8, 4096, 1, NumberFormat::kBf16);
  const KernelCost thin_cap = capped.gemm_time(262144, 8, 4096, 1, NumberFormat::kBf16);
  ASSERT_EQ(thin_full.bound, KernelBound::kMemory);
  EXPECT_DOUBLE_EQ(thin_cap.time_s, thin_full.time_s);
}

GpuSpec named(const char* name, double bf16_tflops, int sms) {
  GpuSpec g = h100();
  g.name = name;
  set_peak(g, NumberFormat::kBf16, bf16_tflops * 1e12);
  set_peak(g, NumberFormat::kFp16, bf16_tflops * 1e12);
  set_peak(g, NumberFormat::kFp8, 2 * bf16_tflops * 1e12);
  g.sms = sms;
  return g;
}

TEST(SustainedPlateau, BlackwellBurstsRunAtTheSettledClock) {
  // B200: MAMF 1745 of 2250 TFLOP/s, a burst, x 0.853 [N22].
  const KernelEfficiency b200 = default_kernel_efficiency(named("B200", 2250, 148));
  EXPECT_NEAR(b200.plateau(NumberFormat::kBf16), 1745.0 / 2250 * 0.853, 1e-9);
  const KernelEfficiency gb200 = default_kernel_efficiency(named("GB200", 2500, 148));
  EXPECT_NEAR(gb200.plateau(NumberFormat::kBf16), 1822.0 / 2500 * 0.853, 1e-9);
  // GB200 fp8 has sustained measurements [S27] (2876.6 TFLOP/s at 8192^3),
  // well below MAMF's burst 3615.6: the model reproduces the sweep.
  const GpuModel gb200_model(named("GB200", 2500, 148), gb200);
  const KernelCost fp8 = gb200_model.gemm_time(8192, 8192, 8192, 1, NumberFormat::kFp8);
  EXPECT_NEAR(fp8.flops / fp8.time_s / 1e12, 2876.6, 0.05 * 2876.6);
}

TEST(SustainedPlateau, AmdFromItsOneSecondRuns) {
  // 708 / 843 TFLOP/s at 4096x4864x32896 [N11]: one full wave on 304 CUs,
  // K ramp 32896 / (32896 + 128).
  const double ramp = 32896.0 / (32896 + 128);
  const KernelEfficiency mi300x = default_kernel_efficiency(named("MI300X", 1307.4, 304));
  const KernelEfficiency mi325x = default_kernel_efficiency(named("MI325X", 1307.4, 304));
  EXPECT_NEAR(mi300x.plateau(NumberFormat::kBf16) * ramp * 1307.4, 708, 0.005 * 708);
  EXPECT_NEAR(mi325x.plateau(NumberFormat::kBf16) * ramp * 1307.4, 843, 0.005 * 843);
  // The same die at 1000 W against 750 W: the power model's factor is what
  // the two measurements show (1.177 against 843/708 = 1.191).
  GpuSpec at750 = named("MI325X", 1307.4, 304);
  at750.board_power_w = 1000;
  at750.power_limit_w = 750;
  EXPECT_NEAR(1.0 / tensor_power_factor(at750), 843.0 / 708.0, 0.02);
}

}  // namespace
}  // namespace podsim::hwmodels
