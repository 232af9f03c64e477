#include "scenarios/step/profile_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iomanip>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "calibration/datasheet.h"
#include "calibration/levenberg_marquardt.h"
#include "hwmodels/gpu_model.h"

namespace podsim::scenarios {
namespace {

using calibration::Point;
using calibration::Profile;
using calibration::Series;
using sim::NumberFormat;

constexpr NumberFormat kGemmFormats[] = {NumberFormat::kBf16, NumberFormat::kFp16,
                                         NumberFormat::kTf32, NumberFormat::kFp8};

std::string percent(double fraction) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << 100.0 * fraction << "%";
  return out.str();
}

double param_of(const Point& p, const char* name) {
  auto it = p.params.find(name);
  return it == p.params.end() ? 0.0 : it->second;
}

/// Points of a series that were checked correct and timed.
std::vector<const Point*> usable(const Series* series) {
  std::vector<const Point*> out;
  if (series == nullptr) return out;
  for (const Point& p : series->points) {
    if (p.check_passed && p.median_s() > 0) out.push_back(&p);
  }
  return out;
}

/// One measured kernel and how the model predicts it under trial parameters.
struct Sample {
  double measured_s = 0;
  std::function<double(const hwmodels::GpuModel&)> predict;
};

/// Fits the parameters `set` writes into a KernelEfficiency, minimising
/// log(predicted / measured) over the samples. Returns the RMS relative error
/// (exp of the log residual, minus one) at the optimum.
double fit(hwmodels::KernelEfficiency& params, const hwmodels::GpuSpec& gpu,
           const std::vector<Sample>& samples, Eigen::VectorXd x0,
           const std::function<void(hwmodels::KernelEfficiency&, const Eigen::VectorXd&)>& set) {
  auto residual = [&](const Eigen::VectorXd& x) {
    Eigen::VectorXd r(static_cast<Eigen::Index>(samples.size()));
    hwmodels::KernelEfficiency trial = params;
    set(trial, x);
    if (!hwmodels::validate(trial, gpu).empty()) {
      r.setConstant(std::numeric_limits<double>::quiet_NaN());  // outside the model's range
      return r;
    }
    const hwmodels::GpuModel model(gpu, trial);
    for (size_t i = 0; i < samples.size(); ++i) {
      r(static_cast<Eigen::Index>(i)) = std::log(samples[i].predict(model) / samples[i].measured_s);
    }
    return r;
  };
  const calibration::LmResult best = calibration::levenberg_marquardt(residual, std::move(x0));
  set(params, best.x);
  const Eigen::VectorXd r = residual(best.x);
  double sum = 0;
  for (Eigen::Index i = 0; i < r.size(); ++i) sum += std::pow(std::expm1(r(i)), 2);
  return std::sqrt(sum / static_cast<double>(std::max<Eigen::Index>(1, r.size())));
}

/// The GPU that was measured: `target` with the profile's SM count, tensor
/// peaks and (from its datasheet) memory bandwidth.
hwmodels::GpuSpec measured_gpu(const Profile& profile, hwmodels::GpuSpec gpu) {
  if (profile.raw.provenance.sm_count > 0) gpu.sms = profile.raw.provenance.sm_count;
  for (NumberFormat f : kGemmFormats) {
    auto it = profile.reference_peak_flops_per_s.find(std::string(sim::to_string(f)));
    if (it != profile.reference_peak_flops_per_s.end() && it->second > 0) {
      gpu.peak_flops_per_s[static_cast<size_t>(f)] = it->second;
    }
  }
  if (auto sheet = calibration::find_datasheet(profile.raw.provenance.gpu_name)) {
    if (sheet->hbm_bw_bytes_per_s > 0) gpu.hbm_bw_bytes_per_s = sheet->hbm_bw_bytes_per_s;
    if (sheet->fp32_flops_per_s > 0) {
      gpu.peak_flops_per_s[static_cast<size_t>(NumberFormat::kFp32)] = sheet->fp32_flops_per_s;
    }
  }
  return gpu;
}

}  // namespace

