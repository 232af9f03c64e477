// PLACEHOLDER, branch wt/reader ONLY. Not the simulator.
//
// The lead writes the real scenarios::simulate() in this file on main. This
// stand-in exists so that the podsim binary links in the reader/CLI branch
// and its tests (which never need a simulation) can run; `podsim run`
// answers with the problem below (exit status 2). When merging, take main's
// scenarios/simulate.cc and delete this one (an add/add conflict marks it).
#include "scenarios/simulate.h"

namespace podsim::scenarios {

Result<Report> simulate(const ScenarioSpec& /*spec*/, const SimulateOptions& /*options*/) {
  return std::vector<Problem>{
      {"", "simulation not available yet",
       "this build has the reader/CLI placeholder of scenarios/simulate.cc"}};
}

}  // namespace podsim::scenarios
