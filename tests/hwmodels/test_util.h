#pragma once

// Helpers the hwmodels tests share.

#include <string>
#include <vector>

#include "hwmodels/gpu_model.h"
#include "hwmodels/spec_problem.h"

namespace podsim::hwmodels::testing {

inline bool has_problem(const std::vector<SpecProblem>& problems, const std::string& path) {
  for (const SpecProblem& p : problems) {
    if (p.path == path) return true;
  }
  return false;
}

/// A kernel's achieved rate in TFLOP/s.
inline double tflops(const KernelCost& c) { return c.flops / c.time_s / 1e12; }

}  // namespace podsim::hwmodels::testing