ProfileFit fit_kernel_efficiency(const Profile& profile, const hwmodels::GpuSpec& target,
                                 const std::string& origin) {
  ProfileFit out;
  hwmodels::KernelEfficiency& eff = out.efficiency;
  eff = hwmodels::default_kernel_efficiency(target);
  const hwmodels::GpuSpec gpu = measured_gpu(profile, target);
  // Formats the measured GPU has and the target lacks (fp8 profiled on a
  // Hopper, run on an A100) take the measured GPU's defaults while fitting.
  hwmodels::GpuSpec measured_defaults = gpu;
  measured_defaults.name = profile.raw.provenance.gpu_name;
  const hwmodels::KernelEfficiency fallback =
      hwmodels::default_kernel_efficiency(measured_defaults);
  for (size_t f = 0; f < eff.gemm_plateau.size(); ++f) {
    if (eff.gemm_plateau[f] == 0 && gpu.peak_flops_per_s[f] > 0) {
      eff.gemm_plateau[f] = fallback.gemm_plateau[f];
    }
  }
  const std::string measured = profile.raw.provenance.gpu_name.empty()
                                   ? std::string("the profiled GPU")
                                   : profile.raw.provenance.gpu_name;
  if (gpu.sms != target.sms) {
    out.notes.push_back("the profile measured " + measured + " (" + std::to_string(gpu.sms) +
                        " SMs) and the scenario runs " + target.name + " (" +
                        std::to_string(target.sms) +
                        " SMs): efficiencies carried over as fractions of peak across "
                        "different compute units");
  }
  bool fitted_any = false;

  // Launch overhead first: every other kernel's prediction includes it.
  if (const calibration::Fit* launch = profile.find_fit("launch.stream")) {
    const double per_launch = 1.0 / launch->param("beta_per_s");
    if (std::isfinite(per_launch) && per_launch > 0) {
      eff.launch_overhead_s = per_launch;
      out.notes.push_back("launch overhead " + std::to_string(per_launch * 1e6) +
                          " us from launch.stream");
      fitted_any = true;
    }
  }

  // Memory-bound kernels next (small GEMMs are memory-bound): the achievable
  // HBM fraction from STREAM triad, then the fixed per-kernel latency from the
  // layer kernels.
  if (const calibration::Fit* triad = profile.find_fit("hbm.triad")) {
    const double fraction = triad->param("beta_per_s") / gpu.hbm_bw_bytes_per_s;
    if (fraction > 0 && fraction <= 1) {
      eff.hbm_fraction = fraction;
      out.notes.push_back("HBM: " + percent(fraction) + " of " + measured +
                          "'s datasheet bandwidth from hbm.triad");
      fitted_any = true;
    }
  }
  {
    std::vector<Sample> samples;
    for (const char* name :
         {"kernel.rmsnorm", "kernel.softmax", "kernel.swiglu", "kernel.residual_add"}) {
      for (const Point* p : usable(profile.raw.find(name))) {
        const double bytes = param_of(*p, "bytes");
        if (!(bytes > 0)) continue;
        samples.push_back({p->median_s(), [=](const hwmodels::GpuModel& model) {
                             return model.memory_bound_time(bytes, 0.0, NumberFormat::kBf16).time_s;
                           }});
      }
    }
    if (samples.size() >= 2) {
      Eigen::VectorXd x0(1);
      x0 << std::max(1e-7, eff.mem_latency_s);
      const double rms = fit(eff, gpu, samples, x0,
                             [](auto& e, const Eigen::VectorXd& x) { e.mem_latency_s = x(0); });
      out.notes.push_back("memory-bound kernels: fixed latency " +
                          std::to_string(eff.mem_latency_s * 1e6) + " us from " +
                          std::to_string(samples.size()) + " layer kernels (RMS error " +
                          percent(rms) + ")");
      fitted_any = true;
    }
  }

  // GEMMs: one plateau per measured format and the shared K ramp.
  {
    std::vector<Sample> samples;
    std::vector<NumberFormat> formats;
    for (NumberFormat f : kGemmFormats) {
      const auto points = usable(profile.raw.find("gemm." + std::string(sim::to_string(f))));
      if (points.empty() || !(gpu.peak(f) > 0)) continue;
      formats.push_back(f);
      for (const Point* p : points) {
        const auto m = static_cast<int64_t>(param_of(*p, "m"));
        const auto n = static_cast<int64_t>(param_of(*p, "n"));
        const auto k = static_cast<int64_t>(param_of(*p, "k"));
        if (m <= 0 || n <= 0 || k <= 0) continue;
        samples.push_back({p->median_s(), [=](const hwmodels::GpuModel& model) {
                             return model.gemm_time(m, n, k, 1, f).time_s;
                           }});
      }
    }
    if (samples.size() >= formats.size() + 2) {
      Eigen::VectorXd x0(static_cast<Eigen::Index>(formats.size() + 1));
      for (size_t i = 0; i < formats.size(); ++i) {
        x0(static_cast<Eigen::Index>(i)) = std::max(0.05, eff.plateau(formats[i]));
      }
      x0(static_cast<Eigen::Index>(formats.size())) = eff.gemm_k_overhead;
      const double rms = fit(eff, gpu, samples, x0, [&](auto& e, const Eigen::VectorXd& x) {
        for (size_t i = 0; i < formats.size(); ++i) {
          e.gemm_plateau[static_cast<size_t>(formats[i])] = x(static_cast<Eigen::Index>(i));
        }
        e.gemm_k_overhead = x(static_cast<Eigen::Index>(formats.size()));
      });
      std::ostringstream note;
      note << "GEMM:";
      for (NumberFormat f : formats) {
        note << " " << sim::to_string(f) << " plateau " << percent(eff.plateau(f));
      }
      note << ", K overhead " << static_cast<int>(eff.gemm_k_overhead) << " from " << samples.size()
           << " cuBLASLt GEMMs (RMS error " << percent(rms) << ")";
      out.notes.push_back(note.str());
      fitted_any = true;
    } else {
      out.notes.push_back("GEMM: no usable gemm.* series; datasheet defaults kept");
    }
  }

  // Flash attention: forward and backward plateaus and the sequence ramp.
  {
    std::vector<Sample> samples;
    for (const char* name : {"attention.fwd", "attention.bwd"}) {
      const bool backward = std::string(name) == "attention.bwd";
      for (const Point* p : usable(profile.raw.find(name))) {
        hwmodels::AttentionShape shape;
        shape.batch = static_cast<int64_t>(param_of(*p, "batch"));
        shape.heads = static_cast<int64_t>(param_of(*p, "heads_q"));
        shape.kv_heads = static_cast<int64_t>(param_of(*p, "heads_kv"));
        shape.q_len = shape.kv_len = static_cast<int64_t>(param_of(*p, "seq"));
        shape.head_dim = static_cast<int64_t>(param_of(*p, "head_dim"));
        shape.causal = param_of(*p, "causal") != 0;
        if (shape.batch <= 0 || shape.heads <= 0 || shape.kv_heads <= 0 || shape.q_len <= 0 ||
            shape.head_dim <= 0) {
          continue;
        }
        const hwmodels::Pass pass = backward ? hwmodels::Pass::kBackward : hwmodels::Pass::kForward;
        samples.push_back(
            {p->median_s(), [=](const hwmodels::GpuModel& model) {
               return model.attention_time(shape, pass, true, NumberFormat::kBf16).time_s;
             }});
      }
    }
    if (samples.size() >= 4) {
      Eigen::VectorXd x0(3);
      x0 << eff.attn_fwd_plateau, eff.attn_bwd_plateau, eff.attn_kv_half;
      const double rms = fit(eff, gpu, samples, x0, [](auto& e, const Eigen::VectorXd& x) {
        e.attn_fwd_plateau = x(0);
        e.attn_bwd_plateau = x(1);
        e.attn_kv_half = x(2);
      });
      out.notes.push_back("attention: forward plateau " + percent(eff.attn_fwd_plateau) +
                          ", backward " + percent(eff.attn_bwd_plateau) + ", ramp half at " +
                          std::to_string(static_cast<int>(eff.attn_kv_half)) + " keys, from " +
                          std::to_string(samples.size()) + " kernels (RMS error " + percent(rms) +
                          "; podsim's own flash kernels: a lower bound on cuDNN/FA3)");
      fitted_any = true;
    } else {
      out.notes.push_back("attention: no usable attention.* series; datasheet defaults kept");
    }
  }

  if (!fitted_any) {
    throw calibration::ProfileError(origin +
                                    ": the profile has no usable measurements for the GPU "
                                    "kernel model (no launch, gemm, attention, hbm or kernel "
                                    "series); run `podsim calibrate` again on the GPU");
  }
  eff.source = hwmodels::ParamSource::kProfile;
  eff.source_note = "calibration profile " + origin + " (" + measured + ", " +
                    profile.raw.provenance.date_utc + ")";
  return out;
}

