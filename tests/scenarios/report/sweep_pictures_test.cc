// The pictures of a simulated step and of a sweep: the Chrome trace is valid
// JSON with one process per simulated GPU, one track per stream and one
// event per task at its simulated times; the timeline SVG is well-formed
// and its bars sit at the tasks' times; the sweep's HTML refers to nothing
// outside itself.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "hwmodels/memory_model.h"
#include "scenarios/report/sweep_charts.h"
#include "scenarios/report/sweep_report.h"
#include "scenarios/report/timeline_svg.h"
#include "scenarios/report/trace.h"
#include "scenarios/step/simulate.h"
#include "scenarios/sweep/sweep.h"
#include "tests/scenarios/report/sweep_xml_check.h"
#include "tests/scenarios/sweep/sweep_test_util.h"

namespace podsim::scenarios {
namespace {

using sweep_testing::read_ok;
using sweep_testing::small_scenario;
using sweep_testing::xml_problem;
using sweep_testing::XmlAttributes;

/// A 4-stage interleaved pipeline with ZeRO-1 (parameter gathers), data
/// parallelism (gradient syncs) and TP collectives inside the compute tasks.
StepDetail pipeline_step() {
  const ScenarioSpec spec =
      read_ok(small_scenario(4, 32,
                             R"({"tp": 2, "pp": 4, "dp": 4, "sequence_parallel": true, "zero": 1,
          "pipeline": {"schedule": "interleaved_1f1b", "virtual_stages": 2},
          "recompute": "selective"})"));
  Result<StepDetail> detail = simulate_detailed(spec);
  EXPECT_TRUE(detail.ok());
  return detail.ok() ? std::move(detail.value()) : StepDetail{};
}

TEST(StepTimeline, TheXmlCheckerCatchesBrokenDocuments) {
  EXPECT_EQ(xml_problem("<svg a=\"1\"><g><rect/></g></svg>"), "");
  EXPECT_NE(xml_problem("<svg><g></svg>"), "");                 // mismatched
  EXPECT_NE(xml_problem("<svg a=1/>"), "");                     // unquoted
  EXPECT_NE(xml_problem("<svg><text>a & b</text></svg>"), "");  // bare &
  EXPECT_NE(xml_problem("<svg/><svg/>"), "");                   // two roots
  EXPECT_NE(xml_problem("<svg>"), "");                          // unclosed
}

TEST(StepTrace, OneProcessPerGpuOneTrackPerStreamOneEventPerTask) {
  const StepDetail d = pipeline_step();
  const strategies::Schedule& s = d.schedule;
  ASSERT_EQ(s.ranks.size(), 4u);
  const nlohmann::json trace = nlohmann::json::parse(chrome_trace_json(d));
  const nlohmann::json& events = trace.at("traceEvents");
  const TraceCounts counts = trace_counts(d);
  EXPECT_EQ(events.size(), counts.total());
  EXPECT_EQ(counts.task_events, s.tasks.size());
  EXPECT_GT(counts.in_task_events, 0u);  // TP collectives of the tp=2 forwards

  std::set<int64_t> processes;
  std::map<int64_t, std::set<int>> tracks;
  size_t task_events = 0;
  std::map<std::string, size_t> name_count;
  for (const nlohmann::json& e : events) {
    const std::string ph = e.at("ph");
    const std::string name = e.at("name");
    if (ph == "M") {
      if (name == "process_name") processes.insert(e.at("pid").get<int64_t>());
      if (name == "thread_name") tracks[e.at("pid").get<int64_t>()].insert(e.at("tid").get<int>());
      continue;
    }
    ASSERT_EQ(ph, "X");
    if (e.at("cat") == "in_task_collective") continue;
    ++task_events;
    ++name_count[name];
  }
  EXPECT_EQ(processes, std::set<int64_t>(s.ranks.begin(), s.ranks.end()));
  for (int64_t rank : s.ranks) EXPECT_EQ(tracks[rank].size(), 8u);
  EXPECT_EQ(task_events, s.tasks.size());

  // Every task's event: its name, stream and simulated times in microseconds.
  size_t checked = 0;
  for (const nlohmann::json& e : events) {
    if (e.at("ph") != "X" || e.at("cat") == "in_task_collective") continue;
    const std::string name = e.at("name");
    if (name_count[name] != 1) continue;  // match unique names only
    for (strategies::TaskId id = 0; id < s.tasks.size(); ++id) {
      if (s.task_name(id) != name) continue;
      EXPECT_EQ(e.at("tid").get<int>(), static_cast<int>(s.tasks[id].stream));
      EXPECT_EQ(e.at("pid").get<int64_t>(), s.tasks[id].rank);
      EXPECT_NEAR(e.at("ts").get<double>(), d.timeline.tasks[id].start.seconds() * 1e6, 1e-6);
      EXPECT_NEAR(e.at("dur").get<double>(),
                  (d.timeline.tasks[id].end - d.timeline.tasks[id].start).seconds() * 1e6, 1e-6);
      ++checked;
      break;
    }
  }
  EXPECT_GT(checked, s.tasks.size() / 2);
}

TEST(StepTrace, InTaskCollectivesSitWhereTheTasksOpSequenceRanThem) {
  const StepDetail d = pipeline_step();
  const strategies::Schedule& s = d.schedule;
  const nlohmann::json trace = nlohmann::json::parse(chrome_trace_json(d));
  // TP events by task name, in the order written (instance order).
  std::map<std::string, std::vector<const nlohmann::json*>> tp_events;
  for (const nlohmann::json& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X" && e.at("cat") == "in_task_collective" && e.at("tid") == 1) {
      tp_events[e.at("args").at("task").get<std::string>()].push_back(&e);
    }
  }
  size_t checked = 0, forwards = 0;
  for (strategies::TaskId id = 0; id < s.tasks.size(); ++id) {
    const uint32_t ci = d.timeline.task_cost[id];
    if (ci == StepTimeline::kNoCost) continue;
    const WorkCost& cost = d.timeline.costs[ci];
    // The sequence the positions are in is the work's priced time.
    double parts = cost.compute_s + cost.recompute_s + cost.optimizer_s;
    for (const double e : cost.exposed_comm_s) parts += e;
    ASSERT_NEAR(cost.sequence_s, parts, 1e-9 * parts) << s.task_name(id);
    const auto found = tp_events.find(s.task_name(id));
    if (found == tp_events.end()) continue;
    const std::vector<const nlohmann::json*>& events = found->second;
    const double start_us = d.timeline.tasks[id].start.seconds() * 1e6;
    const double end_us = d.timeline.tasks[id].end.seconds() * 1e6;
    const double stretch = (end_us - start_us) * 1e-6 / cost.sequence_s;
    const InTaskCollective* first = nullptr;
    for (const InTaskCollective& c : cost.collectives) {
      if (c.dim == strategies::Dim::kTp && (first == nullptr || c.start_s < first->start_s)) {
        first = &c;
      }
    }
    ASSERT_NE(first, nullptr);
    // A forward's first TP collective runs after the compute before it (the
    // first layer's input norm, the embedding), not at the task's start.
    const bool forward = s.tasks[id].kind == strategies::TaskKind::kForward;
    if (forward) {
      EXPECT_GT(first->start_s, 0) << s.task_name(id);
    }
    double first_ts = events.front()->at("ts").get<double>();
    double exposed = 0;
    for (const nlohmann::json* e : events) {
      const double ts = e->at("ts").get<double>();
      first_ts = std::min(first_ts, ts);
      EXPECT_GE(ts, start_us - 1e-6);
      EXPECT_LE(ts + e->at("dur").get<double>(), end_us + 1e-6);
      exposed += std::stod(e->at("args").at("exposed_s").get<std::string>());
    }
    if (forward) {
      EXPECT_GT(first_ts, start_us + 1e-3) << s.task_name(id);
      ++forwards;
    }
    EXPECT_NEAR(first_ts, start_us + first->start_s * stretch * 1e6, 2e-6) << s.task_name(id);
    // Together the instances expose what the report books for the task.
    const double booked = cost.exposed_comm_s[static_cast<size_t>(strategies::Dim::kTp)];
    EXPECT_NEAR(exposed, booked, 1e-9 * static_cast<double>(events.size()) + 1e-6 * booked)
        << s.task_name(id);
    ++checked;
  }
  EXPECT_GT(checked, 10u);
  EXPECT_GT(forwards, 5u);
}

TEST(StepTimeline, WellFormedSvgWithBarsAtTheTaskTimes) {
  const StepDetail d = pipeline_step();
  const strategies::Schedule& s = d.schedule;
  const std::string svg = timeline_svg(d);
  double x0 = -1, scale = -1;
  std::map<int64_t, std::pair<double, double>> bars;  // task -> x, width
  size_t idle = 0;
  // Tasks under a pixel wide drawn as one bar: their ids, x, width.
  std::vector<std::pair<std::vector<strategies::TaskId>, std::pair<double, double>>> groups;
  std::map<int64_t, double> peak_gib;
  const std::string problem =
      xml_problem(svg, [&](const std::string& name, const XmlAttributes& a) {
        if (name == "g" && a.count("data-px-per-s") != 0) {
          x0 = std::stod(a.at("data-x0"));
          scale = std::stod(a.at("data-px-per-s"));
        }
        if (name == "rect" && a.count("data-task") != 0) {
          bars[std::stoll(a.at("data-task"))] = {std::stod(a.at("x")), std::stod(a.at("width"))};
        }
        if (name == "rect" && a.count("data-tasks") != 0) {
          std::vector<strategies::TaskId> ids;
          std::istringstream in(a.at("data-tasks"));
          for (strategies::TaskId id = 0; in >> id;) ids.push_back(id);
          groups.push_back({std::move(ids), {std::stod(a.at("x")), std::stod(a.at("width"))}});
        }
        if (name == "rect" && a.count("class") != 0 && a.at("class") == "idle") ++idle;
        if (name == "polyline" && a.count("data-stage") != 0) {
          peak_gib[std::stoll(a.at("data-stage"))] = std::stod(a.at("data-peak-gib"));
        }
      });
  ASSERT_EQ(problem, "");
  ASSERT_GT(scale, 0);
  // Each group spans its tasks, each of them under a pixel wide.
  for (const auto& [ids, bar] : groups) {
    ASSERT_GE(ids.size(), 2u);
    double first = 1e300, last = -1e300;
    for (const strategies::TaskId id : ids) {
      EXPECT_EQ(bars.count(id), 0u) << s.task_name(id);
      bars[id] = {-1, -1};  // accounted for
      const double start = d.timeline.tasks[id].start.seconds();
      const double end = d.timeline.tasks[id].end.seconds();
      EXPECT_LT((end - start) * scale, 1) << s.task_name(id);
      first = std::min(first, start);
      last = std::max(last, end);
    }
    EXPECT_NEAR(bar.first, x0 + first * scale, 0.0051);
    EXPECT_NEAR(bar.second, (last - first) * scale, 0.0051);
  }
  EXPECT_EQ(bars.size(), s.tasks.size());  // every task drawn, alone or in a group
  for (strategies::TaskId id = 0; id < s.tasks.size(); ++id) {
    ASSERT_EQ(bars.count(id), 1u) << s.task_name(id);
    if (bars[id].first < 0) continue;  // in a group
    const double start = d.timeline.tasks[id].start.seconds();
    const double end = d.timeline.tasks[id].end.seconds();
    // Two decimals in the file.
    EXPECT_NEAR(bars[id].first, x0 + start * scale, 0.0051) << s.task_name(id);
    EXPECT_NEAR(bars[id].second, (end - start) * scale, 0.0051) << s.task_name(id);
  }
  // Four stages, each idle before its first forward except stage 0's warm-up:
  // the pipeline bubbles show.
  EXPECT_GE(idle, 3u);
  // The memory curves reach the tensors the report counts live at each
  // stage's peak, less the cuBLAS workspaces (taken before the step).
  double workspaces = 0;
  for (const hwmodels::MemoryReservation& w :
       hwmodels::memory_model(hwmodels::GpuSpec{}).workspaces) {
    workspaces += w.bytes;
  }
  ASSERT_EQ(peak_gib.size(), d.report.per_stage.size());
  for (const StageMemory& m : d.report.per_stage) {
    const double live = m.weights + m.grads + m.optimizer + m.activations + m.temporaries;
    EXPECT_NEAR(peak_gib[m.stage], (live - workspaces) / (1024.0 * 1024 * 1024), 0.0006) << m.stage;
  }
}

TEST(StepTimeline, ALongNarrowPipelineNamesEveryStageAndDrawsNoStripes) {
  // 8 stages, 512 micro-batches, 400 px: thousands of tasks a quarter of a
  // pixel wide, and a memory legend of 8 entries in 256 px.
  const ScenarioSpec spec = read_ok(small_scenario(1, 8, R"({"pp": 8})", "\"h100-sxm-80g\"", 512));
  Result<StepDetail> detail = simulate_detailed(spec);
  ASSERT_TRUE(detail.ok());
  const StepDetail& d = detail.value();
  const std::string svg = timeline_svg(d, {.width_px = 400});
  size_t stage_labels = 0, bars = 0, drawn_tasks = 0;
  const std::string problem =
      xml_problem(svg, [&](const std::string& name, const XmlAttributes& a) {
        if (name == "rect" && a.count("data-task") != 0) {
          ++bars;
          ++drawn_tasks;
        }
        if (name == "rect" && a.count("data-tasks") != 0) {
          ++bars;
          std::istringstream in(a.at("data-tasks"));
          for (int64_t id = 0; in >> id;) ++drawn_tasks;
        }
        if (name == "text" && a.count("class") != 0 && a.at("class") == "stage-legend") {
          ++stage_labels;
        }
      });
  ASSERT_EQ(problem, "");
  EXPECT_EQ(svg.find(">...<"), std::string::npos);  // no legend cut short
  EXPECT_EQ(stage_labels, 8u);
  for (int stage = 0; stage < 8; ++stage) {
    EXPECT_NE(svg.find(">stage " + std::to_string(stage) + " peak "), std::string::npos) << stage;
  }
  // Every task is drawn, in far fewer bars than tasks.
  EXPECT_EQ(drawn_tasks, d.schedule.tasks.size());
  EXPECT_LT(bars * 10, d.schedule.tasks.size()) << bars;
}

TEST(SweepReport, HtmlIsSelfContainedAndJsonHasTheContractKeys) {
  const ScenarioSpec spec =
      read_ok(small_scenario(2, 16, R"({"tp": 2, "pp": 2, "dp": 4, "sequence_parallel": true})"));
  SweepOptions options;
  options.top_k = 4;
  options.space.micro_batches = {1};
  std::vector<SweepTarget> targets;
  for (int64_t gpus : {8, 16})
    targets.push_back(make_sweep_target(spec, gpus, std::nullopt).value());
  Result<SweepOutcome> run = run_sweep(spec, targets, options);
  ASSERT_TRUE(run.ok());
  const SweepOutcome& o = run.value();
  const std::vector<std::string> space = describe_sweep_space(spec, o.targets, options.space);

  const std::string html = sweep_html(spec, o, space);
  for (const char* outside : {"http:", "https:", "src=", "@import", "url(", "<script", "<link"}) {
    EXPECT_EQ(html.find(outside), std::string::npos) << outside;
  }
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("<table>"), std::string::npos);
  EXPECT_EQ(html.rfind("</html>\n"), html.size() - 8);

