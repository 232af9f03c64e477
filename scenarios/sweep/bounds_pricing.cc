#include "scenarios/sweep/bounds_pricing.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/step/step_simulation.h"
#include "sim/ceil_div.h"
#include "strategies/memory.h"
#include "strategies/model_counts.h"

namespace podsim::scenarios {

using strategies::ChunkInfo;
using strategies::Job;
using strategies::Slot;

namespace bounds_detail {

/// Everything about an op that its price depends on, as bytes.
void append_op(std::string& key, const strategies::Op& op) {
  append(key, op.kind);
  append(key, op.role);
  append(key, op.count);
  append(key, op.format);
  append(key, op.kernels);
  switch (op.kind) {
    case strategies::OpKind::kGemm:
      for (int64_t v : {op.gemm.m, op.gemm.n, op.gemm.k, op.gemm.batch}) append(key, v);
      break;
    case strategies::OpKind::kAttention: {
      const strategies::AttentionShape& a = op.attention;
      for (int64_t v : {a.batch, a.heads, a.kv_heads, a.q_len, a.kv_len, a.head_dim}) {
        append(key, v);
      }
      append(key,
             static_cast<uint8_t>((a.causal ? 1 : 0) | (a.backward ? 2 : 0) | (a.flash ? 4 : 0)));
      break;
    }
    case strategies::OpKind::kMemoryBound:
      append(key, op.memory.bytes);
      append(key, op.memory.flops);
      append(key, op.memory.bandwidth_fraction);
      break;
    case strategies::OpKind::kCollective:
      append(key, op.collective.dim);
      append(key, op.collective.kind);
      append(key, op.collective.bytes);
      append(key, op.collective.overlap_op);
      break;
  }
}

std::vector<Level> levels_of(const hwmodels::ClusterSpec& cluster) {
  std::vector<Level> out;
  const int64_t per_node = std::max(1, cluster.gpus_per_node);
  const int64_t total = cluster.total_gpus();
  const int64_t domain = std::max(1, cluster.scale_up_domain());
  auto add = [&](int64_t gpus) {
    if (gpus <= 0 || gpus >= total) return;
    if (!out.empty() && (gpus <= out.back().gpus || gpus % out.back().gpus != 0)) return;
    Level l;
    l.gpus = gpus;
    l.cluster = cluster;
    l.cluster.nodes = static_cast<int>(std::max<int64_t>(1, ceil_div(gpus, per_node)));
    // A torus block is whole slices (a smaller one would be another grid).
    if (cluster.scale_up.topology == hwmodels::ScaleUpTopology::kTorus) {
      if (gpus % domain != 0) return;
      l.cluster.slices = static_cast<int>(gpus / domain);
    }
    if (!hwmodels::Fabric::validate(l.cluster).empty()) return;  // price on the whole fabric
    out.push_back(std::move(l));
  };
  add(domain);
  for (const hwmodels::TierSpec& tier : cluster.scale_out.tiers) {
    if (tier.nodes > 0) add(static_cast<int64_t>(tier.nodes) * per_node);
  }
  return out;
}

}  // namespace bounds_detail

using bounds_detail::append;
using bounds_detail::append_op;
using bounds_detail::Level;
using bounds_detail::levels_of;

PlanBounds::Impl::Groups PlanBounds::Impl::groups_of(const strategies::Layout& layout,
                                                     int64_t rank) const {
  std::vector<int64_t> members;
  std::vector<size_t> sizes;
  for (strategies::GroupKind kind : kInTask) {
    const std::vector<int64_t> g = layout.group(rank, kind);
    sizes.push_back(g.size());
    members.insert(members.end(), g.begin(), g.end());
  }
  Groups out;
  out.rank = rank;
  out.global_rank = rank;
  int64_t base = 0;
  const int64_t total = fabric.gpu_count();
  for (size_t l = 0; l < levels.size(); ++l) {
    const int64_t block = levels[l].gpus;
    const int64_t first = (rank / block) * block;
    const bool inside = first + block <= total &&
                        std::all_of(members.begin(), members.end(),
                                    [&](int64_t m) { return m >= first && m < first + block; });
    if (!inside) continue;
    bool same = true;
    if (first > 0) {
      std::vector<int64_t> moved;
      for (strategies::GroupKind kind : kInTask) {
        const std::vector<int64_t> g = layout.group(rank - first, kind);
        moved.insert(moved.end(), g.begin(), g.end());
      }
      same = moved.size() == members.size();
      for (size_t i = 0; same && i < members.size(); ++i) same = moved[i] == members[i] - first;
    }
    if (same) {
      out.level = static_cast<int>(l);
      out.rank = rank - first;
      base = first;
    }
    break;
  }
  append(out.key, out.level);
  for (size_t size : sizes) append(out.key, size);
  for (int64_t m : members) append(out.key, m - base);
  return out;
}

StepHardware PlanBounds::Impl::hardware_for(const Groups& groups) {
  if (groups.level < 0) {
    return {gpu, fabric, collectives, kernels, nullptr, &collective_times};
  }
  Level& l = levels[static_cast<size_t>(groups.level)];
  if (!l.fabric) {
    l.fabric = std::make_unique<hwmodels::Fabric>(hwmodels::Fabric::build(l.cluster));
  }
  return {gpu, *l.fabric, collectives, kernels, nullptr, &l.collective_times};
}

double PlanBounds::Impl::work_cost(const Job& job, const strategies::Layout& layout,
                                   const Groups& groups, const strategies::Work& work) {
  double total = 0;
  for (const strategies::Segment& seg : work.segments) {
    total += static_cast<double>(seg.repeat) * segment_cost(job, layout, groups, seg);
  }
  return total;
}

double PlanBounds::Impl::segment_cost(const Job& job, const strategies::Layout& layout,
                                      const Groups& groups, const strategies::Segment& seg) {
  const bool over_stage = std::any_of(seg.ops.begin(), seg.ops.end(), [](const strategies::Op& op) {
    return op.kind == strategies::OpKind::kCollective &&
           op.collective.group == strategies::InWorkGroup::kStage;
  });
  Groups whole;
  if (over_stage) {  // keyed by the stage's members: plans share this cache
    whole.rank = whole.global_rank = groups.global_rank;
    append(whole.key, -2);
    for (int64_t m : layout.group(groups.global_rank, strategies::GroupKind::kStage)) {
      append(whole.key, m);
    }
  }
  const Groups& priced = over_stage ? whole : groups;
  std::string key;
  append(key, interned(priced.key));
  append(key, seg.ops.size());
  for (const strategies::Op& op : seg.ops) {
    op_bytes.clear();
    append_op(op_bytes, op);
    append(key, interned(op_bytes));
  }
  auto it = segment_costs.find(key);
  if (it != segment_costs.end()) return it->second;
  strategies::Schedule scratch;
  scratch.job = job;
  scratch.layout = layout;
  strategies::Work one;
  one.segments.push_back({seg.name, 1, seg.ops});
  scratch.works.push_back(std::move(one));
  // GPU time only: the host's issue time bounds a whole task, not its
  // segments one by one.
  const WorkCost cost = cost_work(scratch, hardware_for(priced), 0, priced.rank);
  const double seconds = cost.duration_s - cost.host_idle_s;
  segment_costs.emplace(std::move(key), seconds);
  return seconds;
}

uint32_t PlanBounds::Impl::interned(const std::string& bytes) {
  auto it = interned_ids.find(bytes);
  if (it == interned_ids.end()) {
    it = interned_ids.emplace(bytes, static_cast<uint32_t>(interned_ids.size())).first;
  }
  return it->second;
}

std::shared_ptr<const std::vector<std::vector<Slot>>> PlanBounds::Impl::orders(const Job& job) {
  const auto key = std::make_tuple(static_cast<int>(job.plan.schedule), job.plan.pp,
                                   job.plan.virtual_stages, strategies::micro_batches(job));
  auto it = order_cache.find(key);
  if (it != order_cache.end()) return it->second;
  auto made =
      std::make_shared<const std::vector<std::vector<Slot>>>(strategies::pipeline_orders(job));
  order_cache.emplace(key, made);
  return made;
}

strategies::Work PlanBounds::Impl::optimizer_work(const Job& job, int64_t stage) const {
  strategies::Work w;
  const double tensors = strategies::stage_parameter_tensors(job, stage);
  w.segments.push_back(
      {"optimizer", 1,
       strategies::optimizer_ops(job, strategies::optimizer_parameters(job, stage), tensors)});
  w.host.dtensor_dispatches = strategies::optimizer_dtensor_dispatches(job, tensors);
  return w;
}

PlanBounds::PlanBounds(const CalibratedHardware& hardware,
                       const hwmodels::KernelImplementation& kernels)
    : impl_(std::make_unique<Impl>(hardware, kernels)) {}
PlanBounds::~PlanBounds() = default;

size_t PlanBounds::cached_costs() const { return impl_->segment_costs.size(); }

}  // namespace podsim::scenarios
