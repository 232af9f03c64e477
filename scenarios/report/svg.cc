#include "scenarios/report/svg.h"

#include <cmath>
#include <cstdio>

namespace podsim::scenarios {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string fixed_number(double value, int decimals) {
  if (!std::isfinite(value)) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  std::string s = buf;
  // "-0.00" -> "0.00"
  if (s.front() == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

std::vector<double> nice_ticks(double lo, double hi, int count) {
  std::vector<double> ticks;
  if (!(hi > lo) || count < 1) {
    ticks.push_back(lo);
    return ticks;
  }
  const double raw = (hi - lo) / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double f : {1.0, 2.0, 5.0, 10.0}) {
    step = f * magnitude;
    if (step >= raw) break;
  }
  const double first = std::ceil(lo / step - 1e-9) * step;
  for (double t = first; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

int tick_decimals(double step) {
  if (!(step > 0)) return 3;
  const int d = static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return d < 0 ? 0 : (d > 9 ? 9 : d);
}

namespace {
std::string n(double v) { return fixed_number(v, 2); }
void attributes_into(std::string& out, std::string_view attributes) {
  if (!attributes.empty()) {
    out += ' ';
    out += attributes;
  }
}
}  // namespace

Svg::Svg(double width, double height, bool standalone) {
  if (standalone) {
    out_ += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out_ += "<svg xmlns=\"http://www.w3.org/2000/svg\"";
  } else {
    out_ += "<svg";
  }
  out_ += " width=\"" + n(width) + "\" height=\"" + n(height) + "\" viewBox=\"0 0 " + n(width) +
          " " + n(height) + "\" font-family=\"sans-serif\">\n";
}

void Svg::rect(double x, double y, double w, double h, std::string_view fill,
               std::string_view attributes) {
  out_ += "<rect x=\"" + n(x) + "\" y=\"" + n(y) + "\" width=\"" + n(w) + "\" height=\"" + n(h) +
          "\" fill=\"" + xml_escape(fill) + "\"";
  attributes_into(out_, attributes);
  out_ += "/>\n";
}

void Svg::rect_with_title(double x, double y, double w, double h, std::string_view fill,
                          std::string_view title, std::string_view attributes) {
  out_ += "<rect x=\"" + n(x) + "\" y=\"" + n(y) + "\" width=\"" + n(w) + "\" height=\"" + n(h) +
          "\" fill=\"" + xml_escape(fill) + "\"";
  attributes_into(out_, attributes);
  out_ += "><title>";
  out_ += xml_escape(title);
  out_ += "</title></rect>\n";
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view stroke, double width,
               std::string_view attributes) {
  out_ += "<line x1=\"" + n(x1) + "\" y1=\"" + n(y1) + "\" x2=\"" + n(x2) + "\" y2=\"" + n(y2) +
          "\" stroke=\"" + xml_escape(stroke) + "\" stroke-width=\"" + n(width) + "\"";
  attributes_into(out_, attributes);
  out_ += "/>\n";
}

void Svg::polyline(const std::vector<std::pair<double, double>>& points, std::string_view stroke,
                   double width, std::string_view attributes) {
  out_ += "<polyline fill=\"none\" stroke=\"" + xml_escape(stroke) + "\" stroke-width=\"" +
          n(width) + "\" points=\"";
  for (size_t i = 0; i < points.size(); ++i) {
    if (i > 0) out_ += ' ';
    out_ += n(points[i].first) + "," + n(points[i].second);
  }
  out_ += "\"";
  attributes_into(out_, attributes);
  out_ += "/>\n";
}

void Svg::circle(double cx, double cy, double r, std::string_view fill,
                 std::string_view attributes) {
  out_ += "<circle cx=\"" + n(cx) + "\" cy=\"" + n(cy) + "\" r=\"" + n(r) + "\" fill=\"" +
          xml_escape(fill) + "\"";
  attributes_into(out_, attributes);
  out_ += "/>\n";
}

void Svg::text(double x, double y, std::string_view text, std::string_view anchor, double size,
               std::string_view attributes) {
  out_ += "<text x=\"" + n(x) + "\" y=\"" + n(y) + "\" font-size=\"" + n(size) +
          "\" text-anchor=\"" + xml_escape(anchor) + "\"";
  attributes_into(out_, attributes);
  out_ += '>';
  out_ += xml_escape(text);
  out_ += "</text>\n";
}

void Svg::open_group(std::string_view attributes) {
  out_ += "<g";
  attributes_into(out_, attributes);
  out_ += ">\n";
  ++open_groups_;
}

void Svg::close_group() {
  if (open_groups_ == 0) return;
  out_ += "</g>\n";
  --open_groups_;
}

std::string Svg::finish() {
  while (open_groups_ > 0) close_group();
  out_ += "</svg>\n";
  return std::move(out_);
}

}  // namespace podsim::scenarios
