#include "calibration/profile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

namespace podsim::calibration {
namespace {

using nlohmann::json;

// ---------------------------------------------------------------- building

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

// ---------------------------------------------------------------- JSON out

json to_json(const Provenance& v) {
  return json{{"gpu_name", v.gpu_name},
              {"compute_capability", std::to_string(v.compute_capability_major) + "." +
                                         std::to_string(v.compute_capability_minor)},
              {"sm_count", v.sm_count},
              {"device_count", v.device_count},
              {"hbm_bytes", v.hbm_bytes},
              {"l2_bytes", v.l2_bytes},
              {"memory_bus_width_bits", v.memory_bus_width_bits},
              {"sm_clock_hz_reported", v.sm_clock_hz_reported},
              {"mem_clock_hz_reported", v.mem_clock_hz_reported},
              {"sm_clock_hz_measured", v.sm_clock_hz_measured},
              {"driver_version", v.driver_version},
              {"runtime_version", v.runtime_version},
              {"cublas_version", v.cublas_version},
              {"nccl_version", v.nccl_version},
              {"date_utc", v.date_utc},
              {"command_line", v.command_line},
              {"podsim_version", v.podsim_version},
              {"quick", v.quick}};
}

// Non-finite numbers have no JSON form; a profile never holds them.
double finite_or_throw(double v, const std::string& what) {
  if (!std::isfinite(v)) throw ProfileError("cannot write a profile: " + what + " is not finite");
  return v;
}

json to_json(const Series& s) {
  json points = json::array();
  for (const Point& p : s.points) {
    json params = json::object();
    for (const auto& [k, v] : p.params) params[k] = finite_or_throw(v, s.name + " param " + k);
    json times = json::array();
    for (double t : p.times_s) times.push_back(finite_or_throw(t, s.name + " time"));
    points.push_back(json{{"params", params},
                          {"times_s", times},
                          {"work", finite_or_throw(p.work, s.name + " work")},
                          {"check_passed", p.check_passed}});
  }
  return json{{"name", s.name},
              {"work_unit", s.work_unit},
              {"description", s.description},
              {"attributes", s.attributes},
              {"points", points}};
}

json to_json(const Fit& f, const std::string& name) {
  json params = json::object();
  for (const auto& [k, v] : f.params) params[k] = finite_or_throw(v, "fit " + name + " param " + k);
  return json{{"model", f.model},
              {"params", params},
              {"rms_rel_error", finite_or_throw(f.rms_rel_error, "fit " + name + " error")},
              {"points", f.points},
              {"series", f.series},
              {"description", f.description}};
}

// ---------------------------------------------------------------- JSON in

class Reader {
 public:
  explicit Reader(std::string_view origin) : origin_(origin) {}

  [[noreturn]] void fail(const std::string& path, const std::string& problem,
                         const std::string& fix) const {
    throw ProfileError(origin_ + ": " + path + ": " + problem + "; " + fix);
  }

