#include "calibration/summary.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "sim/format_fixed.h"

namespace podsim::calibration {
namespace {

class RowBuilder {
 public:
  RowBuilder(const Profile& p, const std::optional<Datasheet>& d) : p_(p), d_(d) {}

  void derived(const std::string& key, const std::string& label, const std::string& unit,
               double scale, double datasheet_value) {
    const auto v = p_.find_derived(key);
    if (v) add(label, unit, *v * scale, datasheet_value * scale);
  }
  void fit_param(const std::string& fit, const std::string& param, const std::string& label,
                 const std::string& unit, double scale, double datasheet_value) {
    const Fit* f = p_.find_fit(fit);
    if (f == nullptr) return;
    const auto it = f->params.find(param);
    if (it != f->params.end()) add(label, unit, it->second * scale, datasheet_value * scale);
  }
  void inverse_fit_param(const std::string& fit, const std::string& param, const std::string& label,
                         const std::string& unit, double scale) {
    const Fit* f = p_.find_fit(fit);
    if (f == nullptr) return;
    const auto it = f->params.find(param);
    if (it != f->params.end() && it->second > 0) add(label, unit, scale / it->second, 0.0);
  }
  double sheet(double Datasheet::*member) const { return d_ ? (*d_).*member : 0.0; }
  double tensor(const std::string& format) const { return d_ ? d_->tensor(format) : 0.0; }
  std::vector<SummaryRow> take() { return std::move(rows_); }

