#include "scenarios/report/trace.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>

#include "scenarios/report/svg.h"

namespace podsim::scenarios {
namespace {

using strategies::Stream;
using strategies::Task;
using strategies::TaskId;

constexpr std::array<std::string_view, strategies::kStreams> kTrackNames{
    "compute", "TP", "CP", "EP", "PP send next", "PP send prev", "DP gather", "DP reduce"};

/// In-task dimensions with their own track: (Dim index, stream).
constexpr std::array<std::pair<strategies::Dim, Stream>, 3> kInTask{{
    {strategies::Dim::kTp, Stream::kTp},
    {strategies::Dim::kCp, Stream::kCp},
    {strategies::Dim::kEp, Stream::kEp},
}};

/// JSON string literal (names here are ASCII; control characters escaped).
std::string json_quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[(c >> 4) & 0xf];
      out += kHex[c & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// Picoseconds as microseconds, exactly (6 decimals).
std::string micros(int64_t picoseconds) {
  const bool negative = picoseconds < 0;
  const uint64_t ps =
      negative ? static_cast<uint64_t>(-picoseconds) : static_cast<uint64_t>(picoseconds);
  const std::string frac = std::to_string(ps % 1000000);
  std::string out = negative ? "-" : "";
  out += std::to_string(ps / 1000000);
  out += '.';
  out.append(6 - frac.size(), '0');
  out += frac;
  return out;
}

int64_t ps_of(sim::Time t) { return t.ps(); }

/// The trace track of an in-task collective's dimension, or kStreams for
/// none (a dimension without its own track).
size_t in_task_track(strategies::Dim dim) {
  for (const auto& [d, stream] : kInTask) {
    if (d == dim) return static_cast<size_t>(stream);
  }
  return strategies::kStreams;
}

/// Instances of one collective op drawn one by one; past this many in a
/// task they are one event from the first's start to the last's end (a
/// 100-layer stage would otherwise write thousands per task).
constexpr int64_t kMaxInstancesDrawn = 64;

/// Events one in-task collective op of a task takes.
size_t events_of(const InTaskCollective& c) {
  if (in_task_track(c.dim) == strategies::kStreams) return 0;
  const int64_t n = c.repeats * c.count;
  return n > kMaxInstancesDrawn ? 1 : static_cast<size_t>(n);
}

}  // namespace

TraceCounts trace_counts(const StepDetail& detail) {
  const strategies::Schedule& s = detail.schedule;
  TraceCounts c;
  c.processes = s.ranks.size();
  c.metadata_events = c.processes * (2 + strategies::kStreams);
  c.task_events = s.tasks.size();
  for (TaskId id = 0; id < s.tasks.size(); ++id) {
    const uint32_t ci = detail.timeline.task_cost[id];
    if (ci == StepTimeline::kNoCost) continue;
    for (const InTaskCollective& op : detail.timeline.costs[ci].collectives) {
      c.in_task_events += events_of(op);
    }
  }
  return c;
}

void write_chrome_trace(std::ostream& out, const StepDetail& detail) {
  const strategies::Schedule& s = detail.schedule;
  const StepTimeline& tl = detail.timeline;
  const Report& r = detail.report;
  out << "{\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"scenario\":" << json_quote(r.scenario)
      << ",\"simulation\":" << json_quote(r.simulation_mode)
      << ",\"step_time_s\":" << json_quote(fixed_number(r.step_time_s, 9))
      << ",\"note\":\"one process per simulated GPU, one track per stream; times in "
         "microseconds\"},\n\"traceEvents\":[\n";
  bool first = true;
  auto event = [&](const std::string& body) {
    out << (first ? "" : ",\n") << '{' << body << '}';
    first = false;
  };
  for (size_t ri = 0; ri < s.ranks.size(); ++ri) {
    const int64_t rank = s.ranks[ri];
    const int64_t stage = s.layout.stage(rank);
    const std::string pid = std::to_string(rank);
    event("\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid +
          ",\"tid\":0,\"args\":{\"name\":" +
          json_quote("stage " + std::to_string(stage) + ": GPU " + std::to_string(rank)) + "}");
    event("\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + pid +
          ",\"tid\":0,\"args\":{\"sort_index\":" + std::to_string(stage * 1000000 + rank) + "}");
    for (size_t k = 0; k < kTrackNames.size(); ++k) {
      event("\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid + ",\"tid\":" +
            std::to_string(k) + ",\"args\":{\"name\":" + json_quote(kTrackNames[k]) + "}");
    }
  }
  for (TaskId id = 0; id < s.tasks.size(); ++id) {
    const Task& t = s.tasks[id];
    const TaskTime& tt = tl.tasks[id];
    const std::string pid = std::to_string(t.rank);
    const bool compute = t.kind != strategies::TaskKind::kComm;
    std::string args = "\"stage\":" + std::to_string(t.stage);
    if (t.micro_batch >= 0) args += ",\"micro_batch\":" + std::to_string(t.micro_batch);
    if (t.layer_end > t.layer_begin) {
      args += ",\"layers\":" +
              json_quote(std::to_string(t.layer_begin) + "-" + std::to_string(t.layer_end));
    }
    if (!compute) args += ",\"bytes\":" + fixed_number(t.bytes, 0);
    const std::string_view cat =
        compute ? strategies::to_string(t.kind) : strategies::to_string(t.purpose);
    event("\"name\":" + json_quote(s.task_name(id)) + ",\"cat\":" + json_quote(cat) +
          ",\"ph\":\"X\",\"pid\":" + pid + ",\"tid\":" +
          std::to_string(static_cast<int>(t.stream)) + ",\"ts\":" + micros(ps_of(tt.start)) +
          ",\"dur\":" + micros(ps_of(tt.end) - ps_of(tt.start)) + ",\"args\":{" + args + "}");
    const uint32_t ci = tl.task_cost[id];
    if (ci == StepTimeline::kNoCost) continue;
    // The work's ops ran one after another as priced; the engine ran the
    // task as one span (longer when the host or SMs held by transfers beside
    // it slowed it), over which the sequence is spread evenly.
    const WorkCost& cost = tl.costs[ci];
    const int64_t begin_ps = ps_of(tt.start);
    const int64_t end_ps = ps_of(tt.end);
    const double stretch =
        cost.sequence_s > 0 ? static_cast<double>(end_ps - begin_ps) * 1e-12 / cost.sequence_s : 1;
    const strategies::Work& work = s.works[static_cast<size_t>(t.work)];
    for (const InTaskCollective& c : cost.collectives) {
      const size_t events = events_of(c);
      if (events == 0) continue;
      const std::string_view track = kTrackNames[in_task_track(c.dim)];
      const std::string op_name = work.segments[c.segment].ops[c.op].name;
      auto at = [&](int64_t instance) {
        const double offset_s = c.start_s + static_cast<double>(instance / c.count) * c.repeat_s +
                                static_cast<double>(instance % c.count) * c.step_s;
        return std::min(end_ps,
                        begin_ps + static_cast<int64_t>(std::llround(offset_s * stretch * 1e12)));
      };
      auto draw = [&](int64_t first_instance, int64_t last_instance, const std::string& extra) {
        const int64_t from = at(first_instance);
        const int64_t to =
            std::min(end_ps, at(last_instance) + sim::Time::from_seconds_ceil(c.time_s).ps());
        event("\"name\":" + json_quote(std::string(track) + ": " + op_name) +
              ",\"cat\":\"in_task_collective\",\"ph\":\"X\",\"pid\":" + pid +
              ",\"tid\":" + std::to_string(in_task_track(c.dim)) + ",\"ts\":" + micros(from) +
              ",\"dur\":" + micros(to - from) +
              ",\"args\":{\"task\":" + json_quote(s.task_name(id)) + "," + extra + "}");
      };
      const int64_t instances = c.repeats * c.count;
      const auto instances_d = static_cast<double>(instances);
      if (events == 1 && instances > 1) {
        draw(0, instances - 1,
             "\"instances\":" + std::to_string(instances) +
                 ",\"busy_s\":" + json_quote(fixed_number(c.time_s * instances_d, 9)) +
                 ",\"exposed_s\":" + json_quote(fixed_number(c.exposed_s * instances_d, 9)) +
                 ",\"note\":\"" + std::to_string(instances) +
                 " instances, from the first's start to the last's end\"");
        continue;
      }
      for (int64_t k = 0; k < instances; ++k) {
        draw(k, k,
             "\"instance\":" + std::to_string(k) +
                 ",\"exposed_s\":" + json_quote(fixed_number(c.exposed_s, 9)));
      }
    }
  }
  out << "\n]}\n";
}

std::string chrome_trace_json(const StepDetail& detail) {
  std::ostringstream out;
  write_chrome_trace(out, detail);
  return out.str();
}

}  // namespace podsim::scenarios
