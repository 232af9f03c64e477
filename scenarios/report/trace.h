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
//   (step_simulation.h), not run as tasks: the TP/CP/EP track shows, for
//   each compute task whose collectives of that dimension are exposed, one
//   event as long as that exposed time, drawn from the task's start (where
//   inside the task they fall is not simulated; the event says so).

/// Events the trace of `detail` holds: metadata (2 per process, 8 thread
/// names per process) + one per task + one per (compute task, dimension)
/// with exposed in-task communication.
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
