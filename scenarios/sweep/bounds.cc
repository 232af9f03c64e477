#include "scenarios/sweep/bounds.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "hwmodels/collectives.h"
#include "hwmodels/fabric.h"
#include "hwmodels/gpu_model.h"
#include "hwmodels/memory_model.h"
#include "scenarios/step/step_simulation.h"
#include "strategies/layout.h"
#include "strategies/memory.h"
#include "strategies/schedule.h"
#include "strategies/workload.h"

namespace podsim::scenarios {
namespace {

using strategies::ChunkInfo;
using strategies::Job;
using strategies::Pass;
using strategies::Slot;
using strategies::SlotKind;
using strategies::TaskId;

// The bounds are sums taken in another order than the simulation's; a
// relative margin far above rounding error (1e-16 per operation) and far
// below anything that matters keeps them on the safe side.
constexpr double kRoundingMargin = 1e-9;

double lower(double value) { return value * (1.0 - kRoundingMargin); }

std::vector<std::vector<ChunkInfo>> chunks_by_stage(const Job& job) {
  std::vector<std::vector<ChunkInfo>> out(static_cast<size_t>(job.plan.pp));
  for (const ChunkInfo& c : strategies::model_chunks(job)) {
    out[static_cast<size_t>(c.stage)].push_back(c);  // virtual_index ascending
  }
  return out;
}

std::vector<double> quick_memory(const Job& job, double reserved,
                                 const std::vector<std::vector<ChunkInfo>>& chunks,
                                 const std::vector<std::vector<Slot>>& orders) {
  std::vector<double> out;
  out.reserve(orders.size());
  for (size_t s = 0; s < orders.size(); ++s) {
    std::vector<double> stored;
    for (const ChunkInfo& c : chunks[s]) {
      stored.push_back(strategies::stored_activation_bytes(job, c, c.layer_begin, c.layer_end,
                                                           c.has_embedding, c.has_head));
    }
    double live = 0, peak = 0;
    for (const Slot& slot : orders[s]) {
      const double bytes = stored[static_cast<size_t>(slot.chunk)];
      if (slot.kind == SlotKind::kForward) {
        live += bytes;
        peak = std::max(peak, live);
      } else if (slot.kind == SlotKind::kBackward) {
        live -= bytes;
      }
    }
    const double fixed = strategies::static_memory(job, static_cast<int64_t>(s)).total() + reserved;
    out.push_back(lower(fixed + peak));
  }
  return out;
}

void append_raw(std::string& key, const void* data, size_t size) {
  key.append(static_cast<const char*>(data), size);
}
template <typename T>
void append(std::string& key, T value) {
  append_raw(key, &value, sizeof value);
}

/// Everything about a segment's ops that their price depends on, as bytes.
void append_ops(std::string& key, const std::vector<strategies::Op>& ops) {
  append(key, ops.size());
  for (const strategies::Op& op : ops) {
    append(key, op.kind);
    append(key, op.role);
    append(key, op.count);
    append(key, op.format);
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
        break;
      case strategies::OpKind::kCollective:
        append(key, op.collective.dim);
        append(key, op.collective.kind);
        append(key, op.collective.bytes);
        append(key, op.collective.overlap_op);
        break;
    }
  }
}

/// Blocks of consecutive GPUs that are wired alike: the NVLink domain, then
/// each scale-out tier's group of nodes. A set of GPUs inside one full block
/// prices alike in any full block of that size, so in-task collectives are
/// priced on a cluster cut down to the first block (pricing instantiates the
/// whole fabric, which is slow for large clusters).
struct Level {
  int64_t gpus = 0;  ///< GPUs per block
  hwmodels::ClusterSpec cluster;
  std::unique_ptr<hwmodels::Fabric> fabric;  ///< built on first use
};

std::vector<Level> levels_of(const hwmodels::ClusterSpec& cluster) {
  std::vector<Level> out;
  const int64_t per_node = std::max(1, cluster.gpus_per_node);
  const int64_t total = cluster.total_gpus();
  auto add = [&](int64_t gpus) {
    if (gpus <= 0 || gpus >= total) return;
    if (!out.empty() && (gpus <= out.back().gpus || gpus % out.back().gpus != 0)) return;
    Level l;
    l.gpus = gpus;
    l.cluster = cluster;
    l.cluster.nodes = static_cast<int>(std::max<int64_t>(1, (gpus + per_node - 1) / per_node));
    if (!hwmodels::Fabric::validate(l.cluster).empty()) return;  // price on the whole fabric
    out.push_back(std::move(l));
  };
  add(cluster.scale_up.domain > 0 ? cluster.scale_up.domain : per_node);
  for (const hwmodels::TierSpec& tier : cluster.scale_out.tiers) {
    if (tier.nodes > 0) add(static_cast<int64_t>(tier.nodes) * per_node);
  }
  return out;
}

}  // namespace