  const nlohmann::json j = sweep_to_json(spec, o, space);
  for (const char* key : {"plans_total", "plans_pruned_memory", "plans_simulated",
                          "plans_skipped_by_bound", "results", "pareto", "baseline"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j.at("plans_total").get<uint64_t>(), o.plans_total);
  const nlohmann::json& results = j.at("results");
  ASSERT_EQ(results.size(), 4u);
  double previous = 0;
  for (const nlohmann::json& r : results) {
    for (const char* key :
         {"plan", "step_time_s", "tokens_per_s", "mfu", "memory_peak_bytes", "cost_usd"}) {
      EXPECT_TRUE(r.contains(key)) << key;
    }
    for (const char* key : {"dp", "tp", "pp", "cp", "ep", "zero", "pipeline", "recompute",
                            "micro_batch", "gpus", "gpu"}) {
      EXPECT_TRUE(r.at("plan").contains(key)) << key;
    }
    EXPECT_GE(r.at("step_time_s").get<double>(), previous);
    previous = r.at("step_time_s").get<double>();
  }
  // Every simulated plan that fits is a CSV row.
  const std::string csv = sweep_csv(o);
  EXPECT_EQ(static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n')), o.ranked.size() + 1);
}

TEST(SweepCharts, AxesSpanningDecadesAreLogarithmicAndPointsCarryTheirLabels) {
  using sweep_charts::Series;
  // Step times of 0.05 s and 20 s: on a linear axis the first sits on zero.
  const std::vector<Series> decades{
      {"h100", "#1f77b4", {{1024, 20.0}, {8192, 0.05}}, true, 3, {"20.0 s", "50.0 ms"}}};
  const std::string log_chart = sweep_charts::chart("t", "GPUs", "step time (s)", decades, true);
  EXPECT_NE(log_chart.find("step time (s) (log scale)"), std::string::npos) << log_chart;
  EXPECT_NE(log_chart.find(">50.0 ms<"), std::string::npos);
  EXPECT_NE(log_chart.find(">0.1<"), std::string::npos);  // a tick per 1-2-5 of each decade
  EXPECT_NE(log_chart.find(">10<"), std::string::npos);
  // Within a decade the axis stays linear from zero.
  const std::vector<Series> close{{"h100", "#1f77b4", {{1024, 6.0}, {2048, 3.5}}, true, 3, {}}};
  const std::string linear = sweep_charts::chart("t", "GPUs", "step time (s)", close, true);
  EXPECT_EQ(linear.find("log scale"), std::string::npos);
  EXPECT_NE(linear.find(">0<"), std::string::npos);
  // A scatter of plans fits its y axis to them: costs of 670k-850k get no 0 tick.
  const std::vector<Series> plans{
      {"h100", "#1f77b4", {{9.2, 673e3}, {10.1, 740e3}, {11.5, 850e3}}, false, 2, {}}};
  const std::string scatter = sweep_charts::chart("t", "days", "cost (USD)", plans, false);
  EXPECT_EQ(scatter.find(">0<"), std::string::npos) << scatter;
  EXPECT_NE(scatter.find(">700.0k<"), std::string::npos) << scatter;
  // Bars: one per target, each with its value written above it.
  const std::string bars = sweep_charts::bar_chart(
      "Step time", "s",
      {{"h100-sxm-80g", "", 6.7, "6.72 s", "#1f77b4"}, {"b200", "", 3.1, "3.10 s", "#ff7f0e"}});
  EXPECT_NE(bars.find(">6.72 s<"), std::string::npos);
  EXPECT_NE(bars.find(">b200<"), std::string::npos);
  size_t rects = 0;
  for (size_t at = bars.find("<rect"); at != std::string::npos; at = bars.find("<rect", at + 1)) {
    ++rects;
  }
  EXPECT_EQ(rects, 2u);
}

}  // namespace
}  // namespace podsim::scenarios
