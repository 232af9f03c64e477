#include "scenarios/step/profile_fit.h"

#include <gtest/gtest.h>

#include "calibration/datasheet.h"
#include "calibration/profile.h"
#include "hwmodels/gpu_model.h"
#include "tests/hwmodels/test_specs.h"
#include "tests/scenarios/step/synthetic_profile.h"

namespace podsim::scenarios {
namespace {

using calibration::RawMeasurements;
using calibration::Series;
using sim::NumberFormat;
using testing::point;
using testing::synthetic_profile;
using testing::truth;

TEST(ProfileFit, RecoversTheParametersOfTheMeasuredGpu) {
  const hwmodels::GpuSpec gpu = hwmodels::testing::h100();
  const hwmodels::KernelEfficiency want = truth(gpu);
  const ProfileFit fit = fit_kernel_efficiency(synthetic_profile(), gpu, "synthetic.json");
  const hwmodels::KernelEfficiency& got = fit.efficiency;
  EXPECT_EQ(got.source, hwmodels::ParamSource::kProfile);
  EXPECT_NEAR(got.launch_overhead_s, want.launch_overhead_s, 0.01e-6);
  EXPECT_NEAR(got.plateau(NumberFormat::kBf16), 0.74, 0.005);
  EXPECT_NEAR(got.plateau(NumberFormat::kFp8), 0.61, 0.005);
  EXPECT_NEAR(got.gemm_k_overhead, 220, 5);
  EXPECT_NEAR(got.attn_fwd_plateau, 0.52, 0.005);
  EXPECT_NEAR(got.attn_bwd_plateau, 0.41, 0.005);
  EXPECT_NEAR(got.attn_kv_half, 350, 10);
  EXPECT_NEAR(got.hbm_fraction, 0.86, 0.002);
  EXPECT_NEAR(got.mem_latency_s, 2.5e-6, 0.1e-6);
  // Formats the profile did not measure keep their datasheet plateau.
  EXPECT_DOUBLE_EQ(got.plateau(NumberFormat::kTf32),
                   hwmodels::default_kernel_efficiency(gpu).plateau(NumberFormat::kTf32));
  EXPECT_FALSE(fit.notes.empty());
}

TEST(ProfileFit, AProfileWithNothingUsableIsAnError) {
  calibration::Profile empty;
  EXPECT_THROW(fit_kernel_efficiency(empty, hwmodels::testing::h100(), "empty.json"),
               calibration::ProfileError);
}

TEST(ProfileFit, ADifferentSmCountIsCarriedOverWithANote) {
  hwmodels::GpuSpec other = hwmodels::testing::a100();
  const ProfileFit fit = fit_kernel_efficiency(synthetic_profile(), other, "synthetic.json");
  bool noted = false;
  for (const std::string& n : fit.notes) noted = noted || n.find("carried over") != n.npos;
  EXPECT_TRUE(noted);
}

TEST(ProfileFit, ScaleUpEfficiencyFromPeerCopiesOrNcclAndUnchangedWithOneGpu) {
  hwmodels::ClusterSpec cluster;
  cluster.scale_up.bw_bytes_per_s = 450e9;
  cluster.scale_up.efficiency = 0.822;
  // One GPU: nothing measured between GPUs, nothing changes.
  hwmodels::ClusterSpec single = cluster;
  const auto none = apply_scale_up_profile(synthetic_profile(), single);
  EXPECT_DOUBLE_EQ(single.scale_up.efficiency, 0.822);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_NE(none[0].find("unchanged"), std::string::npos);

  // Peer copies at 396 GB/s (the H200 pair of hardware.md 3.2).
  RawMeasurements raw;
  raw.provenance.gpu_name = "NVIDIA H200";
  Series p2p{"p2p.unidir", "bytes", "", {{"fit", "alpha_beta"}}, {}};
  for (double bytes : {16e6, 256e6, 1e9}) {
    p2p.points.push_back(point({{"bytes", bytes}}, bytes, 5e-6 + bytes / 396e9));
  }
  raw.series.push_back(p2p);
  const calibration::Profile with_p2p = calibration::build_profile(raw, std::nullopt);
  hwmodels::ClusterSpec from_p2p = cluster;
  apply_scale_up_profile(with_p2p, from_p2p);
  EXPECT_NEAR(from_p2p.scale_up.efficiency, 396.0 / 450.0, 1e-3);

  // An 8-GPU NCCL all-reduce whose bus bandwidth is 368 GB/s wins over p2p.
  Series nccl{"nccl.all_reduce.n8", "bytes", "", {{"fit", "alpha_beta"}}, {}};
  const double algbw = 368e9 * 8.0 / 14.0;
  for (double bytes : {64e6, 1e9, 8e9}) {
    nccl.points.push_back(point({{"bytes", bytes}, {"ranks", 8}}, bytes, 30e-6 + bytes / algbw));
  }
  raw.series.push_back(nccl);
  hwmodels::ClusterSpec from_nccl = cluster;
  apply_scale_up_profile(calibration::build_profile(raw, std::nullopt), from_nccl);
  EXPECT_NEAR(from_nccl.scale_up.efficiency, 368.0 / 450.0, 1e-3);
}

}  // namespace
}  // namespace podsim::scenarios