  const json& member(const json& obj, const std::string& path, const std::string& key) const {
    if (!obj.is_object()) fail(path, "expected an object", kRegenerate);
    const auto it = obj.find(key);
    if (it == obj.end()) fail(path + "." + key, "missing", kRegenerate);
    return *it;
  }
  double number(const json& v, const std::string& path) const {
    if (!v.is_number())
      fail(path, "expected a number, found " + std::string(v.type_name()), kRegenerate);
    return v.get<double>();
  }
  int integer(const json& v, const std::string& path) const {
    if (!v.is_number_integer())
      fail(path, "expected an integer, found " + std::string(v.type_name()), kRegenerate);
    constexpr int64_t kLeast = std::numeric_limits<int>::min();
    constexpr int64_t kMost = std::numeric_limits<int>::max();
    const bool fits = v.is_number_unsigned()
                          ? v.get<uint64_t>() <= static_cast<uint64_t>(kMost)
                          : v.get<int64_t>() >= kLeast && v.get<int64_t>() <= kMost;
    if (!fits) fail(path, "integer " + v.dump() + " is out of range", kRegenerate);
    return static_cast<int>(v.get<int64_t>());
  }
  std::string string(const json& v, const std::string& path) const {
    if (!v.is_string())
      fail(path, "expected a string, found " + std::string(v.type_name()), kRegenerate);
    return v.get<std::string>();
  }
  bool boolean(const json& v, const std::string& path) const {
    if (!v.is_boolean())
      fail(path, "expected true or false, found " + std::string(v.type_name()), kRegenerate);
    return v.get<bool>();
  }
  std::map<std::string, double> number_map(const json& v, const std::string& path) const {
    if (!v.is_object()) fail(path, "expected an object of numbers", kRegenerate);
    std::map<std::string, double> out;
    for (const auto& [k, x] : v.items()) out[k] = number(x, path + "." + k);
    return out;
  }
  std::map<std::string, std::string> string_map(const json& v, const std::string& path) const {
    if (!v.is_object()) fail(path, "expected an object of strings", kRegenerate);
    std::map<std::string, std::string> out;
    for (const auto& [k, x] : v.items()) out[k] = string(x, path + "." + k);
    return out;
  }
  const json& array(const json& v, const std::string& path) const {
    if (!v.is_array())
      fail(path, "expected an array, found " + std::string(v.type_name()), kRegenerate);
    return v;
  }

  static constexpr const char* kRegenerate =
      "regenerate the profile with `podsim calibrate --out FILE` on the GPU (see "
      "calibration/profiles/README.md)";

