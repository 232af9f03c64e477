// Building a profile from raw measurements: the fits and derived values.
// Its JSON form (write, read, check) is profile_json.cc.
#include "calibration/profile.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace podsim::calibration {
namespace {

std::string attribute(const Series& s, const std::string& key) {
  const auto it = s.attributes.find(key);
  return it == s.attributes.end() ? std::string() : it->second;
}

double param_or(const Point& p, const std::string& key, double fallback) {
  const auto it = p.params.find(key);
  return it == p.params.end() ? fallback : it->second;
}

double scalar_or(const RawMeasurements& raw, const std::string& key, double fallback) {
  const auto it = raw.scalars.find(key);
  return it == raw.scalars.end() ? fallback : it->second;
}

// Points whose result was right and whose time is usable.
std::vector<const Point*> usable_points(const Series& s, std::vector<std::string>& errors) {
  std::vector<const Point*> out;
  int failed = 0;
  for (const Point& p : s.points) {
    if (!p.check_passed) {
      ++failed;
      continue;
    }
    if (p.median_s() > 0 && std::isfinite(p.median_s())) out.push_back(&p);
  }
  if (failed > 0) {
    errors.push_back("series " + s.name + ": " + std::to_string(failed) +
                     " point(s) failed their correctness check and were left out of the fit");
  }
  return out;
}

void set_reference_peaks(Profile& p, const std::optional<Datasheet>& datasheet) {
  const RawMeasurements& raw = p.raw;
  if (datasheet) {
    for (const auto& [format, rate] : datasheet->tensor_flops_per_s) {
      if (rate > 0) p.reference_peak_flops_per_s[format] = rate;
    }
    p.reference_peak_source = "datasheet: " + datasheet->name + " (" + datasheet->source + ")";
    return;
  }
  // No datasheet: the best matrix-instruction rate this run measured. TF32 runs
  // at half the BF16 rate on the tensor cores of Ampere and Hopper (hardware.md 1.1).
  const double bf16 = std::max(scalar_or(raw, "tensor.mma_sync.bf16.flops_per_s", 0.0),
                               scalar_or(raw, "tensor.wgmma.bf16.flops_per_s", 0.0));
  const double fp8 = scalar_or(raw, "tensor.wgmma.fp8.flops_per_s", 0.0);
  if (bf16 > 0) {
    p.reference_peak_flops_per_s["bf16"] = bf16;
    p.reference_peak_flops_per_s["fp16"] = bf16;
    p.reference_peak_flops_per_s["tf32"] = bf16 / 2;
  }
  if (fp8 > 0) p.reference_peak_flops_per_s["fp8"] = fp8;
  p.reference_peak_source = "measured matrix-instruction peaks of this run (no datasheet for '" +
                            raw.provenance.gpu_name + "'); tf32 = bf16 / 2";
}

void derive_compute(Profile& p) {
  const Provenance& prov = p.raw.provenance;
  const double clock =
      prov.sm_clock_hz_measured > 0 ? prov.sm_clock_hz_measured : prov.sm_clock_hz_reported;
  if (prov.sm_clock_hz_measured > 0) p.derived["clock.sm_hz_measured"] = prov.sm_clock_hz_measured;
  for (const auto& [name, value] : p.raw.scalars) {
    const std::string suffix = ".flops_per_s";
    if (name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    if (!(value > 0)) continue;
    p.derived[name] = value;
    if (!(clock > 0) || prov.sm_count <= 0) continue;
    const std::string stem = name.substr(0, name.size() - suffix.size());
    p.derived[stem + ".flops_per_clock_per_sm"] = value / (clock * prov.sm_count);
  }
}

void fit_alpha_beta_series(Profile& p, const Series& s) {
  const std::vector<const Point*> pts = usable_points(s, p.errors);
  std::vector<double> work, time;
  double best_rate = 0;
  for (const Point* pt : pts) {
    work.push_back(pt->work);
    time.push_back(pt->median_s());
    best_rate = std::max(best_rate, pt->rate_per_s());
  }
  Fit fit = fit_alpha_beta(work, time);
  fit.series = s.name;
  fit.description = "t(w) = alpha_s + w / beta_per_s, w in " + s.work_unit + " per operation";
  p.derived[s.name + ".max_rate_per_s"] = best_rate;
  const std::string factor = attribute(s, "busbw_factor");
  if (!factor.empty()) {
    const double f = std::stod(factor);
    p.derived[s.name + ".busbw_max_bytes_per_s"] = fit.param("beta_per_s") * f;
    p.derived[s.name + ".best_busbw_bytes_per_s"] = best_rate * f;
  }
  p.fits[s.name] = std::move(fit);
}

double reference_for(const Profile& p, const Series& s) {
  const std::string dtype = attribute(s, "dtype");
  const auto it = p.reference_peak_flops_per_s.find(dtype);
  if (it == p.reference_peak_flops_per_s.end() || !(it->second > 0)) {
    throw FitError("no reference peak for dtype '" + dtype + "'");
  }
  return it->second;
}

void fit_gemm_series(Profile& p, const Series& s) {
  const double ref = reference_for(p, s);
  std::vector<GemmPoint> grid;
  double best = 0;
  for (const Point* pt : usable_points(s, p.errors)) {
    GemmPoint g;
    g.m = param_or(*pt, "m", 0);
    g.n = param_or(*pt, "n", 0);
    g.k = param_or(*pt, "k", 0);
    g.efficiency = pt->rate_per_s() / ref;
    best = std::max(best, pt->rate_per_s());
    grid.push_back(g);
  }
  Fit fit = fit_gemm_efficiency(grid);
  fit.params["reference_flops_per_s"] = ref;
  fit.series = s.name;
  fit.description =
      "efficiency = achieved FLOP/s / reference_flops_per_s = e_max * k/(k + k_half) * mn/(mn + "
      "mn_half)";
  p.derived[s.name + ".best_flops_per_s"] = best;
  p.derived[s.name + ".best_efficiency"] = best / ref;
  p.fits[s.name] = std::move(fit);
}

void fit_saturating_series(Profile& p, const Series& s) {
  const double ref = reference_for(p, s);
  const std::string x_param = attribute(s, "x");
  std::vector<double> x, y;
  double best = 0;
  for (const Point* pt : usable_points(s, p.errors)) {
    x.push_back(param_or(*pt, x_param, 0));
    y.push_back(pt->rate_per_s() / ref);
    best = std::max(best, pt->rate_per_s());
  }
  Fit fit = fit_saturating(x, y);
  fit.params["reference_flops_per_s"] = ref;
  fit.series = s.name;
  fit.description =
      "efficiency = achieved FLOP/s / reference_flops_per_s = y_max * x/(x + x_half), x = " +
      x_param;
  p.derived[s.name + ".best_flops_per_s"] = best;
  p.derived[s.name + ".best_efficiency"] = best / ref;
  p.fits[s.name] = std::move(fit);
}

void analyze_working_set_series(Profile& p, const Series& s) {
  std::vector<double> ws, bw;
  for (const Point* pt : usable_points(s, p.errors)) {
    ws.push_back(param_or(*pt, "working_set_bytes", 0));
    bw.push_back(pt->rate_per_s());
  }
  const double hint = p.raw.provenance.l2_bytes;
  const CacheAnalysis c = analyze_working_set(ws, bw, hint);
  p.derived[s.name + ".cache_capacity_bytes"] = c.capacity_bytes;
  p.derived[s.name + ".cache_bw_bytes_per_s"] = c.cache_bw_bytes_per_s;
  p.derived[s.name + ".memory_bw_bytes_per_s"] = c.memory_bw_bytes_per_s;
}

// JSON has no inf or NaN: a profile never holds them. Whatever is not finite
// is dropped here, with an error saying what, so one bad number cannot cost
// the whole profile.
void drop_non_finite_results(Profile& p) {
  for (auto it = p.fits.begin(); it != p.fits.end();) {
    bool finite = std::isfinite(it->second.rms_rel_error);
    for (const auto& [k, v] : it->second.params) finite = finite && std::isfinite(v);
    if (finite) {
      ++it;
    } else {
      p.errors.push_back("fit " + it->first + ": a parameter is not finite; fit dropped");
      it = p.fits.erase(it);
    }
  }
  for (auto* numbers : {&p.derived, &p.reference_peak_flops_per_s}) {
    for (auto it = numbers->begin(); it != numbers->end();) {
      if (std::isfinite(it->second)) {
        ++it;
      } else {
        p.errors.push_back(it->first + " is not finite; dropped");
        it = numbers->erase(it);
      }
    }
  }
}

void drop_non_finite_samples(Profile& p) {
  for (auto it = p.raw.scalars.begin(); it != p.raw.scalars.end();) {
    if (std::isfinite(it->second)) {
      ++it;
    } else {
      p.errors.push_back(it->first + " is not finite; dropped");
      it = p.raw.scalars.erase(it);
    }
  }
  for (Series& s : p.raw.series) {
    for (Point& pt : s.points) {
      const size_t before = pt.times_s.size();
      std::erase_if(pt.times_s, [](double t) { return !std::isfinite(t); });
      bool finite = std::isfinite(pt.work);
      for (auto& [k, v] : pt.params) {
        if (!std::isfinite(v)) {
          v = 0;
          finite = false;
        }
      }
      if (pt.times_s.size() != before || !finite) {
        p.errors.push_back("series " + s.name + ": non-finite samples dropped");
        if (!std::isfinite(pt.work)) pt.work = 0;
        pt.check_passed = false;
      }
    }
  }
}

}  // namespace

const Fit* Profile::find_fit(const std::string& name) const {
  const auto it = fits.find(name);
  return it == fits.end() ? nullptr : &it->second;
}

std::optional<double> Profile::find_derived(const std::string& name) const {
  const auto it = derived.find(name);
  if (it == derived.end()) return std::nullopt;
  return it->second;
}

Profile build_profile(const RawMeasurements& raw, const std::optional<Datasheet>& datasheet) {
  Profile p;
  p.raw = raw;
  p.errors = raw.errors;
  drop_non_finite_samples(p);
  set_reference_peaks(p, datasheet);
  derive_compute(p);
  for (const Series& s : raw.series) {
    const std::string kind = attribute(s, "fit");
    try {
      if (kind == "alpha_beta") {
        fit_alpha_beta_series(p, s);
      } else if (kind == "gemm_efficiency") {
        fit_gemm_series(p, s);
      } else if (kind == "saturating") {
        fit_saturating_series(p, s);
      } else if (kind == "working_set") {
        analyze_working_set_series(p, s);
      } else if (!kind.empty() && kind != "none") {
        p.errors.push_back("series " + s.name + ": unknown fit '" + kind + "'");
      }
    } catch (const std::exception& e) {
      p.errors.push_back("fit " + s.name + ": " + e.what());
    }
  }
  drop_non_finite_results(p);
  return p;
}

}  // namespace podsim::calibration
