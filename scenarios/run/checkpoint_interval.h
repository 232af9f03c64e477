#pragma once

namespace podsim::scenarios {

// The checkpoint interval that minimises the time lost to saves and to
// rolled-back work, for a save that blocks training `stall_s` and a mean
// time between interruptions `mtti_s` (both > 0; an infinite MTTI gives an
// infinite interval: never save).

/// Young (1974), "A first order approximation to the optimum checkpoint
/// interval", CACM 17(9): sqrt(2 stall mtti).
double young_interval_s(double stall_s, double mtti_s);

/// Daly (2006), "A higher order estimate of the optimum checkpoint interval
/// for restart dumps", FGCS 22(3): sqrt(2 d M) [1 + sqrt(d / 2M) / 3 +
/// (d / 2M) / 9] - d for d < 2M, else M.
double daly_interval_s(double stall_s, double mtti_s);

}  // namespace podsim::scenarios