struct PlanBounds::Impl {
  explicit Impl(const CalibratedHardware& hardware) : Impl(hardware.gpu, hardware.cluster) {}
  Impl(const hwmodels::GpuModel& model, const hwmodels::ClusterSpec& cluster)
      : gpu(model),
        fabric(hwmodels::Fabric::build(cluster)),
        levels(levels_of(cluster)),
        collectives(hwmodels::CollectiveParams::for_gpu(cluster.gpu)),
        memory(hwmodels::memory_model(cluster.gpu)) {}

  hwmodels::GpuModel gpu;
  hwmodels::Fabric fabric;
  std::vector<Level> levels;
  hwmodels::CollectiveParams collectives;
  hwmodels::MemoryModel memory;
  /// segment ops + group key -> seconds on the compute stream, per repeat.
  std::unordered_map<std::string, double> segment_costs;

  /// The TP, CP and EP groups of `rank`, the only groups in-task collectives
  /// use, and where to price them: when they lie inside one full block of a
  /// level (levels_of) and the layout gives the rank moved to the first
  /// block the same groups moved alike (checked, not assumed), on that
  /// level's cut-down cluster for the moved rank; otherwise on the whole
  /// fabric. The key holds the level and the (moved) GPU ids.
  struct Groups {
    std::string key;
    int64_t rank = 0;
    int level = -1;  ///< -1: the whole fabric
  };
  static constexpr std::array<strategies::GroupKind, 3> kInTask{
      strategies::GroupKind::kTp, strategies::GroupKind::kCp, strategies::GroupKind::kEp};
  Groups groups_of(const strategies::Layout& layout, int64_t rank) const {
    std::vector<int64_t> members;
    std::vector<size_t> sizes;
    for (strategies::GroupKind kind : kInTask) {
      const std::vector<int64_t> g = layout.group(rank, kind);
      sizes.push_back(g.size());
      members.insert(members.end(), g.begin(), g.end());
    }
    Groups out;
    out.rank = rank;
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

  const hwmodels::Fabric& fabric_for(const Groups& groups) {
    if (groups.level < 0) return fabric;
    Level& l = levels[static_cast<size_t>(groups.level)];
    if (!l.fabric) {
      l.fabric = std::make_unique<hwmodels::Fabric>(hwmodels::Fabric::build(l.cluster));
    }
    return *l.fabric;
  }

  double work_cost(const Job& job, const strategies::Layout& layout, const Groups& groups,
                   const strategies::Work& work) {
    double total = 0;
    for (const strategies::Segment& seg : work.segments) {
      total += static_cast<double>(seg.repeat) * segment_cost(job, layout, groups, seg);
    }
    return total;
  }

  /// The price of one repeat of `seg` for a rank with `groups`.
  double segment_cost(const Job& job, const strategies::Layout& layout, const Groups& groups,
                      const strategies::Segment& seg) {
    std::string key = groups.key;
    append_ops(key, seg.ops);
    auto it = segment_costs.find(key);
    if (it != segment_costs.end()) return it->second;
    strategies::Schedule scratch;
    scratch.job = job;
    scratch.layout = layout;
    strategies::Work one;
    one.segments.push_back({seg.name, 1, seg.ops});
    scratch.works.push_back(std::move(one));
    const double seconds =
        cost_work(scratch, {gpu, fabric_for(groups), collectives}, 0, groups.rank).duration_s;
    segment_costs.emplace(std::move(key), seconds);
    return seconds;
  }

  /// Pipeline orders depend on the schedule, p, v and m only; plans that
  /// share them share one copy.
  std::shared_ptr<const std::vector<std::vector<Slot>>> orders(const Job& job) {
    const auto key = std::make_tuple(static_cast<int>(job.plan.schedule), job.plan.pp,
                                     job.plan.virtual_stages, strategies::micro_batches(job));
    auto it = order_cache.find(key);
    if (it != order_cache.end()) return it->second;
    auto made =
        std::make_shared<const std::vector<std::vector<Slot>>>(strategies::pipeline_orders(job));
    order_cache.emplace(key, made);
    return made;
  }
  std::map<std::tuple<int, int64_t, int64_t, int64_t>,
           std::shared_ptr<const std::vector<std::vector<Slot>>>>
      order_cache;

  strategies::Work optimizer_work(const Job& job, int64_t stage) const {
    strategies::Work w;
    w.segments.push_back(
        {"optimizer", 1,
         strategies::optimizer_ops(job, strategies::optimizer_parameters(job, stage))});
    return w;
  }

  double quick_step(const Job& job, const std::vector<std::vector<ChunkInfo>>& chunks,
                    const std::vector<std::vector<Slot>>& orders);
  Bounds refined(const Job& job);
};

double PlanBounds::Impl::quick_step(const Job& job,
                                    const std::vector<std::vector<ChunkInfo>>& chunks,
                                    const std::vector<std::vector<Slot>>& orders) {
  const int64_t p = job.plan.pp;
  const int64_t v = job.plan.virtual_stages;
  const int64_t m = strategies::micro_batches(job);
  const bool zb = job.plan.schedule == strategies::PipelineSchedule::kZeroBubble;
  const bool recompute = job.plan.recompute.mode != strategies::RecomputeMode::kNone;
  const strategies::Layout layout(job.plan);

  // Per stage and chunk: forward, backward (recompute + backward, or B), W.
  // A chunk's work is its embedding, `layers` x one layer and its head, so
  // its price is assembled from the segment prices of a one-layer work with
  // both ends, per distinct set of in-task groups (usually one per plan).
  struct ChunkCost {
    double forward = 0, backward = 0, weight = 0;
  };
  struct SegmentCosts {
    double embedding = 0, layer = 0, head = 0;
  };
  std::vector<Pass> passes{Pass::kForward, zb ? Pass::kBackwardInput : Pass::kBackward};
  if (recompute) passes.push_back(Pass::kRecompute);
  if (zb) passes.push_back(Pass::kBackwardWeight);
  std::vector<strategies::Work> one_layer;
  for (Pass pass : passes) one_layer.push_back(strategies::make_work(job, pass, 1, true, true));
  std::vector<std::pair<std::string, std::vector<SegmentCosts>>> priced;  // by group key
  std::map<double, double> optimizer_seconds;                             // by parameters updated

  std::vector<std::vector<ChunkCost>> chunk_cost(static_cast<size_t>(p));
  std::vector<double> optimizer(static_cast<size_t>(p), 0.0);
  for (int64_t s = 0; s < p; ++s) {
    const Groups groups = groups_of(layout, layout.representative(s));
    auto found = std::find_if(priced.begin(), priced.end(),
                              [&](const auto& entry) { return entry.first == groups.key; });
    if (found == priced.end()) {
      std::vector<SegmentCosts> costs;
      for (const strategies::Work& w : one_layer) {
        SegmentCosts c;
        for (const strategies::Segment& seg : w.segments) {
          const double seconds = segment_cost(job, layout, groups, seg);
          if (seg.name == "embedding") c.embedding = seconds;
          if (seg.name == "layer") c.layer = seconds;
          if (seg.name == "head") c.head = seconds;
        }
        costs.push_back(c);
      }
      priced.emplace_back(groups.key, std::move(costs));
      found = std::prev(priced.end());
    }
    const std::vector<SegmentCosts>& costs = found->second;
    for (const ChunkInfo& c : chunks[static_cast<size_t>(s)]) {
      auto cost = [&](size_t pass_index) {
        const SegmentCosts& sc = costs[pass_index];
        return static_cast<double>(c.layers()) * sc.layer + (c.has_embedding ? sc.embedding : 0.0) +
               (c.has_head ? sc.head : 0.0);
      };
      ChunkCost cc;
      cc.forward = cost(0);
      cc.backward = cost(1);
      size_t next = 2;
      if (recompute) cc.backward += cost(next++);
      if (zb) cc.weight = cost(next);
      chunk_cost[static_cast<size_t>(s)].push_back(cc);
    }
    const double params = strategies::optimizer_parameters(job, s);
    auto opt = optimizer_seconds.find(params);
    if (opt == optimizer_seconds.end()) {
      const strategies::Work w = optimizer_work(job, s);
      opt = optimizer_seconds.emplace(params, work_cost(job, layout, groups, w)).first;
    }
    optimizer[static_cast<size_t>(s)] = opt->second;
  }

  // Advance every stage along its order as far as its pipeline
  // dependencies allow, until all are done.
  const auto chunks_total = static_cast<size_t>(p * v);
  const auto mbs = static_cast<size_t>(m);
  std::vector<double> f_end(chunks_total * mbs, -1.0), b_end(chunks_total * mbs, -1.0);
  std::vector<size_t> pos(static_cast<size_t>(p), 0);
  std::vector<double> clock(static_cast<size_t>(p), 0.0);
  size_t remaining = 0;
  for (const auto& order : orders) remaining += order.size();
  while (remaining > 0) {
    bool progress = false;
    for (int64_t s = 0; s < p; ++s) {
      const auto si = static_cast<size_t>(s);
      const std::vector<Slot>& order = orders[si];
      while (pos[si] < order.size()) {
        const Slot& slot = order[pos[si]];
        const auto k = static_cast<size_t>(slot.chunk * p + s);
        const auto mb = static_cast<size_t>(slot.micro_batch);
        const ChunkCost& cc = chunk_cost[si][static_cast<size_t>(slot.chunk)];
        double ready = 0, duration = cc.weight;
        if (slot.kind == SlotKind::kForward) {
          if (k > 0) ready = f_end[(k - 1) * mbs + mb];
          duration = cc.forward;
        } else if (slot.kind == SlotKind::kBackward) {
          if (k + 1 < chunks_total) ready = b_end[(k + 1) * mbs + mb];
          duration = cc.backward;
        }
        if (ready < 0) break;  // the producing stage is not there yet
        const double end = std::max(clock[si], ready) + duration;
        clock[si] = end;
        if (slot.kind == SlotKind::kForward) f_end[k * mbs + mb] = end;
        if (slot.kind == SlotKind::kBackward) b_end[k * mbs + mb] = end;
        ++pos[si];
        --remaining;
        progress = true;
      }
    }
    if (!progress) return 0.0;  // not a valid order: no bound rather than a wrong one
  }
  double step = 0;
  for (size_t s = 0; s < clock.size(); ++s) step = std::max(step, clock[s] + optimizer[s]);
  return lower(step);
}

PlanBounds::Bounds PlanBounds::Impl::refined(const Job& job) {
  strategies::BuildResult built =
      strategies::build_schedule(job, strategies::Scope::kRepresentatives);
  if (!built.schedule) return {};
  const strategies::Schedule& sched = *built.schedule;
  const std::vector<strategies::Task>& tasks = sched.tasks;
  const size_t n = tasks.size();
  constexpr int64_t kNone = -1;

  // Memory, rank by rank (one rank per stage).
  Bounds b;
  const double reserved = memory.reserved_bytes();
  {
    // For each communication task: the last compute task (program index on
    // its rank) it waits for directly, and the first compute task that waits
    // for it directly.
    std::vector<int64_t> waits_for(n, kNone), first_user(n, kNone);
    for (TaskId id = 0; id < n; ++id) {
      const bool compute = tasks[id].stream == strategies::Stream::kCompute;
      for (TaskId dep : sched.dependencies(id)) {
        if (tasks[dep].rank != tasks[id].rank) continue;
        const bool dep_compute = tasks[dep].stream == strategies::Stream::kCompute;
        if (!compute && dep_compute) {
          waits_for[id] = std::max<int64_t>(waits_for[id], dep);
        } else if (compute && !dep_compute) {
          if (first_user[dep] == kNone || first_user[dep] > id) first_user[dep] = id;
        }
      }
    }
    for (size_t r = 0; r < sched.ranks.size(); ++r) {
      const TaskId begin = sched.rank_begin[r], end = sched.rank_begin[r + 1];
      // Bytes that change the bound when compute task T starts: +alloc of
      // communication tasks first used at T; -free of communication tasks
      // whose last awaited compute task is T or none (at the first task).
      // Adjustments that apply from a compute task on: + the allocation of a
      // communication task first awaited there; - the free of one whose last
      // awaited compute task is that one (or none: from the rank's start).
      std::map<int64_t, double> at;
      for (TaskId id = begin; id < end; ++id) {
        const strategies::Task& t = tasks[id];
        if (t.stream == strategies::Stream::kCompute) continue;
        if (t.alloc_bytes > 0 && first_user[id] != kNone) at[first_user[id]] += t.alloc_bytes;
        if (t.free_bytes > 0) at[std::max<int64_t>(waits_for[id], begin)] -= t.free_bytes;
      }
      double live = 0, peak = 0, prev_free = 0, pending = 0;
      for (TaskId id = begin; id < end; ++id) {
        auto it = at.find(id);
        if (it != at.end()) pending += it->second;
        const strategies::Task& t = tasks[id];
        if (t.stream != strategies::Stream::kCompute) continue;
        live += t.alloc_bytes - prev_free + pending;
        pending = 0;
        peak = std::max(peak, live);
        prev_free = t.free_bytes;
      }
      const int64_t stage = sched.layout.stage(sched.ranks[r]);
      const double fixed = strategies::static_memory(job, stage).total() + reserved;
      b.memory_bytes = std::max(b.memory_bytes, lower(fixed + peak));
    }
    b.can_fit = b.memory_bytes <= memory.capacity_bytes;
    if (!b.can_fit) return b;
  }

  // Durations: compute tasks as simulate() charges them, communication
  // tasks their plan's closed-form estimate. Meanwhile, the bytes every
  // collective instance puts on each constrained link (the engine's links).
  std::vector<double> duration(n, 0.0);
  std::vector<double> link_bytes(fabric.link_count(), 0.0);
  {
    std::vector<Groups> groups;
    for (int64_t rank : sched.ranks) groups.push_back(groups_of(sched.layout, rank));
    std::map<std::pair<size_t, int32_t>, double> work_seconds;
    struct CommShape {
      double seconds = 0;
      std::vector<std::pair<uint32_t, double>> link_bytes;  ///< constrained links only
      uint64_t instances = 0;
    };
    std::map<std::tuple<int32_t, int64_t, int64_t, int, double>, CommShape> shapes;
    std::unordered_set<int64_t> seen_instances;
    for (size_t r = 0; r < sched.ranks.size(); ++r) {
      const int64_t rank = sched.ranks[r];
      for (TaskId id = sched.rank_begin[r]; id < sched.rank_begin[r + 1]; ++id) {
        const strategies::Task& t = tasks[id];
        if (t.work >= 0) {
          auto key = std::make_pair(r, t.work);
          auto it = work_seconds.find(key);
          if (it == work_seconds.end()) {
            const double s =
                work_cost(job, sched.layout, groups[r], sched.works[static_cast<size_t>(t.work)]);
            it = work_seconds.emplace(key, s).first;
          }
          duration[id] = it->second;
          continue;
        }
        if (t.stream == strategies::Stream::kCompute) continue;  // no work, no time
        const bool p2p = t.group < 0;
        hwmodels::CollectiveOp op = collective_op(t.collective);
        std::vector<int64_t> members;
        if (p2p) {
          members = {rank, t.peer};
          op = hwmodels::CollectiveOp::kBroadcast;
        }
        auto key = std::make_tuple(p2p ? -1 : t.group, p2p ? rank : -1, p2p ? t.peer : -1,
                                   static_cast<int>(op), t.bytes);
        auto it = shapes.find(key);
        if (it == shapes.end()) {
          const std::vector<int64_t>& group =
              p2p ? members : sched.groups[static_cast<size_t>(t.group)].ranks;
          const hwmodels::CollectivePlan plan = hwmodels::plan_collective(
              fabric, op, group, t.bytes, hwmodels::Algorithm::kAuto, collectives);
          CommShape shape;
          shape.seconds = plan.estimate_s;
          std::map<uint32_t, double> per_link;
          for (const hwmodels::Phase& ph : plan.phases) {
            for (const hwmodels::Transfer& tr : ph.transfers) {
              for (uint32_t l : fabric.path(tr.src, tr.dst).links) {
                if (fabric.link(l).constrained) per_link[l] += tr.bytes * tr.multiplicity;
              }
            }
          }
          shape.link_bytes.assign(per_link.begin(), per_link.end());
          it = shapes.emplace(key, std::move(shape)).first;
        }
        duration[id] = it->second.seconds;
        // A collective instance runs once however many simulated members
        // name it; a transfer, once per task.
        if (!p2p) {
          if (!seen_instances.insert(t.instance).second) continue;
        }
        ++it->second.instances;
      }
    }
    for (const auto& [key, shape] : shapes) {
      for (const auto& [l, bytes] : shape.link_bytes) {
        link_bytes[l] += bytes * static_cast<double>(shape.instances);
      }
    }
  }
  // No link carries more than its capacity: the step lasts at least as long
  // as the busiest link needs for what the step puts on it.
  double busiest = 0;
  for (uint32_t l = 0; l < link_bytes.size(); ++l) {
    if (link_bytes[l] > 0) {
      busiest = std::max(busiest, link_bytes[l] / fabric.link(l).capacity_bytes_per_s);
    }
  }

  // Longest path (Kahn's order) over dependencies and stream order.
  std::vector<std::vector<TaskId>> next(n);
  std::vector<uint32_t> indegree(n, 0);
  for (size_t r = 0; r < sched.ranks.size(); ++r) {
    std::array<int64_t, strategies::kStreams> last{};
    last.fill(kNone);
    for (TaskId id = sched.rank_begin[r]; id < sched.rank_begin[r + 1]; ++id) {
      for (TaskId dep : sched.dependencies(id)) {
        next[dep].push_back(id);
        ++indegree[id];
      }
      int64_t& prev = last[static_cast<size_t>(tasks[id].stream)];
      if (prev != kNone) {
        next[static_cast<size_t>(prev)].push_back(id);
        ++indegree[id];
      }
      prev = id;
    }
  }
  std::vector<double> start(n, 0.0);
  std::vector<TaskId> ready;
  for (TaskId id = 0; id < n; ++id) {
    if (indegree[id] == 0) ready.push_back(id);
  }
  size_t visited = 0;
  double step = 0;
  while (!ready.empty()) {
    const TaskId id = ready.back();
    ready.pop_back();
    ++visited;
    const double end = start[id] + duration[id];
    step = std::max(step, end);
    for (TaskId succ : next[id]) {
      start[succ] = std::max(start[succ], end);
      if (--indegree[succ] == 0) ready.push_back(succ);
    }
  }
  if (visited != n) return b;  // a cycle: no step bound
  b.step_s = lower(std::max(step, busiest));
  return b;
}

std::vector<double> memory_lower_bound_per_stage(const Job& job, const hwmodels::GpuSpec& gpu) {
  return quick_memory(job, hwmodels::memory_model(gpu).reserved_bytes(), chunks_by_stage(job),
                      strategies::pipeline_orders(job));
}

PlanBounds::PlanBounds(const CalibratedHardware& hardware)
    : impl_(std::make_unique<Impl>(hardware)) {}
PlanBounds::~PlanBounds() = default;

PlanBounds::Bounds PlanBounds::quick(const Job& job) {
  const std::shared_ptr<const std::vector<std::vector<Slot>>> shared = impl_->orders(job);
  const std::vector<std::vector<Slot>>& orders = *shared;
  const std::vector<std::vector<ChunkInfo>> chunks = chunks_by_stage(job);
  const std::vector<double> memory =
      quick_memory(job, impl_->memory.reserved_bytes(), chunks, orders);
  Bounds b;
  b.memory_bytes = memory.empty() ? 0.0 : *std::max_element(memory.begin(), memory.end());
  b.can_fit = b.memory_bytes <= impl_->memory.capacity_bytes;
  if (b.can_fit) b.step_s = impl_->quick_step(job, chunks, orders);
  return b;
}

PlanBounds::Bounds PlanBounds::refined(const Job& job) { return impl_->refined(job); }

size_t PlanBounds::cached_costs() const { return impl_->segment_costs.size(); }

}  // namespace podsim::scenarios
