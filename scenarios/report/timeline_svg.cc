#include "scenarios/report/timeline_svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scenarios/report/svg.h"
#include "scenarios/report/sweep_labels.h"

namespace podsim::scenarios {
namespace {

using strategies::Stream;
using strategies::Task;
using strategies::TaskId;
using strategies::TaskKind;

constexpr double kLeft = 120, kRight = 24, kRowHeight = 26, kComputeHeight = 14, kCommHeight = 7,
                 kMemoryHeight = 220;
using sweep_labels::kGiB;

struct Style {
  const char* fill;
  const char* label;
};

Style style_of(const Task& t) {
  switch (t.kind) {
    case TaskKind::kForward:
      return {"#4c78a8", "forward"};
    case TaskKind::kBackward:
      return {"#f58518", "backward"};
    case TaskKind::kBackwardInput:
      return {"#e45756", "backward B (input grads)"};
    case TaskKind::kBackwardWeight:
      return {"#72b7b2", "backward W (weight grads)"};
    case TaskKind::kRecompute:
      return {"#b279a2", "recompute"};
    case TaskKind::kForwardBackward:
      return {"#eeca3b", "forward & backward (DualPipe pair)"};
    case TaskKind::kOptimizer:
      return {"#9d755d", "optimizer"};
    case TaskKind::kComm:
      break;
  }
  switch (t.stream) {
    case Stream::kPpSendNext:
    case Stream::kPpSendPrev:
      return {"#54a24b", "pipeline send"};
    case Stream::kDpGather:
      return {"#eeca3b", "DP parameter gather"};
    default:
      return {"#8c8c8c", "DP gradient sync"};
  }
}

constexpr std::array<const char*, 10> kStagePalette{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                                    "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                                    "#bcbd22", "#17becf"};
/// Past ten stages the colours repeat with another dash pattern, so that
/// 40 stages' curves and legend entries each look different.
constexpr std::array<const char*, 4> kStageDashes{"", "6,3", "2,2", "9,3,2,3"};

std::string stage_dash(size_t k) {
  const char* dash = kStageDashes[(k / kStagePalette.size()) % kStageDashes.size()];
  return *dash == '\0' ? std::string() : std::string("stroke-dasharray=\"") + dash + "\"";
}

/// Legend entries laid out left to right from `left`, a new row where the
/// next would pass `right`: each entry's x and row.
std::vector<std::pair<double, int>> flow(const std::vector<double>& widths, double left,
                                         double right) {
  std::vector<std::pair<double, int>> at;
  double x = left;
  int row = 0;
  for (const double w : widths) {
    if (x > left && x + w > right) {
      x = left;
      ++row;
    }
    at.emplace_back(x, row);
    x += w;
  }
  return at;
}

int rows_of(const std::vector<std::pair<double, int>>& at) {
  return at.empty() ? 0 : at.back().second + 1;
}

constexpr double kLegendRow = 16;
constexpr double kStageLegendChar = 5.6, kTaskLegendChar = 6.2;

std::string stage_label(int64_t stage, double peak_bytes) {
  return "stage " + std::to_string(stage) + " peak " + fixed_number(peak_bytes / kGiB, 1);
}

/// Bars of one lane narrower than a pixel, next to each other (less than a
/// pixel apart), drawn as one: a long pipeline's sub-pixel tasks would
/// otherwise be stripes of bar and stroke. The group takes the fill of the
/// kind that holds most of its time; its title counts the tasks by kind.
struct TaskBar {
  double start = 0, end = 0;
  TaskId id = 0;
};

}  // namespace

std::string timeline_svg(const StepDetail& detail, const TimelineOptions& options) {
  const strategies::Schedule& s = detail.schedule;
  const StepTimeline& tl = detail.timeline;
  const Report& report = detail.report;
  const double step = std::max(report.step_time_s, 1e-12);
  const double width = std::max(options.width_px, 400.0);
  const double plot = width - kLeft - kRight;
  const double scale = plot / step;

  // One drawn GPU per stage, the one whose buffers the schedule keeps: the
  // stage's representative when simulated, else its first simulated GPU.
  const std::vector<size_t> rows(s.buffer_ranks.begin(), s.buffer_ranks.end());

  // The legends wrap onto as many rows as they need: every kind and every
  // stage is named.
  std::vector<std::pair<std::string, std::string>> legend;  // fill, label (first seen order)
  auto note_legend = [&](const Style& st) {
    for (const auto& [fill, label] : legend) {
      if (label == st.label) return;
    }
    legend.emplace_back(st.fill, st.label);
  };
  for (const size_t ri : rows) {
    for (TaskId id = s.rank_begin[ri]; id < s.rank_begin[ri + 1]; ++id) {
      note_legend(style_of(s.tasks[id]));
    }
  }
  legend.emplace_back("#f4dada", "idle (pipeline bubble or waiting for communication)");
  std::vector<double> legend_widths;
  for (const auto& [fill, label] : legend) {
    legend_widths.push_back(16 + kTaskLegendChar * static_cast<double>(label.size()) + 14);
  }
  const std::vector<std::pair<double, int>> legend_at = flow(legend_widths, kLeft, width - kRight);

  const double gantt_top = 56;
  const double axis_y = gantt_top + kRowHeight * static_cast<double>(rows.size()) + 4;
  const double legend_y = axis_y + 50;
  const double memory_top = legend_y + kLegendRow * (rows_of(legend_at) - 1) + 50;
  const double memory_bottom = memory_top + kMemoryHeight;
  const double legend2_y = memory_bottom + 46;
  // The memory legend's entries are as wide as their labels (the peaks are
  // known below; "stage S peak NNN.N" bounds them).
  std::vector<double> stage_widths;
  for (const size_t ri : rows) {
    const std::string longest = stage_label(s.layout.stage(s.ranks[ri]), 999.9 * kGiB);
    stage_widths.push_back(20 + kStageLegendChar * static_cast<double>(longest.size()) + 8);
  }
  const std::vector<std::pair<double, int>> stage_at = flow(stage_widths, kLeft, width - kRight);
  const double height = legend2_y + kLegendRow * (rows_of(stage_at) - 1) + 14;

  Svg svg(width, height, true);
  svg.rect(0, 0, width, height, "#ffffff");
  svg.text(kLeft, 20,
           "Step timeline: " + report.scenario + " (" + report.simulation_mode + " simulation)",
           "start", 14, "font-weight=\"bold\"");
  svg.text(kLeft, 38,
           "step " + fixed_number(report.step_time_s, 4) + " s, bubble " +
               fixed_number(100 * report.bubble_fraction, 1) + "% of the critical stage, " +
               std::to_string(rows.size()) + " stages" +
               (s.scope == strategies::Scope::kEveryRank ? " (first GPU of each stage shown)" : ""),
           "start", 11, "fill=\"#444444\"");

  // Gantt chart.
  svg.open_group("class=\"gantt\" data-x0=\"" + fixed_number(kLeft, 2) + "\" data-px-per-s=\"" +
                 fixed_number(scale, 6) + "\"");
  for (size_t row = 0; row < rows.size(); ++row) {
    const size_t ri = rows[row];
    const int64_t rank = s.ranks[ri];
    const double y = gantt_top + kRowHeight * static_cast<double>(row);
    svg.text(
        kLeft - 6, y + kComputeHeight - 3,
        "stage " + std::to_string(s.layout.stage(rank)) + " (GPU " + std::to_string(rank) + ")",
        "end", 10);
    // Idle stretches of the compute lane first (under the bars).
    std::vector<std::pair<double, double>> busy;
    for (TaskId id = s.rank_begin[ri]; id < s.rank_begin[ri + 1]; ++id) {
      if (s.tasks[id].stream != Stream::kCompute) continue;
      busy.emplace_back(tl.tasks[id].start.seconds(), tl.tasks[id].end.seconds());
    }
    std::sort(busy.begin(), busy.end());
    double t = 0;
    for (const auto& [start, end] : busy) {
      if (start > t) {
        svg.rect(kLeft + t * scale, y, (start - t) * scale, kComputeHeight, "#f4dada",
                 "class=\"idle\"");
      }
      t = std::max(t, end);
    }
    if (step > t) {
      svg.rect(kLeft + t * scale, y, (step - t) * scale, kComputeHeight, "#f4dada",
               "class=\"idle\"");
    }
    for (const bool compute : {true, false}) {
      std::vector<TaskBar> lane;
      for (TaskId id = s.rank_begin[ri]; id < s.rank_begin[ri + 1]; ++id) {
        if ((s.tasks[id].stream == Stream::kCompute) != compute) continue;
        lane.push_back({tl.tasks[id].start.seconds(), tl.tasks[id].end.seconds(), id});
      }
      std::stable_sort(lane.begin(), lane.end(),
                       [](const TaskBar& a, const TaskBar& b) { return a.start < b.start; });
      const double lane_y = compute ? y : y + kComputeHeight + 1;
      const double h = compute ? kComputeHeight : kCommHeight;
      // The white edge that parts neighbouring bars would pale bars of a
      // few pixels into stripes: only wider bars get it.
      auto stroke = [&](const TaskBar& b) {
        return compute && (b.end - b.start) * scale >= 3
                   ? std::string(" stroke=\"#ffffff\" stroke-width=\"0.3\"")
                   : std::string();
      };
      auto narrow = [&](const TaskBar& b) { return (b.end - b.start) * scale < 1; };
      for (size_t i = 0; i < lane.size();) {
        size_t j = i + 1;
        double group_end = lane[i].end;
        if (narrow(lane[i])) {
          while (j < lane.size() && narrow(lane[j]) && (lane[j].start - group_end) * scale < 1) {
            group_end = std::max(group_end, lane[j].end);
            ++j;
          }
        }
        const double start = lane[i].start;
        if (j == i + 1) {
          const TaskId id = lane[i].id;
          svg.rect_with_title(kLeft + start * scale, lane_y, (lane[i].end - start) * scale, h,
                              style_of(s.tasks[id]).fill,
                              s.task_name(id) + ": " + fixed_number(start, 6) + " - " +
                                  fixed_number(lane[i].end, 6) + " s",
                              "data-task=\"" + std::to_string(id) + "\"" + stroke(lane[i]));
          i = j;
          continue;
        }
        // Time and tasks by kind, in first-seen order; the most time sets the fill.
        std::vector<std::pair<Style, std::pair<double, size_t>>> kinds;
        std::string ids;
        for (size_t k = i; k < j; ++k) {
          const Style st = style_of(s.tasks[lane[k].id]);
          auto kind = std::find_if(kinds.begin(), kinds.end(), [&](const auto& e) {
            return std::string_view(e.first.label) == st.label;
          });
          if (kind == kinds.end()) {
            kinds.push_back({st, {0.0, size_t{0}}});
            kind = kinds.end() - 1;
          }
          kind->second.first += lane[k].end - lane[k].start;
          ++kind->second.second;
          if (k > i) ids += ' ';
          ids += std::to_string(lane[k].id);
        }
        const auto most = std::max_element(
            kinds.begin(), kinds.end(),
            [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
        std::string title = std::to_string(j - i) + " tasks, each under a pixel wide:";
        for (size_t k = 0; k < kinds.size(); ++k) {
          title += k > 0 ? ", " : " ";
          title += std::to_string(kinds[k].second.second);
          title += ' ';
          title += kinds[k].first.label;
        }
        title += ": " + fixed_number(start, 6) + " - " + fixed_number(group_end, 6) + " s";
        svg.rect_with_title(kLeft + start * scale, lane_y, (group_end - start) * scale, h,
                            most->first.fill, title, "data-tasks=\"" + ids + "\"");
        i = j;
      }
    }
  }
  svg.close_group();

  // Time axis.
  const std::vector<double> ticks = nice_ticks(0, step, 8);
  const int decimals = ticks.size() > 1 ? tick_decimals(ticks[1] - ticks[0]) : 3;
  svg.line(kLeft, axis_y, kLeft + plot, axis_y, "#333333");
  for (double tick : ticks) {
    const double x = kLeft + tick * scale;
    svg.line(x, gantt_top - 4, x, axis_y, "#dddddd", 0.5);
    svg.line(x, axis_y, x, axis_y + 4, "#333333");
    svg.text(x, axis_y + 16, fixed_number(tick, decimals), "middle", 10);
  }
  svg.text(kLeft + plot / 2, axis_y + 30, "time (s)", "middle", 11);

  // Legend.
  for (size_t k = 0; k < legend.size(); ++k) {
    const auto& [fill, label] = legend[k];
    const double lx = legend_at[k].first;
    const double ly = legend_y + kLegendRow * legend_at[k].second;
    svg.rect(lx, ly - 9, 12, 10, fill);
    svg.text(lx + 16, ly, label, "start", 10);
  }

  // Memory per stage over time.
  struct Curve {
    int64_t stage = 0;
    std::vector<std::pair<double, double>> points;  // seconds, bytes
    double peak = 0;
  };
  std::vector<Curve> curves;
  double top_bytes = report.memory_capacity_bytes;
  const std::vector<strategies::TaskMemory> deltas = strategies::task_memory(s);
  for (size_t ri : rows) {
    Curve c;
    c.stage = s.layout.stage(s.ranks[ri]);
    // What outlives the step, then the step's buffers as tasks take and
    // give them back.
    double base = 0;
    for (double bytes : strategies::standing_memory(s, ri)) base += bytes;
    // At one moment, in the memory replay's order: frees, what a task takes
    // and gives back first, then allocations.
    struct Change {
      sim::Time time;
      int order;
      double bytes;
    };
    std::vector<Change> changes;
    for (TaskId id = s.rank_begin[ri]; id < s.rank_begin[ri + 1]; ++id) {
      const strategies::TaskMemory& task = deltas[id];
      if (task.first != 0) {
        changes.push_back({tl.tasks[id].start, 1, task.first});
        changes.push_back({tl.tasks[id].start, 2, -task.first});
      }
      if (task.alloc != 0) changes.push_back({tl.tasks[id].start, 3, task.alloc});
      if (task.free != 0) changes.push_back({tl.tasks[id].end, 0, -task.free});
    }
    std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
      if (a.time != b.time) return a.time < b.time;
      return a.order < b.order;
    });
    double live = base;
    c.peak = live;
    c.points.emplace_back(0.0, live);
    for (const Change& ch : changes) {
      const double t = ch.time.seconds();
      c.points.emplace_back(t, live);
      live += ch.bytes;
      c.points.emplace_back(t, live);
      c.peak = std::max(c.peak, live);
    }
    c.points.emplace_back(step, live);
    top_bytes = std::max(top_bytes, c.peak);
    curves.push_back(std::move(c));
  }
  top_bytes = std::max(top_bytes * 1.05, 1.0);
  const double mem_scale = kMemoryHeight / top_bytes;
  svg.text(kLeft, memory_top - 12,
           "Memory per GPU by stage (GiB): tensors live (allocated, before the allocator's cache)",
           "start", 12, "font-weight=\"bold\"");
  svg.line(kLeft, memory_bottom, kLeft + plot, memory_bottom, "#333333");
  svg.line(kLeft, memory_top, kLeft, memory_bottom, "#333333");
  const std::vector<double> gib_ticks = nice_ticks(0, top_bytes / kGiB, 5);
  for (double g : gib_ticks) {
    const double y = memory_bottom - g * kGiB * mem_scale;
    svg.line(kLeft, y, kLeft + plot, y, "#eeeeee", 0.5);
    svg.text(kLeft - 6, y + 3, fixed_number(g, 0), "end", 10);
  }
  for (double tick : ticks) {
    const double x = kLeft + tick * scale;
    svg.text(x, memory_bottom + 14, fixed_number(tick, decimals), "middle", 10);
  }
  svg.text(kLeft + plot / 2, memory_bottom + 28, "time (s)", "middle", 11);
  const double cap_y = memory_bottom - report.memory_capacity_bytes * mem_scale;
  svg.line(kLeft, cap_y, kLeft + plot, cap_y, "#d62728", 1, "stroke-dasharray=\"6,4\"");
  svg.text(kLeft + plot, cap_y - 4,
           "capacity " + fixed_number(report.memory_capacity_bytes / kGiB, 1) + " GiB", "end", 10,
           "fill=\"#d62728\"");
  svg.open_group("class=\"memory\"");
  for (size_t k = 0; k < curves.size(); ++k) {
    const Curve& c = curves[k];
    std::vector<std::pair<double, double>> px;
    px.reserve(c.points.size());
    for (const auto& [t, bytes] : c.points) {
      px.emplace_back(kLeft + t * scale, memory_bottom - bytes * mem_scale);
    }
    const std::string dash = stage_dash(k);
    svg.polyline(px, kStagePalette[k % kStagePalette.size()], 1.2,
                 "data-stage=\"" + std::to_string(c.stage) + "\" data-peak-gib=\"" +
                     fixed_number(c.peak / kGiB, 3) + "\"" + (dash.empty() ? "" : " " + dash));
  }
  svg.close_group();
  // Every stage, on as many rows as it takes.
  for (size_t k = 0; k < curves.size(); ++k) {
    const double sx = stage_at[k].first;
    const double sy = legend2_y + kLegendRow * stage_at[k].second;
    svg.line(sx, sy - 4, sx + 14, sy - 4, kStagePalette[k % kStagePalette.size()], 2,
             stage_dash(k));
    svg.text(sx + 18, sy, stage_label(curves[k].stage, curves[k].peak), "start", 10,
             "class=\"stage-legend\"");
  }
  return svg.finish();
}

}  // namespace podsim::scenarios
