// The run-level keys of a scenario: the cluster's failure rates and
// checkpoint storage, and the whole run (/run). Read like every other key,
// through their declarations (schema.cc), where the defaults and their
// sources are.
#include <string>

#include "scenarios/input/spec_builder.h"

namespace podsim::scenarios::reader_detail {

void SpecBuilder::build_run(ScenarioSpec& s) {
  ReliabilitySpec& r = s.reliability;
  const std::string rates = "/cluster/reliability/";
  r.source = text(rates + "source").value_or("");
  r.gpu_per_1000_gpu_days = number(rates + "gpu_per_1000_gpu_days").value_or(0);
  r.hbm_per_1000_gpu_days = number(rates + "hbm_per_1000_gpu_days").value_or(0);
  r.sdc_per_1000_gpu_days = number(rates + "sdc_per_1000_gpu_days").value_or(0);
  r.host_per_1000_node_days = number(rates + "host_per_1000_node_days").value_or(0);
  r.host_maintenance_per_1000_node_days =
      number(rates + "host_maintenance_per_1000_node_days").value_or(0);
  r.software_per_1000_node_days = number(rates + "software_per_1000_node_days").value_or(0);
  r.nic_per_1000_nic_days = number(rates + "nic_per_1000_nic_days").value_or(0);
  r.network_per_1000_nic_days = number(rates + "network_per_1000_nic_days").value_or(0);
  r.planned_per_day = number(rates + "planned_per_day").value_or(0);

  StorageSpec& storage = s.storage;
  storage.write_bytes_per_s = number("/cluster/storage/write_bandwidth");
  storage.read_bytes_per_s = number("/cluster/storage/read_bandwidth");
  storage.host_copy_bytes_per_s = number("/cluster/storage/host_copy_bandwidth").value_or(0);

  RunSpec& run = s.run;
  if (usable("/run")) run.tokens = number("/run/tokens");
  run.samples = integer("/run/samples").value_or(1);
  run.seed = static_cast<uint64_t>(integer("/run/seed").value_or(0));
  run.save_mode =
      text("/run/checkpoint/mode").value_or("async") == "sync" ? SaveMode::kSync : SaveMode::kAsync;
  const std::string interval = "/run/checkpoint/interval";
  if (usable(interval) && !doc_.values.contains(interval)) {
    // The object form: exactly one of steps and time.
    const bool steps = given(interval + "/steps"), time = given(interval + "/time");
    if (steps == time) {
      problem(interval, steps ? "give steps or time, not both" : "needs steps or time",
              "{\"steps\": 500} or {\"time\": \"30 min\"}");
    }
    run.interval_rule = steps ? IntervalRule::kSteps : IntervalRule::kTime;
    run.interval_steps = integer(interval + "/steps").value_or(1);
    run.interval_s = number(interval + "/time").value_or(1);
  } else {
    run.interval_rule =
        text(interval).value_or("daly") == "young" ? IntervalRule::kYoung : IntervalRule::kDaly;
  }
  run.restart_overhead_s = number("/run/restart/overhead").value_or(0);
  run.requeue_s = number("/run/restart/requeue").value_or(0);
  run.straggler_node_fraction = number("/run/stragglers/node_fraction").value_or(0);
  run.straggler_gpu_slowdown = number("/run/stragglers/gpu_slowdown").value_or(1);
  run.straggler_mean_duration_s = number("/run/stragglers/mean_duration").value_or(1);
}

}  // namespace podsim::scenarios::reader_detail
