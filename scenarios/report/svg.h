#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace podsim::scenarios {

// A small SVG writer for the timeline and the sweep report's charts: plain
// elements with escaped text, numbers in fixed notation (same input, same
// bytes), nothing that refers outside the document.

/// Escapes &, <, >, " and ' for XML text and attribute values.
std::string xml_escape(std::string_view text);

/// `value` with `decimals` digits after the point ("-0" printed as "0").
std::string fixed_number(double value, int decimals);

/// About `count` round tick values covering [lo, hi] (steps of 1, 2 or 5
/// times a power of ten), ascending.
std::vector<double> nice_ticks(double lo, double hi, int count);

/// Decimals that tell apart ticks `step` apart (0 for steps of 1 or more).
int tick_decimals(double step);

/// Builds one <svg> element.
class Svg {
 public:
  /// `standalone`: an SVG file (XML declaration and namespace); otherwise an
  /// element to inline in HTML (no namespace URL, nothing external at all).
  Svg(double width, double height, bool standalone);

  /// Raw attributes are passed through as written ("class=\"bar\"").
  void rect(double x, double y, double w, double h, std::string_view fill,
            std::string_view attributes = {});
  void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1,
            std::string_view attributes = {});
  void polyline(const std::vector<std::pair<double, double>>& points, std::string_view stroke,
                double width = 1.5, std::string_view attributes = {});
  void circle(double cx, double cy, double r, std::string_view fill,
              std::string_view attributes = {});
  /// `anchor`: start, middle or end.
  void text(double x, double y, std::string_view text, std::string_view anchor = "start",
            double size = 11, std::string_view attributes = {});
  /// A rect with a <title> child (a tooltip in browsers).
  void rect_with_title(double x, double y, double w, double h, std::string_view fill,
                       std::string_view title, std::string_view attributes = {});
  void open_group(std::string_view attributes);
  void close_group();
  /// The document (closes the <svg>).
  std::string finish();

 private:
  std::string out_;
  int open_groups_ = 0;
};

}  // namespace podsim::scenarios