std::vector<std::string> apply_scale_up_profile(const Profile& profile,
                                                hwmodels::ClusterSpec& cluster) {
  std::vector<std::string> notes;
  const double line_rate = cluster.scale_up.bw_bytes_per_s;
  if (!(line_rate > 0)) return notes;
  // The largest NCCL all-reduce the profile fitted (most GPUs: the ring
  // crosses the most links).
  const calibration::Fit* nccl = nullptr;
  int ranks = 0;
  for (const auto& [name, fit] : profile.fits) {
    const std::string prefix = "nccl.all_reduce.n";
    if (name.rfind(prefix, 0) != 0) continue;
    const int n = std::atoi(name.c_str() + prefix.size());
    if (n > ranks) {
      ranks = n;
      nccl = &fit;
    }
  }
  double achieved = 0;
  std::string from;
  if (nccl != nullptr && ranks > 1) {
    achieved = nccl->param("beta_per_s") * 2.0 * (ranks - 1) / ranks;
    from = "NCCL all-reduce bus bandwidth over " + std::to_string(ranks) + " GPUs";
  } else if (const calibration::Fit* p2p = profile.find_fit("p2p.unidir")) {
    achieved = p2p->param("beta_per_s");
    from = "peer-to-peer copy rate";
  }
  if (!(achieved > 0)) {
    constexpr std::string_view kUnchanged =
        "the profile has no multi-GPU measurements (peer-to-peer or NCCL): the scale-up link "
        "model is unchanged";
    notes.emplace_back(kUnchanged);
    return notes;
  }
  cluster.scale_up.efficiency = std::min(1.0, achieved / line_rate);
  notes.push_back("scale-up link efficiency " + percent(cluster.scale_up.efficiency) + " of " +
                  std::to_string(static_cast<int>(line_rate / 1e9)) + " GB/s from the " + from);
  return notes;
}

