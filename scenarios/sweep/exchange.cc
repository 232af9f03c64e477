#include "scenarios/sweep/exchange.h"

#include <string>
#include <vector>

namespace podsim::scenarios::exchange {

void put_outcome(Writer& w, const PlanOutcome& o) {
  w.put<uint8_t>(o.fits ? 1 : 0);
  for (double v : {o.step_time_s, o.tokens_per_s, o.mfu, o.memory_peak_bytes,
                   o.memory_capacity_bytes, o.exposed_comm_s, o.bubble_fraction}) {
    w.put(v);
  }
  w.put_string(o.error);
}

PlanOutcome get_outcome(Reader& r) {
  PlanOutcome o;
  o.fits = r.get<uint8_t>() != 0;
  for (double* v : {&o.step_time_s, &o.tokens_per_s, &o.mfu, &o.memory_peak_bytes,
                    &o.memory_capacity_bytes, &o.exposed_comm_s, &o.bubble_fraction}) {
    *v = r.get<double>();
  }
  o.error = r.get_string();
  return o;
}

void put_screen(Writer& w, uint64_t index, const PlanScreen& s) {
  w.put<uint64_t>(index);
  w.put<uint8_t>(static_cast<uint8_t>((s.pruned_memory ? 1 : 0) | (s.refined ? 2 : 0)));
  w.put(s.memory_lower_bound_bytes);
  w.put(s.step_lower_bound_s);
}

void get_screens(Reader& r, std::vector<PlanScreen>& screens) {
  while (!r.done() && r.ok()) {
    const auto i = r.get<uint64_t>();
    if (i == kEndMarker) break;
    PlanScreen s;
    const auto flags = r.get<uint8_t>();
    s.pruned_memory = (flags & 1) != 0;
    s.refined = (flags & 2) != 0;
    s.memory_lower_bound_bytes = r.get<double>();
    s.step_lower_bound_s = r.get<double>();
    if (r.ok() && i < screens.size()) screens[i] = s;
  }
}

std::vector<std::string> gather_all(const SweepOptions& options, const std::string& mine) {
  if (options.partition_size <= 1) return {mine};
  return options.exchange(mine);
}

}  // namespace podsim::scenarios::exchange