 private:
  std::string origin_;
};

Provenance provenance_from(const Reader& r, const json& j, const std::string& path) {
  Provenance v;
  v.gpu_name = r.string(r.member(j, path, "gpu_name"), path + ".gpu_name");
  const std::string cc =
      r.string(r.member(j, path, "compute_capability"), path + ".compute_capability");
  const size_t dot = cc.find('.');
  if (dot == std::string::npos)
    r.fail(path + ".compute_capability", "expected \"MAJOR.MINOR\", found \"" + cc + "\"",
           Reader::kRegenerate);
  try {
    v.compute_capability_major = std::stoi(cc.substr(0, dot));
    v.compute_capability_minor = std::stoi(cc.substr(dot + 1));
  } catch (const std::exception&) {
    r.fail(path + ".compute_capability", "expected \"MAJOR.MINOR\", found \"" + cc + "\"",
           Reader::kRegenerate);
  }
  v.sm_count = r.integer(r.member(j, path, "sm_count"), path + ".sm_count");
  v.device_count = r.integer(r.member(j, path, "device_count"), path + ".device_count");
  v.hbm_bytes = r.number(r.member(j, path, "hbm_bytes"), path + ".hbm_bytes");
  v.l2_bytes = r.number(r.member(j, path, "l2_bytes"), path + ".l2_bytes");
  v.memory_bus_width_bits =
      r.integer(r.member(j, path, "memory_bus_width_bits"), path + ".memory_bus_width_bits");
  v.sm_clock_hz_reported =
      r.number(r.member(j, path, "sm_clock_hz_reported"), path + ".sm_clock_hz_reported");
  v.mem_clock_hz_reported =
      r.number(r.member(j, path, "mem_clock_hz_reported"), path + ".mem_clock_hz_reported");
  v.sm_clock_hz_measured =
      r.number(r.member(j, path, "sm_clock_hz_measured"), path + ".sm_clock_hz_measured");
  v.driver_version = r.string(r.member(j, path, "driver_version"), path + ".driver_version");
  v.runtime_version = r.string(r.member(j, path, "runtime_version"), path + ".runtime_version");
  v.cublas_version = r.string(r.member(j, path, "cublas_version"), path + ".cublas_version");
  v.nccl_version = r.string(r.member(j, path, "nccl_version"), path + ".nccl_version");
  v.date_utc = r.string(r.member(j, path, "date_utc"), path + ".date_utc");
  v.command_line = r.string(r.member(j, path, "command_line"), path + ".command_line");
  v.podsim_version = r.string(r.member(j, path, "podsim_version"), path + ".podsim_version");
  v.quick = r.boolean(r.member(j, path, "quick"), path + ".quick");
  return v;
}

Series series_from(const Reader& r, const json& j, const std::string& path) {
  Series s;
  s.name = r.string(r.member(j, path, "name"), path + ".name");
  s.work_unit = r.string(r.member(j, path, "work_unit"), path + ".work_unit");
  s.description = r.string(r.member(j, path, "description"), path + ".description");
  s.attributes = r.string_map(r.member(j, path, "attributes"), path + ".attributes");
  const json& pts = r.array(r.member(j, path, "points"), path + ".points");
  for (size_t i = 0; i < pts.size(); ++i) {
    const std::string pp = path + ".points[" + std::to_string(i) + "]";
    Point p;
    p.params = r.number_map(r.member(pts[i], pp, "params"), pp + ".params");
    const json& times = r.array(r.member(pts[i], pp, "times_s"), pp + ".times_s");
    for (size_t t = 0; t < times.size(); ++t) {
      p.times_s.push_back(r.number(times[t], pp + ".times_s[" + std::to_string(t) + "]"));
    }
    p.work = r.number(r.member(pts[i], pp, "work"), pp + ".work");
    p.check_passed = r.boolean(r.member(pts[i], pp, "check_passed"), pp + ".check_passed");
    s.points.push_back(std::move(p));
  }
  return s;
}

Fit fit_from(const Reader& r, const json& j, const std::string& path) {
  Fit f;
  f.model = r.string(r.member(j, path, "model"), path + ".model");
  if (f.model != kAlphaBetaModel && f.model != kSaturatingModel &&
      f.model != kGemmEfficiencyModel) {
    r.fail(path + ".model",
           "unknown model '" + f.model + "' (known: alpha_beta, saturating, gemm_efficiency)",
           Reader::kRegenerate);
  }
  f.params = r.number_map(r.member(j, path, "params"), path + ".params");
  f.rms_rel_error = r.number(r.member(j, path, "rms_rel_error"), path + ".rms_rel_error");
  f.points = r.integer(r.member(j, path, "points"), path + ".points");
  f.series = r.string(r.member(j, path, "series"), path + ".series");
  f.description = r.string(r.member(j, path, "description"), path + ".description");
  return f;
}

std::vector<std::string> strings_from(const Reader& r, const json& j, const std::string& path) {
  std::vector<std::string> out;
  const json& a = r.array(j, path);
  for (size_t i = 0; i < a.size(); ++i)
    out.push_back(r.string(a[i], path + "[" + std::to_string(i) + "]"));
  return out;
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

std::string profile_to_json(const Profile& profile) {
  json j;
  j["schema"] = std::string(kProfileSchema);
  j["schema_version"] = profile.schema_version;
  j["provenance"] = to_json(profile.raw.provenance);
  json peaks = json::object();
  for (const auto& [k, v] : profile.reference_peak_flops_per_s)
    peaks[k] = finite_or_throw(v, "reference peak " + k);
  j["reference_peaks"] = json{{"flops_per_s", peaks}, {"source", profile.reference_peak_source}};
  json derived = json::object();
  for (const auto& [k, v] : profile.derived) derived[k] = finite_or_throw(v, "derived " + k);
  j["derived"] = derived;
  json fits = json::object();
  for (const auto& [k, f] : profile.fits) fits[k] = to_json(f, k);
  j["fits"] = fits;
  json scalars = json::object();
  for (const auto& [k, v] : profile.raw.scalars) scalars[k] = finite_or_throw(v, "scalar " + k);
  json series = json::array();
  for (const Series& s : profile.raw.series) series.push_back(to_json(s));
  j["measurements"] = json{{"scalars", scalars},
                           {"series", series},
                           {"errors", profile.raw.errors},
                           {"skipped", profile.raw.skipped}};
  j["errors"] = profile.errors;
  return j.dump(2) + "\n";
}

Profile profile_from_json(std::string_view text, std::string_view origin) {
  const Reader r(origin);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1,
    // column 2: ..."; the library's id stays out of the message.
    const std::string what = e.what();
    const size_t id_end = what.find("] ");
    throw ProfileError(std::string(origin) + ": not valid JSON (" +
                       (id_end == std::string::npos ? what : what.substr(id_end + 2)) + "); " +
                       Reader::kRegenerate);
  }
  if (!j.is_object()) r.fail("$", "expected a JSON object", Reader::kRegenerate);
  const auto schema = j.find("schema");
  if (schema == j.end() || !schema->is_string() || schema->get<std::string>() != kProfileSchema) {
    r.fail("$.schema",
           "not a podsim calibration profile (expected \"" + std::string(kProfileSchema) + "\")",
           "pass a file written by `podsim calibrate --out FILE`");
  }
  const int version = r.integer(r.member(j, "$", "schema_version"), "$.schema_version");
  if (version > kProfileSchemaVersion) {
    r.fail("$.schema_version",
           "written by a newer podsim (schema_version " + std::to_string(version) +
               ", this podsim reads " + std::to_string(kProfileSchemaVersion) + ")",
           "update podsim, or regenerate the profile with this podsim's `podsim calibrate`");
  }
  if (version < kProfileSchemaVersion) {
    r.fail("$.schema_version",
           "written by an older podsim (schema_version " + std::to_string(version) +
               ", this podsim reads " + std::to_string(kProfileSchemaVersion) + ")",
           Reader::kRegenerate);
  }
  Profile p;
  p.schema_version = version;
  p.raw.provenance = provenance_from(r, r.member(j, "$", "provenance"), "$.provenance");
  const json& peaks = r.member(j, "$", "reference_peaks");
  p.reference_peak_flops_per_s = r.number_map(r.member(peaks, "$.reference_peaks", "flops_per_s"),
                                              "$.reference_peaks.flops_per_s");
  p.reference_peak_source =
      r.string(r.member(peaks, "$.reference_peaks", "source"), "$.reference_peaks.source");
  p.derived = r.number_map(r.member(j, "$", "derived"), "$.derived");
  const json& fits = r.member(j, "$", "fits");
  if (!fits.is_object()) r.fail("$.fits", "expected an object", Reader::kRegenerate);
  for (const auto& [k, f] : fits.items()) p.fits[k] = fit_from(r, f, "$.fits." + k);
  const json& m = r.member(j, "$", "measurements");
  p.raw.scalars = r.number_map(r.member(m, "$.measurements", "scalars"), "$.measurements.scalars");
  const json& series = r.array(r.member(m, "$.measurements", "series"), "$.measurements.series");
  for (size_t i = 0; i < series.size(); ++i) {
    p.raw.series.push_back(
        series_from(r, series[i], "$.measurements.series[" + std::to_string(i) + "]"));
  }
  p.raw.errors = strings_from(r, r.member(m, "$.measurements", "errors"), "$.measurements.errors");
  p.raw.skipped =
      strings_from(r, r.member(m, "$.measurements", "skipped"), "$.measurements.skipped");
  p.errors = strings_from(r, r.member(j, "$", "errors"), "$.errors");
  return p;
}

void write_profile(const Profile& profile, const std::string& path) {
  const std::string text = profile_to_json(profile);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw ProfileError(
          path + ": cannot open for writing; check that the directory exists and is writable");
    out << text;
    out.flush();
    if (!out) throw ProfileError(path + ": write failed (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw ProfileError(path + ": cannot replace the file; check the directory's permissions");
  }
}

Profile read_profile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw ProfileError(path + ": is a directory, not a calibration profile");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ProfileError(path +
                       ": cannot open the calibration profile; check the path, or produce one with "
                       "`podsim calibrate --out " +
                       path + "` on the GPU");
  }
  // Read in pieces up to a bound: /dev/zero or a stray huge file must not
  // exhaust memory (a profile is tens of kilobytes).
  constexpr size_t kMaxProfileBytes = 64u << 20;
  std::string text;
  std::vector<char> chunk(1 << 16);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    text.append(chunk.data(), static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxProfileBytes) {
      throw ProfileError(path + ": larger than 64 MiB, not a calibration profile");
    }
  }
  return profile_from_json(text, path);
}

}  // namespace podsim::calibration