Result<CalibratedHardware> calibrated_hardware(const ScenarioSpec& spec,
                                               const std::string& profile_path) {
  const std::string path = profile_path.empty() ? spec.cluster.gpu.profile : profile_path;
  if (path.empty()) {
    hwmodels::GpuModel gpu(spec.cluster.gpu);
    const std::string source(hwmodels::to_string(gpu.source()));
    return CalibratedHardware{std::move(gpu), spec.cluster, source, {}};
  }
  auto unusable = [&](const char* why) {
    return std::vector<Problem>{{profile_path.empty() ? "/cluster/gpu/profile" : "--profile", why,
                                 "give the path of a profile written by `podsim calibrate`"}};
  };
  try {
    const Profile profile = calibration::read_profile(path);
    ProfileFit fit = fit_kernel_efficiency(profile, spec.cluster.gpu, path);
    hwmodels::ClusterSpec cluster = spec.cluster;
    for (std::string& note : apply_scale_up_profile(profile, cluster)) {
      fit.notes.push_back(std::move(note));
    }
    return CalibratedHardware{hwmodels::GpuModel(cluster.gpu, fit.efficiency), std::move(cluster),
                              "profile " + path, std::move(fit.notes)};
  } catch (const calibration::ProfileError& e) {
    return unusable(e.what());
  } catch (const std::invalid_argument& e) {  // fitted parameters out of range
    return unusable(e.what());
  }
}

}  // namespace podsim::scenarios
