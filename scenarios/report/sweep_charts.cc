#include "scenarios/report/sweep_charts.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "scenarios/report/svg.h"
#include "scenarios/report/sweep_labels.h"

namespace podsim::scenarios::sweep_charts {
namespace {

using sweep_labels::fixed;
using sweep_labels::si_count;

/// A factor between the smallest and largest positive value at which an
/// axis goes logarithmic: a decade.
constexpr double kLogSpan = 10.0;

/// One axis: linear or log10, mapping data values to [0, 1].
struct Axis {
  bool log = false;
  double lo = 0, hi = 1;  // in axis units (log10 of the value when log)

  static Axis fit(const std::vector<double>& values, bool from_zero) {
    Axis a;
    double vmin = 1e300, vmax = -1e300;
    for (double v : values) {
      vmin = std::min(vmin, v);
      vmax = std::max(vmax, v);
    }
    if (values.empty()) return a;
    a.log = vmin > 0 && vmax / vmin >= kLogSpan;
    if (a.log) {
      a.lo = std::floor(std::log10(vmin));
      a.hi = std::ceil(std::log10(vmax));
      if (a.hi - a.lo < 1e-12) a.hi = a.lo + 1;
      return a;
    }
    a.lo = from_zero ? std::min(0.0, vmin) : vmin;
    a.hi = vmax > 0 ? vmax * 1.1 : 1;
    if (!from_zero) {
      const double pad = (vmax - vmin) * 0.05;
      a.lo = vmin - (pad > 0 ? pad : std::max(std::fabs(vmin) * 0.1, 1e-12));
      a.hi = vmax + (pad > 0 ? pad : std::max(std::fabs(vmax) * 0.1, 1e-12));
    }
    return a;
  }
  double unit(double v) const {
    const double x = log ? std::log10(std::max(v, 1e-300)) : v;
    return (x - lo) / (hi - lo);
  }
  /// Ticks in data values: 1, 2, 5 per decade on a log axis.
  std::vector<double> ticks() const {
    if (!log) return nice_ticks(lo, hi, 5);
    std::vector<double> t;
    for (int d = static_cast<int>(lo); d <= static_cast<int>(hi); ++d) {
      for (double m : {1.0, 2.0, 5.0}) {
        const double v = m * std::pow(10.0, d);
        if (std::log10(v) >= lo - 1e-9 && std::log10(v) <= hi + 1e-9) t.push_back(v);
      }
    }
    return t;
  }
  std::string tick_text(double v, const std::vector<double>& all) const {
    if (std::fabs(v) >= 1e4) return si_count(v);
    if (log) return fixed(v, std::max(0, static_cast<int>(std::ceil(-std::log10(v) - 1e-9))));
    return fixed(v, all.size() > 1 ? tick_decimals(all[1] - all[0]) : 0);
  }
};

}  // namespace

const std::vector<std::string>& palette() {
  static const std::vector<std::string> colors{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                               "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  return colors;
}

std::string chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                  const std::vector<Series>& series, bool log2_x) {
  constexpr double kW = 560, kH = 320, kL = 70, kR = 30, kT = 30, kB = 70;
  const double pw = kW - kL - kR, ph = kH - kT - kB;
  std::vector<double> xs, ys;
  for (const Series& s : series) {
    for (const auto& [x, y] : s.points) {
      xs.push_back(log2_x ? std::log2(x) : x);
      ys.push_back(y);
    }
  }
  Svg svg(kW, kH, false);
  svg.text(kL, 18, title, "start", 13, "font-weight=\"bold\"");
  if (xs.empty()) {
    svg.text(kW / 2, kH / 2, "no data", "middle", 12);
    return svg.finish();
  }
  // log2_x: the axis is already logarithmic in its units; keep it linear there.
  Axis xa = log2_x ? Axis::fit({}, false) : Axis::fit(xs, false);
  if (log2_x) {
    const double lo = *std::min_element(xs.begin(), xs.end());
    const double hi = *std::max_element(xs.begin(), xs.end());
    const double pad = hi > lo ? (hi - lo) * 0.05 : 1;
    xa.lo = lo - pad;
    xa.hi = hi + pad;
  }
  // Over GPU counts the y values are compared with zero (half the time at
  // twice the GPUs); a scatter of plans is compared point with point, and a
  // zero-based axis squeezes them into a band (costs 670k-850k under 0-900k).
  const Axis ya = Axis::fit(ys, log2_x);
  auto X = [&](double x) { return kL + xa.unit(log2_x ? std::log2(x) : x) * pw; };
  auto Y = [&](double y) { return kT + ph - ya.unit(y) * ph; };
  svg.line(kL, kT + ph, kL + pw, kT + ph, "#333333");
  svg.line(kL, kT, kL, kT + ph, "#333333");
  const std::vector<double> y_ticks = ya.ticks();
  for (double t : y_ticks) {
    svg.line(kL, Y(t), kL + pw, Y(t), "#eeeeee", 0.5);
    svg.text(kL - 5, Y(t) + 3, ya.tick_text(t, y_ticks), "end", 10);
  }
  if (log2_x) {
    std::vector<double> values;
    for (const Series& s : series) {
      for (const auto& p : s.points) values.push_back(p.first);
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    for (double x : values) {
      svg.line(X(x), kT + ph, X(x), kT + ph + 4, "#333333");
      svg.text(X(x), kT + ph + 16, fixed(x, 0), "middle", 10);
    }
  } else {
    const std::vector<double> x_ticks = xa.ticks();
    for (double t : x_ticks) {
      if (xa.unit(t) < -1e-9 || xa.unit(t) > 1 + 1e-9) continue;
      svg.line(X(t), kT + ph, X(t), kT + ph + 4, "#333333");
      svg.text(X(t), kT + ph + 16, xa.tick_text(t, x_ticks), "middle", 10);
    }
  }
  svg.text(kL + pw / 2, kT + ph + 32, x_label + (xa.log ? " (log scale)" : ""), "middle", 11);
  const std::string y_text = y_label + (ya.log ? " (log scale)" : "");
  svg.text(14, kT + ph / 2, y_text, "middle", 11,
           "transform=\"rotate(-90 14 " + fixed(kT + ph / 2, 2) + ")\"");
  double lx = kL;
  for (const Series& s : series) {
    std::vector<std::pair<double, double>> px;
    for (const auto& [x, y] : s.points) px.emplace_back(X(x), Y(y));
    if (s.line && px.size() > 1) svg.polyline(px, s.color, 1.5);
    for (size_t i = 0; i < px.size(); ++i) {
      svg.circle(px[i].first, px[i].second, s.radius, s.color);
      if (i < s.labels.size() && !s.labels[i].empty()) {
        svg.text(px[i].first + s.radius + 3, px[i].second - s.radius - 2, s.labels[i], "start", 10);
      }
    }
    if (!s.name.empty()) {
      svg.circle(lx + 5, kH - 12, 4, s.color);
      svg.text(lx + 12, kH - 8, s.name, "start", 10);
      lx += 24 + 6.0 * static_cast<double>(s.name.size());
    }
  }
  return svg.finish();
}

std::string bar_chart(const std::string& title, const std::string& y_label,
                      const std::vector<Bar>& bars) {
  constexpr double kH = 320, kL = 70, kR = 20, kT = 40, kB = 60, kBar = 44, kGap = 16;
  std::vector<std::string> groups;
  for (const Bar& b : bars) {
    if (std::find(groups.begin(), groups.end(), b.group) == groups.end()) groups.push_back(b.group);
  }
  // Each group as wide as its bars or its name, whichever is wider, so that
  // names like "h200-sxm-141g" do not run into their neighbours.
  constexpr double kCharWidth = 6.5;
  std::vector<double> group_width;
  for (const std::string& g : groups) {
    const double n = static_cast<double>(
        std::count_if(bars.begin(), bars.end(), [&](const Bar& b) { return b.group == g; }));
    group_width.push_back(std::max(n * kBar, kCharWidth * static_cast<double>(g.size()) + 8) +
                          kGap);
  }
  double width = kL + kR;
  for (double w : group_width) width += w;
  const double kW = std::max(360.0, width);
  const double ph = kH - kT - kB;
  Svg svg(kW, kH, false);
  svg.text(kL, 18, title, "start", 13, "font-weight=\"bold\"");
  if (bars.empty()) {
    svg.text(kW / 2, kH / 2, "no data", "middle", 12);
    return svg.finish();
  }
  double vmax = 0;
  for (const Bar& b : bars) vmax = std::max(vmax, b.value);
  vmax = vmax > 0 ? vmax * 1.12 : 1;
  auto Y = [&](double v) { return kT + ph - v / vmax * ph; };
  svg.line(kL, kT + ph, kW - kR, kT + ph, "#333333");
  svg.line(kL, kT, kL, kT + ph, "#333333");
  const std::vector<double> ticks = nice_ticks(0, vmax, 5);
  const int decimals = ticks.size() > 1 ? tick_decimals(ticks[1] - ticks[0]) : 0;
  for (double t : ticks) {
    svg.line(kL, Y(t), kW - kR, Y(t), "#eeeeee", 0.5);
    svg.text(kL - 5, Y(t) + 3, t >= 1e4 ? si_count(t) : fixed(t, decimals), "end", 10);
  }
  svg.text(14, kT + ph / 2, y_label, "middle", 11,
           "transform=\"rotate(-90 14 " + fixed(kT + ph / 2, 2) + ")\"");
  double group_start = kL;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const std::string& g = groups[gi];
    const double n = static_cast<double>(
        std::count_if(bars.begin(), bars.end(), [&](const Bar& b) { return b.group == g; }));
    const double centre = group_start + group_width[gi] / 2;
    double x = centre - n * kBar / 2;
    for (const Bar& b : bars) {
      if (b.group != g) continue;
      svg.rect(x + 4, Y(b.value), kBar - 8, kT + ph - Y(b.value), b.color);
      svg.text(x + kBar / 2, Y(b.value) - 4, b.value_label, "middle", 10);
      if (!b.name.empty()) svg.text(x + kBar / 2, kT + ph + 14, b.name, "middle", 9);
      x += kBar;
    }
    svg.text(centre, kT + ph + 30, g, "middle", 11);
    group_start += group_width[gi];
  }
  return svg.finish();
}

}  // namespace podsim::scenarios::sweep_charts
