#include "calibration/profile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "calibration/datasheet.h"
#include "calibration/summary.h"

namespace podsim::calibration {
namespace {

Provenance h200_provenance() {
  Provenance p;
  p.gpu_name = "NVIDIA H200";
  p.compute_capability_major = 9;
  p.compute_capability_minor = 0;
  p.sm_count = 132;
  p.device_count = 1;
  p.hbm_bytes = 150e9;
  p.l2_bytes = 50.0 * 1024 * 1024;
  p.memory_bus_width_bits = 6144;
  p.sm_clock_hz_reported = 1.98e9;
  p.mem_clock_hz_reported = 3.2e9;
  p.sm_clock_hz_measured = 1.98e9;
  p.driver_version = "13.0";
  p.runtime_version = "13.0";
  p.cublas_version = "13.0.0";
  p.date_utc = "2025-01-01T00:00:00Z";
  p.command_line = "podsim calibrate --out x.json";
  p.podsim_version = "0.1.0";
  return p;
}

// Repeats around a median of t (the median of {0.98t, t, 1.03t} is t).
std::vector<double> repeats(double t) { return {0.98 * t, t, 1.03 * t}; }

Series alpha_beta_series(const std::string& name, double alpha, double beta) {
  Series s;
  s.name = name;
  s.work_unit = "bytes";
  s.attributes["fit"] = "alpha_beta";
  for (double bytes = 1 << 20; bytes <= 4.0 * (1 << 30); bytes *= 4) {
    Point p;
    p.params["bytes"] = bytes;
    p.work = bytes;
    p.times_s = repeats(alpha + bytes / beta);
    s.points.push_back(p);
  }
  return s;
}

// A run of known parameters: HBM triad 4 us + 4.2 TB/s, a GEMM surface, an
// attention curve, an L2 sweep, the fp32 and tensor peaks.
RawMeasurements synthetic_run() {
  RawMeasurements raw;
  raw.provenance = h200_provenance();
  raw.scalars["fp32.fma.flops_per_s"] = 66.0e12;
  raw.scalars["tensor.wgmma.bf16.flops_per_s"] = 900e12;
  raw.series.push_back(alpha_beta_series("hbm.triad", 4e-6, 4.2e12));

  Series gemm;
  gemm.name = "gemm.bf16";
  gemm.work_unit = "flops";
  gemm.attributes = {{"fit", "gemm_efficiency"}, {"dtype", "bf16"}};
  for (double mn : {512.0, 2048.0, 8192.0}) {
    for (double k : {256.0, 1024.0, 4096.0}) {
      const double eff = 0.8 * k / (k + 200) * (mn * mn) / (mn * mn + 1e6);
      Point p;
      p.params = {{"m", mn}, {"n", mn}, {"k", k}};
      p.work = 2 * mn * mn * k;
      p.times_s = repeats(p.work / (eff * 989.4e12));
      gemm.points.push_back(p);
    }
  }
  raw.series.push_back(gemm);

  Series attn;
  attn.name = "attention.fwd";
  attn.work_unit = "flops";
  attn.attributes = {{"fit", "saturating"}, {"dtype", "bf16"}, {"x", "seq"}};
  for (double s : {512.0, 1024.0, 2048.0, 4096.0, 8192.0}) {
    const double eff = 0.5 * s / (s + 700);
    Point p;
    p.params = {{"seq", s}, {"head_dim", 128}};
    p.work = 1e12;
    p.times_s = repeats(p.work / (eff * 989.4e12));
    attn.points.push_back(p);
  }
  raw.series.push_back(attn);

  Series l2;
  l2.name = "l2";
  l2.work_unit = "bytes";
  l2.attributes = {{"fit", "working_set"}};
  for (double mib = 1; mib <= 1024; mib *= 2) {
    Point p;
    p.params["working_set_bytes"] = mib * 1024 * 1024;
    p.work = 1e10;
    p.times_s =
        repeats(p.work / (mib <= 16 ? 8e12 : (mib >= 128 ? 4e12 : (mib <= 32 ? 7e12 : 5e12))));
    l2.points.push_back(p);
  }
  raw.series.push_back(l2);
  return raw;
}

TEST(BuildProfile, FitsRecoverTheParametersOfASyntheticRun) {
  const Profile p = build_profile(synthetic_run(), find_datasheet("NVIDIA H200"));
  EXPECT_TRUE(p.errors.empty()) << p.errors.front();
  ASSERT_NE(p.find_fit("hbm.triad"), nullptr);
  EXPECT_NEAR(p.find_fit("hbm.triad")->param("beta_per_s"), 4.2e12, 0.01 * 4.2e12);
  EXPECT_NEAR(p.find_fit("hbm.triad")->param("alpha_s"), 4e-6, 0.05 * 4e-6);
  EXPECT_EQ(p.find_fit("hbm.triad")->series, "hbm.triad");

  // Efficiencies are fractions of the datasheet peak.
  EXPECT_EQ(p.reference_peak_flops_per_s.at("bf16"), 989.4e12);
  const Fit* g = p.find_fit("gemm.bf16");
  ASSERT_NE(g, nullptr);
  EXPECT_NEAR(g->param("e_max"), 0.8, 0.01);
  EXPECT_NEAR(g->param("k_half"), 200, 5);
  EXPECT_NEAR(g->param("mn_half"), 1e6, 0.03e6);
  EXPECT_EQ(g->param("reference_flops_per_s"), 989.4e12);
  EXPECT_LT(g->rms_rel_error, 1e-6);

  const Fit* a = p.find_fit("attention.fwd");
  ASSERT_NE(a, nullptr);
  EXPECT_NEAR(a->param("y_max"), 0.5, 0.005);
  EXPECT_NEAR(a->param("x_half"), 700, 10);

  // L2: 8 TB/s plateau, 4 TB/s memory, crossing sqrt(32) ~ 5.66 TB/s between 32 and 64 MiB.
  EXPECT_NEAR(*p.find_derived("l2.cache_bw_bytes_per_s"), 8e12, 1e9);
  EXPECT_NEAR(*p.find_derived("l2.memory_bw_bytes_per_s"), 4e12, 1e9);
  const double cap = *p.find_derived("l2.cache_capacity_bytes");
  EXPECT_GT(cap, 32.0 * 1024 * 1024);
  EXPECT_LT(cap, 64.0 * 1024 * 1024);

  // fp32 per clock per SM: 66e12 / (1.98e9 * 132) = 252.5 (an H100 SM does 256).
  EXPECT_NEAR(*p.find_derived("fp32.fma.flops_per_clock_per_sm"), 66e12 / (1.98e9 * 132), 1e-9);
}

TEST(BuildProfile, WithoutDatasheetUsesMeasuredPeaks) {
  RawMeasurements raw = synthetic_run();
  raw.provenance.gpu_name = "Some Future GPU";
  const Profile p = build_profile(raw, find_datasheet(raw.provenance.gpu_name));
  EXPECT_EQ(p.reference_peak_flops_per_s.at("bf16"), 900e12);
  EXPECT_EQ(p.reference_peak_flops_per_s.at("tf32"), 450e12);
  EXPECT_NE(p.reference_peak_source.find("measured"), std::string::npos);
  // The same achieved rates against a lower peak give a higher efficiency.
  EXPECT_NEAR(p.find_fit("gemm.bf16")->param("e_max"), 0.8 * 989.4 / 900, 0.01);
}

TEST(BuildProfile, FailedChecksAndFailedFitsBecomeErrorsNotExceptions) {
  RawMeasurements raw = synthetic_run();
  for (Point& pt : raw.series[0].points) pt.check_passed = false;  // hbm.triad
  raw.errors.push_back("nccl: skipped, 1 GPU");
  const Profile p = build_profile(raw, std::nullopt);
  EXPECT_EQ(p.find_fit("hbm.triad"), nullptr);
  ASSERT_GE(p.errors.size(), 3u);
  EXPECT_EQ(p.errors[0], "nccl: skipped, 1 GPU");
  EXPECT_NE(p.errors[1].find("failed their correctness check"), std::string::npos);
  EXPECT_NE(p.errors[2].find("fit hbm.triad"), std::string::npos);
}

TEST(BuildProfile, NonFiniteNumbersAreDroppedSoTheProfileStillWrites) {
  RawMeasurements raw = synthetic_run();
  raw.scalars["fp32.fma.flops_per_s"] = INFINITY;
  raw.series[0].points[0].times_s.push_back(NAN);
  const Profile p = build_profile(raw, std::nullopt);
  EXPECT_EQ(p.raw.scalars.count("fp32.fma.flops_per_s"), 0u);
  EXPECT_EQ(p.derived.count("fp32.fma.flops_per_s"), 0u);
  EXPECT_EQ(p.raw.series[0].points[0].times_s.size(), 3u);
  EXPECT_FALSE(p.raw.series[0].points[0].check_passed);
  bool said = false;
  for (const std::string& e : p.errors)
    said = said || e.find("non-finite samples dropped") != std::string::npos;
  EXPECT_TRUE(said);
  // And it round-trips.
  EXPECT_EQ(profile_to_json(profile_from_json(profile_to_json(p), "x")), profile_to_json(p));
}

class TempFile {
 public:
  TempFile()
      : path_((std::filesystem::temp_directory_path() /
               ("podsim_profile_test_" +
                std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json"))
                  .string()) {}
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ProfileJson, RoundTripsEveryFieldAndIsByteStable) {
  RawMeasurements raw = synthetic_run();
  raw.errors.push_back("p2p: 1 GPU");
  raw.skipped.push_back("multi-gpu: 1 GPU");
  raw.series[0].points[0].check_passed = false;
  raw.provenance.nccl_version = "2.27.7";
  raw.provenance.quick = true;
  const Profile p = build_profile(raw, find_datasheet("NVIDIA H200"));
  TempFile f;
  write_profile(p, f.path());
  const Profile q = read_profile(f.path());
  EXPECT_EQ(profile_to_json(q), profile_to_json(p));
  EXPECT_EQ(q.raw.provenance.gpu_name, "NVIDIA H200");
  EXPECT_EQ(q.raw.provenance.compute_capability_major, 9);
  EXPECT_TRUE(q.raw.provenance.quick);
  EXPECT_EQ(q.raw.series.size(), p.raw.series.size());
  EXPECT_EQ(q.raw.series[1].points[4].times_s, p.raw.series[1].points[4].times_s);
  EXPECT_FALSE(q.raw.series[0].points[0].check_passed);
  EXPECT_EQ(q.fits.at("gemm.bf16").params, p.fits.at("gemm.bf16").params);
  EXPECT_EQ(q.errors, p.errors);
  EXPECT_EQ(q.raw.errors, p.raw.errors);
  EXPECT_EQ(q.raw.skipped, std::vector<std::string>{"multi-gpu: 1 GPU"});
  // Same profile, same bytes: building twice gives identical text.
  EXPECT_EQ(profile_to_json(build_profile(raw, find_datasheet("NVIDIA H200"))), profile_to_json(p));
}

std::string valid_text() { return profile_to_json(build_profile(synthetic_run(), std::nullopt)); }

std::string error_of(const std::string& text) {
  try {
    profile_from_json(text, "prof.json");
  } catch (const ProfileError& e) {
    return e.what();
  }
  return "";
}

TEST(ProfileJson, RejectsOtherSchemasAndVersionsWithAFix) {
  std::string text = valid_text();
  const std::string v1 = "\"schema_version\": 1";
  ASSERT_NE(text.find(v1), std::string::npos);
  std::string newer = text;
  newer.replace(newer.find(v1), v1.size(), "\"schema_version\": 2");
  const std::string e_new = error_of(newer);
  EXPECT_NE(e_new.find("prof.json: $.schema_version: written by a newer podsim"), std::string::npos)
      << e_new;
  EXPECT_NE(e_new.find("update podsim"), std::string::npos) << e_new;
  std::string older = text;
  older.replace(older.find(v1), v1.size(), "\"schema_version\": 0");
  EXPECT_NE(error_of(older).find("older podsim"), std::string::npos);

  const std::string e_schema = error_of("{\"schema\": \"something.else\"}");
  EXPECT_NE(e_schema.find("$.schema: not a podsim calibration profile"), std::string::npos)
      << e_schema;
  EXPECT_NE(error_of("{ nope").find("prof.json: not valid JSON"), std::string::npos);
}

TEST(ProfileJson, NamesTheJsonPathOfABadField) {
  std::string text = valid_text();
  const std::string key = "\"sm_count\": 132";
  ASSERT_NE(text.find(key), std::string::npos);
  text.replace(text.find(key), key.size(), "\"sm_count\": \"many\"");
  const std::string e = error_of(text);
  EXPECT_NE(e.find("prof.json: $.provenance.sm_count: expected an integer, found string"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("podsim calibrate --out FILE"), std::string::npos) << e;

  std::string no_fits = valid_text();
  no_fits.replace(no_fits.find("\"fits\""), 6, "\"fitz\"");
  EXPECT_NE(error_of(no_fits).find("$.fits: missing"), std::string::npos);
}

TEST(ProfileJson, MissingFileSaysHowToMakeOne) {
  try {
    read_profile("/nonexistent/dir/h200.json");
    FAIL() << "expected ProfileError";
  } catch (const ProfileError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("/nonexistent/dir/h200.json: cannot open"), std::string::npos) << msg;
    EXPECT_NE(msg.find("podsim calibrate --out"), std::string::npos) << msg;
  }
}

TEST(Datasheet, MatchesDeviceNamesAndRefusesPcieParts) {
  ASSERT_TRUE(find_datasheet("NVIDIA H200").has_value());
  EXPECT_EQ(find_datasheet("NVIDIA H200")->hbm_bw_bytes_per_s, 4.8e12);
  EXPECT_EQ(find_datasheet("NVIDIA H100 80GB HBM3")->hbm_bw_bytes_per_s, 3.35e12);
  EXPECT_EQ(find_datasheet("NVIDIA A100-SXM4-80GB")->tensor("bf16"), 312e12);
  EXPECT_EQ(find_datasheet("NVIDIA A100-SXM4-80GB")->tensor("fp8"), 0.0);
  EXPECT_FALSE(find_datasheet("NVIDIA H100 PCIe").has_value());
  EXPECT_FALSE(find_datasheet("NVIDIA GeForce RTX 4090").has_value());
}

TEST(Summary, ComparesMeasuredWithDatasheet) {
  const auto sheet = find_datasheet("NVIDIA H200");
  const Profile p = build_profile(synthetic_run(), sheet);
  const std::vector<SummaryRow> rows = summary_rows(p, sheet);
  const SummaryRow* triad = nullptr;
  for (const SummaryRow& r : rows) {
    if (r.quantity == "HBM triad asymptote") triad = &r;
  }
  ASSERT_NE(triad, nullptr);
  EXPECT_NEAR(triad->measured, 4200.0, 42.0);
  EXPECT_EQ(triad->datasheet, 4800.0);
  const std::string text = format_summary(p, sheet);
  EXPECT_NE(text.find("HBM triad asymptote"), std::string::npos);
  EXPECT_NE(text.find("87.5%"), std::string::npos) << text;  // 4200 / 4800
  EXPECT_NE(text.find("datasheet: NVIDIA H200 SXM 141GB"), std::string::npos);
}

}  // namespace
}  // namespace podsim::calibration