 private:
  void add(const std::string& label, const std::string& unit, double measured, double datasheet) {
    rows_.push_back(SummaryRow{label, unit, measured, datasheet});
  }
  const Profile& p_;
  const std::optional<Datasheet>& d_;
  std::vector<SummaryRow> rows_;
};

}  // namespace

std::vector<SummaryRow> summary_rows(const Profile& profile,
                                     const std::optional<Datasheet>& datasheet) {
  RowBuilder b(profile, datasheet);
  const Provenance& prov = profile.raw.provenance;
  constexpr double kT = 1e-12;  // FLOP/s -> TFLOP/s
  constexpr double kG = 1e-9;   // B/s -> GB/s
  constexpr double kUs = 1e6;   // s -> us
  if (prov.sm_clock_hz_measured > 0) {
    b.derived("clock.sm_hz_measured",
              "SM clock under load (reported max " +
                  format_fixed(prov.sm_clock_hz_reported * 1e-9, 2) + " GHz)",
              "GHz", 1e-9, 0.0);
  }
  b.derived("fp32.fma.flops_per_s", "FP32 FMA peak", "TFLOP/s", kT,
            b.sheet(&Datasheet::fp32_flops_per_s));
  b.derived("tensor.mma_sync.bf16.flops_per_s", "bf16 mma.sync peak", "TFLOP/s", kT,
            b.tensor("bf16"));
  b.derived("tensor.wgmma.bf16.flops_per_s", "bf16 wgmma peak", "TFLOP/s", kT, b.tensor("bf16"));
  b.derived("tensor.wgmma.fp8.flops_per_s", "fp8 wgmma peak", "TFLOP/s", kT, b.tensor("fp8"));
  for (const char* dtype : {"bf16", "fp16", "tf32", "fp8"}) {
    b.derived(std::string("gemm.") + dtype + ".best_flops_per_s",
              std::string("cuBLASLt GEMM best, ") + dtype, "TFLOP/s", kT, b.tensor(dtype));
  }
  b.derived("attention.fwd.best_flops_per_s", "attention fwd best (causal, bf16)", "TFLOP/s", kT,
            b.tensor("bf16"));
  b.derived("attention.bwd.best_flops_per_s", "attention bwd best (causal, bf16)", "TFLOP/s", kT,
            b.tensor("bf16"));
  for (const char* k : {"copy", "scale", "triad"}) {
    b.fit_param(std::string("hbm.") + k, "beta_per_s", std::string("HBM ") + k + " asymptote",
                "GB/s", kG, b.sheet(&Datasheet::hbm_bw_bytes_per_s));
  }
  b.derived("l2.cache_capacity_bytes", "L2 effective capacity", "MiB", 1.0 / (1024 * 1024),
            b.sheet(&Datasheet::l2_bytes));
  b.derived("l2.cache_bw_bytes_per_s", "L2 read bandwidth", "GB/s", kG, 0.0);
  for (const char* k : {"rmsnorm", "softmax", "swiglu", "residual_add"}) {
    b.fit_param(std::string("kernel.") + k, "beta_per_s", std::string(k) + " kernel asymptote",
                "GB/s", kG, b.sheet(&Datasheet::hbm_bw_bytes_per_s));
  }
  b.inverse_fit_param("launch.stream", "beta_per_s", "launch, per kernel on a stream", "us", kUs);
  b.inverse_fit_param("launch.graph", "beta_per_s", "launch, per kernel in a CUDA graph", "us",
                      kUs);
  b.fit_param("copy.h2d", "beta_per_s", "host->device pinned", "GB/s", kG,
              b.sheet(&Datasheet::pcie_bw_bytes_per_s));
  b.fit_param("copy.d2h", "beta_per_s", "device->host pinned", "GB/s", kG,
              b.sheet(&Datasheet::pcie_bw_bytes_per_s));
  b.fit_param("copy.h2d", "alpha_s", "host->device latency", "us", kUs, 0.0);
  b.fit_param("p2p.unidir", "beta_per_s", "peer copy GPU0->GPU1", "GB/s", kG,
              b.sheet(&Datasheet::nvlink_bw_bytes_per_s));
  b.fit_param("p2p.unidir", "alpha_s", "peer copy latency", "us", kUs, 0.0);
  for (const auto& [name, value] : profile.derived) {
    const std::string suffix = ".busbw_max_bytes_per_s";
    if (name.rfind("nccl.", 0) == 0 && name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      b.derived(name, name.substr(0, name.size() - suffix.size()) + " busbw asymptote", "GB/s", kG,
                b.sheet(&Datasheet::nvlink_bw_bytes_per_s));
    }
  }
  return b.take();
}

std::string format_summary(const Profile& profile, const std::optional<Datasheet>& datasheet) {
  const std::vector<SummaryRow> rows = summary_rows(profile, datasheet);
  size_t width = 8;
  for (const SummaryRow& r : rows) width = std::max(width, r.quantity.size());
  std::ostringstream out;
  const Provenance& prov = profile.raw.provenance;
  out << prov.gpu_name << " (cc " << prov.compute_capability_major << "."
      << prov.compute_capability_minor << ", " << prov.sm_count << " SMs), driver "
      << prov.driver_version << ", runtime " << prov.runtime_version << "\n";
  out << "datasheet: " << (datasheet ? datasheet->name : std::string("none known for this GPU"))
      << "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-*s %12s %12s %8s  %s\n", static_cast<int>(width), "quantity",
                "measured", "datasheet", "ratio", "unit");
  out << line;
  for (const SummaryRow& r : rows) {
    const std::string sheet = r.datasheet > 0 ? format_fixed(r.datasheet, 2) : "-";
    const std::string ratio =
        r.datasheet > 0 ? format_fixed(100.0 * r.measured / r.datasheet, 1) + "%" : "-";
    std::snprintf(line, sizeof line, "%-*s %12s %12s %8s  %s\n", static_cast<int>(width),
                  r.quantity.c_str(), format_fixed(r.measured, 2).c_str(), sheet.c_str(),
                  ratio.c_str(), r.unit.c_str());
    out << line;
  }
  if (!profile.fits.empty()) {
    out << "fits (rms relative error):";
    for (const auto& [name, fit] : profile.fits)
      out << " " << name << " " << format_fixed(100.0 * fit.rms_rel_error, 1) << "%";
    out << "\n";
  }
  for (const std::string& e : profile.raw.skipped) out << "skipped: " << e << "\n";
  for (const std::string& e : profile.errors) out << "problem: " << e << "\n";
  return out.str();
}

}  // namespace podsim::calibration
