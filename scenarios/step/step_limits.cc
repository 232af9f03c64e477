#include "scenarios/step/step_limits.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "scenarios/input/quantity.h"
#include "sim/time.h"

namespace podsim::scenarios {
namespace {

using hwmodels::LinkKind;

std::string bandwidth_text(double bytes_per_s) {
  return bytes_per_s >= 1e6 ? format_bandwidth(bytes_per_s) : format_number(bytes_per_s) + " B/s";
}

std::string flops_text(double flops_per_s) {
  return flops_per_s >= 1e9 ? format_flops_rate(flops_per_s)
                            : format_number(flops_per_s) + " FLOP/s";
}

std::string duration_text(double seconds) {
  if (!std::isfinite(seconds)) return "longer than any clock";
  return format_number(seconds) + " s (" + format_number(seconds / 86400.0) + " days)";
}

std::string outlasts() { return "the step outlasts podsim's clock (" + clock_limit_text() + "): "; }

/// The slowest op of a compute task's work (count x repeat x price).
struct SlowOp {
  const strategies::Op* op = nullptr;
  double seconds = -1;
  hwmodels::KernelCost cost;
};

SlowOp slowest_op(const strategies::Work& work, const StepHardware& hardware,
                  const strategies::Job& job) {
  SlowOp out;
  for (const strategies::Segment& segment : work.segments) {
    for (const strategies::Op& op : segment.ops) {
      if (op.kind == strategies::OpKind::kCollective) continue;
      const hwmodels::KernelCost cost = price_op(op, hardware.gpu, job, hardware.kernels.attention);
      const double seconds =
          cost.time_s * static_cast<double>(op.count) * static_cast<double>(segment.repeat);
      if (out.op == nullptr || seconds > out.seconds) out = {&op, seconds, cost};
    }
  }
  return out;
}

/// The GPU key a compute task's slowest op is bound by.
Problem compute_problem(const std::string& task_name, const SlowOp& slow,
                        const hwmodels::GpuModel& gpu, double task_s) {
  const hwmodels::GpuSpec& spec = gpu.spec();
  const std::string what =
      outlasts() + "'" + task_name + "' takes " + duration_text(task_s) +
      (slow.op ? ", most in '" + slow.op->name + "' (" +
                     std::string(hwmodels::to_string(slow.cost.bound)) + "-bound"
               : std::string(" ("));
  const std::string size_hint = ", or make the model or the batch smaller (/model, /training)";
  if (slow.op == nullptr || slow.cost.bound == hwmodels::KernelBound::kLaunch) {
    return {"/cluster/gpu/launch_overhead",
            what + ", " + format_number(spec.launch_overhead_s) + " s per kernel launch)",
            "check this value and its unit ('2.1 us')"};
  }
  if (slow.cost.bound == hwmodels::KernelBound::kMemory) {
    // GpuModel reads from L2 what fits in it, from HBM the rest.
    const bool in_l2 = slow.cost.bytes <= spec.l2_capacity_bytes && spec.l2_bw_bytes_per_s > 0;
    const double bandwidth = in_l2 ? spec.l2_bw_bytes_per_s : spec.hbm_bw_bytes_per_s;
    return {in_l2 ? "/cluster/gpu/l2/bandwidth" : "/cluster/gpu/hbm/bandwidth",
            what + " at " + bandwidth_text(bandwidth) + ")",
            "check this value and its unit ('3.35 TB/s')" + size_hint};
  }
  // Matrix products run at the op's format's rate; elementwise arithmetic
  // on the fp32 units.
  const sim::NumberFormat format = slow.op->kind == strategies::OpKind::kMemoryBound
                                       ? sim::NumberFormat::kFp32
                                       : slow.op->format;
  return {"/cluster/gpu/peak_flops/" + std::string(sim::to_string(format)),
          what + " at a peak of " + flops_text(spec.peak(format)) + ")",
          "check this value and its unit ('989 TFLOP/s')" + size_hint};
}

constexpr const char* kDimNames[strategies::kDims] = {"TP", "CP", "EP", "DP", "PP"};

}  // namespace

std::string clock_limit_text() {
  const double days = sim::Time::max().seconds() / 86400.0;
  return "about " + std::to_string(static_cast<int>(days)) + " days";
}

SlowLink slowest_link(const hwmodels::Fabric& fabric, std::span<const int64_t> members) {
  const hwmodels::ClusterSpec& cluster = fabric.spec();
  SlowLink out{
      "/cluster/scale_up/bandwidth",
      "links of " + bandwidth_text(cluster.scale_up.bw_bytes_per_s * cluster.scale_up.efficiency),
      std::numeric_limits<double>::infinity()};
  if (members.size() < 2 || members[0] < 0) return out;
  // A collective's traffic stays in the first member's NVLink domain, leaves
  // it, or both: look at a route of each kind there is.
  const int64_t from = members[0];
  std::vector<int64_t> to;
  for (const bool other_domain : {false, true}) {
    for (const int64_t m : members.subspan(1)) {
      if (m >= 0 && (fabric.domain_of(m) != fabric.domain_of(from)) == other_domain) {
        to.push_back(m);
        break;
      }
    }
  }
  for (const int64_t peer : to) {
    for (const uint32_t l : fabric.path(from, peer).links) {
      const hwmodels::FabricLink& link = fabric.link(l);
      if (!link.constrained || !(link.capacity_bytes_per_s < out.capacity_bytes_per_s)) continue;
      out.capacity_bytes_per_s = link.capacity_bytes_per_s;
      const std::string rate = bandwidth_text(link.capacity_bytes_per_s);
      switch (link.kind) {
        case LinkKind::kNvlinkUp:
        case LinkKind::kNvlinkDown:
          out.path = "/cluster/scale_up/bandwidth";
          out.description = "NVLink links of " + rate + " (bandwidth " +
                            bandwidth_text(cluster.scale_up.bw_bytes_per_s) + " x efficiency " +
                            format_number(cluster.scale_up.efficiency) + ")";
          break;
        case LinkKind::kTierUp:
        case LinkKind::kTierDown: {
          const int tier = fabric.vertex(link.kind == LinkKind::kTierUp ? link.from : link.to).tier;
          const std::string above = std::to_string(tier + 1);
          out.path = "/cluster/scale_out/tiers/" + above + "/oversubscription";
          out.description =
              "uplinks of " + rate + " into tier " + above + " (oversubscription " +
              format_number(
                  cluster.scale_out.tiers[static_cast<size_t>(tier + 1)].oversubscription) +
              ")";
          break;
        }
        default:
          out.path = "/cluster/scale_out/nic_bandwidth";
          out.description = "NIC links of " + rate + " (nic_bandwidth " +
                            bandwidth_text(cluster.scale_out.nic_bw_bytes_per_s) +
                            " x efficiency " + format_number(cluster.scale_out.efficiency) + ")";
          break;
      }
    }
  }
  return out;
}

Problem clock_problem(const strategies::Schedule& schedule, const StepHardware& hardware,
                      const StepTimeline& timeline, uint32_t task_id) {
  const strategies::Task& task = schedule.tasks[task_id];
  const std::string name = schedule.task_name(task_id);
  const std::string link_hint =
      "check this value and its unit ('400 Gb/s', '450 GB/s'), or move fewer bytes";
  if (task.work < 0) {
    const std::vector<int64_t> members =
        task.group < 0 ? std::vector<int64_t>{task.rank, task.peer}
                       : schedule.groups[static_cast<size_t>(task.group)].ranks;
    const SlowLink link = slowest_link(hardware.fabric, members);
    return {link.path,
            outlasts() + "'" + name + "' moves " + format_bytes(task.bytes) + " over " +
                link.description,
            link_hint};
  }
  const WorkCost& cost = timeline.costs[timeline.task_cost[task_id]];
  // The in-task collective that takes longest, if it dominates the task.
  const auto comm = std::max_element(cost.exposed_comm_s.begin(), cost.exposed_comm_s.end());
  const double compute_s = cost.compute_s + cost.recompute_s + cost.optimizer_s;
  if (*comm > compute_s) {
    const auto dim = static_cast<strategies::Dim>(comm - cost.exposed_comm_s.begin());
    const std::vector<int64_t> group = schedule.layout.group(task.rank, group_kind_of(dim));
    const SlowLink link = slowest_link(hardware.fabric, group);
    return {link.path,
            outlasts() + "'" + name + "' takes " + duration_text(cost.duration_s) + ", most in " +
                kDimNames[static_cast<size_t>(dim)] + std::string(" collectives over ") +
                link.description,
            link_hint};
  }
  const SlowOp op =
      slowest_op(schedule.works[static_cast<size_t>(task.work)], hardware, schedule.job);
  return compute_problem(name, op, hardware.gpu, cost.duration_s);
}

Problem flows_problem(const strategies::Schedule& schedule, uint32_t task_id, size_t max_flows) {
  const strategies::Task& task = schedule.tasks[task_id];
  const std::string message =
      "the step has more than " + std::to_string(max_flows) +
      " transfers to simulate (flows of its pipeline sends and data-parallel collectives; "
      "the limit was passed at '" +
      schedule.task_name(task_id) + "')";
  switch (task.purpose) {
    case strategies::CommPurpose::kActivation:
    case strategies::CommPurpose::kGradient:
      return {"/training/global_batch", message,
              "fewer micro-batches per pipeline: a smaller global_batch or a larger micro_batch"};
    case strategies::CommPurpose::kGradSync:
    case strategies::CommPurpose::kGradReplicaSync:
    case strategies::CommPurpose::kParamGather:
      return {"/options/dp_bucket_params", message,
              "larger gradient buckets (fewer collectives), fewer layers, or a smaller "
              "data-parallel group"};
    default:
      return {"/parallelism", message, "fewer GPUs in each collective, or fewer layers"};
  }
}

}  // namespace podsim::scenarios
