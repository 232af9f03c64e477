#pragma once

// The sweep report's inline SVG charts (report.html). Internal to report/.

#include <string>
#include <utility>
#include <vector>

namespace podsim::scenarios::sweep_charts {

struct Series {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;
  bool line = true;
  double radius = 3;
  /// Drawn beside each point when not empty (one per point).
  std::vector<std::string> labels;
};

/// The palette series are coloured from, in order.
const std::vector<std::string>& palette();

/// A scatter/line chart. `log2_x` places x on a log2 scale with a tick per
/// value (GPU counts); otherwise an axis whose positive values span a factor
/// of 10 or more is drawn on a log10 scale (and says so in its label), so
/// that small values are not flattened onto zero. A linear y axis starts at
/// zero over GPU counts (`log2_x`) and fits the data otherwise.
std::string chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                  const std::vector<Series>& series, bool log2_x);

struct Bar {
  std::string group;  ///< under the group of bars ("h100-sxm-80g")
  std::string name;   ///< under the bar ("1024 GPUs"); may be empty
  double value = 0;
  std::string value_label;  ///< above the bar ("6.72 s")
  std::string color;
};

/// Bars from zero, grouped in the given order, each labelled with its value.
std::string bar_chart(const std::string& title, const std::string& y_label,
                      const std::vector<Bar>& bars);

}  // namespace podsim::scenarios::sweep_charts
