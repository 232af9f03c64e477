#pragma once

#include <string>

#include "scenarios/step/simulate.h"

namespace podsim::scenarios {

// The simulated step as an SVG picture (`podsim run --timeline FILE.svg`):
//
// - a Gantt chart of the pipeline schedule: one row per stage (its
//   representative GPU; in every-rank mode the first GPU of the stage), time
//   across in seconds. Each row has a compute lane (forward, backward, B, W,
//   recompute, optimizer, each in its colour; idle stretches, the bubbles
//   and waits for communication, shaded) and below it a thin lane with the
//   communication tasks (pipeline sends, data-parallel collectives);
// - under it, the memory of each stage's GPU over time: static memory
//   (weights, gradients, optimizer states, runtime reserve, from the report)
//   plus the tasks' allocations and frees, as simulate() counts the peak;
//   the GPU's capacity dashed; every stage named in the legend, on as many
//   rows as it takes (past ten stages the colours repeat with dashes).
//
// Every task bar carries data-task="ID" (its schedule task id); the chart
// group carries data-x0 (pixels) and data-px-per-s, so x = x0 + start * scale
// and width = (end - start) * scale, to two decimals. Tasks of one lane
// narrower than a pixel and less than a pixel apart are one bar (a long
// pipeline's would be stripes): data-tasks="ID ID ...", from the first's
// start to the last's end, in the fill of the kind with most of their time,
// its title counting the tasks by kind; bars under 3 px lose the white edge
// that parts wider neighbours.

struct TimelineOptions {
  double width_px = 1200;
};

std::string timeline_svg(const StepDetail& detail, const TimelineOptions& options = {});

}  // namespace podsim::scenarios
