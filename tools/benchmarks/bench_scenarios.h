// Scenario files the benchmarks run, read from the source tree.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "scenarios/input/reader.h"

#ifndef PODSIM_SOURCE_DIR
#define PODSIM_SOURCE_DIR "."
#endif

namespace podsim::bench {

/// The scenario at `relative_path` under the source directory; throws if it
/// does not read (a benchmark without its input measures nothing).
inline scenarios::ScenarioSpec load_scenario(const std::string& relative_path) {
  auto spec = scenarios::read_scenario_file(std::string(PODSIM_SOURCE_DIR) + "/" + relative_path);
  if (!spec.ok()) throw std::runtime_error("cannot read " + relative_path);
  return std::move(spec.value());
}

}  // namespace podsim::bench
