// A calibration profile as JSON: written, read back and checked field by
// field, every error naming its path (profile.h). Building one is profile.cc.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "calibration/profile.h"

namespace podsim::calibration {
namespace {

using nlohmann::json;

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
