#pragma once

#include <iosfwd>
#include <string>

#include "scenarios/step/simulate.h"

namespace podsim::scenarios {

// The simulated step as a Chrome / Perfetto trace ("traceEvents" JSON, open
// it in ui.perfetto.dev or chrome://tracing).
//
// - One process per simulated GPU (the representative of each stage in
//   symmetric mode), named "stage S: GPU R", sorted by stage.
// - One thread (track) per stream, tid = the stream's index: 0 compute,
//   1 TP, 2 CP, 3 EP, 4 PP send next, 5 PP send prev, 6 DP gather,
//   7 DP reduce.
// - One complete ("X") event per task on its stream's track, named by
//   Schedule::task_name, times in microseconds.
// - In-task TP, CP and EP collectives are priced inside their compute task
//   (step_simulation.h), not run as tasks of their own. The TP/CP/EP track
//   shows each instance of each (one per layer and step, named
//   "TP: <op name>") where the task's priced op sequence runs it: after the
//   compute ops before it, beside the compute op it is paired with, as long
//   as it takes alone on the fabric (args: its exposed part). The engine
//   runs the task as one span, longer than the sequence when the host or
//   the SMs that transfers beside it hold slow it; the sequence is spread
//   evenly over that span. Past 64 instances of one op in a task, they are
//   one event from the first's start to the last's end.

/// Events the trace of `detail` holds: metadata (2 per process, 8 thread
/// names per process) + one per task + one per in-task collective instance
/// (or one per op of a task past 64 instances).
struct TraceCounts {
  size_t processes = 0;
  size_t metadata_events = 0;
  size_t task_events = 0;
  size_t in_task_events = 0;
  size_t total() const { return metadata_events + task_events + in_task_events; }
};
TraceCounts trace_counts(const StepDetail& detail);

/// Writes the trace JSON (one document, keys in a fixed order).
void write_chrome_trace(std::ostream& out, const StepDetail& detail);

/// The same as a string.
std::string chrome_trace_json(const StepDetail& detail);

}  // namespace podsim::scenarios
