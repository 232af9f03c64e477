// The quick bounds: no schedule is built, only each stage's pipeline order
// (bounds.h says why they are bounds).
#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/sweep/bounds_pricing.h"
#include "strategies/memory.h"

namespace podsim::scenarios {

using strategies::ChunkInfo;
using strategies::Job;
using strategies::Pass;
using strategies::Slot;
using strategies::SlotKind;

namespace bounds_detail {

std::vector<std::vector<ChunkInfo>> chunks_by_stage(const Job& job) {
  std::vector<std::vector<ChunkInfo>> out(static_cast<size_t>(job.plan.pp));
  for (int64_t s = 0; s < job.plan.pp; ++s) {
    out[static_cast<size_t>(s)] = strategies::stage_chunks(job, s);  // virtual_index ascending
  }
  return out;
}

std::vector<double> quick_memory(const Job& job, double reserved,
                                 const std::vector<std::vector<ChunkInfo>>& chunks,
                                 const std::vector<std::vector<Slot>>& orders) {
  std::vector<double> out;
  out.reserve(orders.size());
  strategies::LayerTensorsByKind tensors(job);
  for (size_t s = 0; s < orders.size(); ++s) {
    std::vector<double> stored;
    for (const ChunkInfo& c : chunks[s]) {
      stored.push_back(strategies::stored_activation_bytes(
          tensors, job, c, c.layer_begin, c.layer_end, c.has_embedding, c.has_head, c.mtp));
    }
    double live = 0, peak = 0;
    for (const Slot& slot : orders[s]) {
      const double bytes = stored[static_cast<size_t>(slot.chunk)];
      if (slot.kind == SlotKind::kForward || slot.kind == SlotKind::kForwardBackward) {
        live += bytes;
        peak = std::max(peak, live);
      }
      if (slot.kind == SlotKind::kBackward || slot.kind == SlotKind::kBackwardInput) {
        live -= bytes;
      } else if (slot.kind == SlotKind::kForwardBackward) {
        live -= stored[static_cast<size_t>(slot.backward_chunk)];
      }
    }
    const double fixed = strategies::static_memory(job, static_cast<int64_t>(s)).total() + reserved;
    out.push_back(lower(fixed + peak));
  }
  return out;
}

}  // namespace bounds_detail

using bounds_detail::chunks_by_stage;
using bounds_detail::lower;
using bounds_detail::quick_memory;

double PlanBounds::Impl::quick_step(const Job& job,
                                    const std::vector<std::vector<ChunkInfo>>& chunks,
                                    const std::vector<std::vector<Slot>>& orders) {
  const int64_t p = job.plan.pp;
  const int64_t v = job.plan.virtual_stages;
  const int64_t m = strategies::micro_batches(job);
  // DualPipe's two directions do not follow the chunk order below: no bound
  // rather than a wrong one.
  if (job.plan.schedule == strategies::PipelineSchedule::kDualPipe) return 0.0;
  const bool zb = job.plan.schedule == strategies::PipelineSchedule::kZeroBubble;
  const bool recompute = job.plan.recompute.mode != strategies::RecomputeMode::kNone ||
                         job.plan.recompute.full_layers > 0;
  const strategies::Layout layout(job.plan);

  // Per stage and chunk: forward, backward (recompute + backward, or B), W.
  // A chunk's work is its embedding, runs of layers of a few kinds and its
  // head, so its price is assembled from the prices of one layer of each
  // kind and of the ends, per distinct set of in-task groups (usually one
  // per plan).
  struct ChunkCost {
    double forward = 0, backward = 0, weight = 0;
  };
  struct SegmentCosts {
    double embedding = 0, head = 0, mtp = 0;
    std::map<strategies::LayerKind, double> layer;
  };
  std::vector<Pass> passes{Pass::kForward, zb ? Pass::kBackwardInput : Pass::kBackward};
  if (recompute) passes.push_back(Pass::kRecompute);
  if (zb) passes.push_back(Pass::kBackwardWeight);
  std::set<strategies::LayerKind> kinds;
  for (const auto& stage_chunks : chunks) {
    for (const ChunkInfo& c : stage_chunks) {
      for (const strategies::LayerRun& run :
           strategies::layer_runs(job, c, c.layer_begin, c.layer_end)) {
        kinds.insert(run.kind);
      }
    }
  }
  struct OneLayer {
    std::optional<strategies::LayerKind> kind;  ///< none: the ends (embedding, head, MTP)
    std::vector<strategies::Work> works;        ///< by pass
  };
  std::vector<OneLayer> one_layer;
  OneLayer ends;
  for (Pass pass : passes) {
    ends.works.push_back(strategies::make_work(job, pass, {{}, true, true, job.model.mtp_layers}));
  }
  one_layer.push_back(std::move(ends));
  for (const strategies::LayerKind& kind : kinds) {
    OneLayer one{kind, {}};
    for (Pass pass : passes) {
      one.works.push_back(strategies::make_work(job, pass, {{{kind, 1}}, false, false, 0}));
    }
    one_layer.push_back(std::move(one));
  }
  std::vector<std::pair<std::string, std::vector<SegmentCosts>>> priced;  // by group key
  std::map<double, double> optimizer_seconds;                             // by parameters updated

  std::vector<std::vector<ChunkCost>> chunk_cost(static_cast<size_t>(p));
  std::vector<double> optimizer(static_cast<size_t>(p), 0.0);
  for (int64_t s = 0; s < p; ++s) {
    const Groups groups = groups_of(layout, layout.representative(s));
    auto found = std::find_if(priced.begin(), priced.end(),
                              [&](const auto& entry) { return entry.first == groups.key; });
    if (found == priced.end()) {
      std::vector<SegmentCosts> costs(passes.size());
      for (const OneLayer& one : one_layer) {
        for (size_t pi = 0; pi < passes.size(); ++pi) {
          SegmentCosts& c = costs[pi];
          for (const strategies::Segment& seg : one.works[pi].segments) {
            const double seconds = segment_cost(job, layout, groups, seg);
            if (one.kind) {
              c.layer[*one.kind] += seconds;
            } else if (seg.name == "embedding") {
              c.embedding = seconds;
            } else if (seg.name == "head") {
              c.head = seconds;
            } else if (seg.name == "mtp") {
              c.mtp = seconds;  // per module
            }
          }
        }
      }
      priced.emplace_back(groups.key, std::move(costs));
      found = std::prev(priced.end());
    }
    const std::vector<SegmentCosts>& costs = found->second;
    for (const ChunkInfo& c : chunks[static_cast<size_t>(s)]) {
      const std::vector<strategies::LayerRun> runs =
          strategies::layer_runs(job, c, c.layer_begin, c.layer_end);
      auto cost = [&](size_t pass_index) {
        const SegmentCosts& sc = costs[pass_index];
        double seconds = (c.has_embedding ? sc.embedding : 0.0) + (c.has_head ? sc.head : 0.0) +
                         static_cast<double>(c.mtp) * sc.mtp;
        for (const strategies::LayerRun& run : runs) {
          const auto it = sc.layer.find(run.kind);
          if (it != sc.layer.end()) seconds += static_cast<double>(run.count) * it->second;
        }
        return seconds;
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
        const bool backward =
            slot.kind == SlotKind::kBackward || slot.kind == SlotKind::kBackwardInput;
        if (slot.kind == SlotKind::kForward) {
          if (k > 0) ready = f_end[(k - 1) * mbs + mb];
          duration = cc.forward;
        } else if (backward) {
          if (k + 1 < chunks_total) ready = b_end[(k + 1) * mbs + mb];
          duration = cc.backward;
        }
        if (ready < 0) break;  // the producing stage is not there yet
        const double end = std::max(clock[si], ready) + duration;
        clock[si] = end;
        if (slot.kind == SlotKind::kForward) f_end[k * mbs + mb] = end;
        if (backward) b_end[k * mbs + mb] = end;
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

std::vector<double> memory_lower_bound_per_stage(const Job& job,
                                                 const hwmodels::ClusterSpec& cluster) {
  return quick_memory(job, hwmodels::memory_model(cluster).runtime_bytes(), chunks_by_stage(job),
                      strategies::pipeline_orders(job));
}

PlanBounds::Bounds PlanBounds::quick(const Job& job) {
  const std::shared_ptr<const std::vector<std::vector<Slot>>> shared = impl_->orders(job);
  const std::vector<std::vector<Slot>>& orders = *shared;
  const std::vector<std::vector<ChunkInfo>> chunks = chunks_by_stage(job);
  const std::vector<double> memory =
      quick_memory(job, impl_->memory.runtime_bytes(), chunks, orders);
  Bounds b;
  b.memory_bytes = memory.empty() ? 0.0 : *std::max_element(memory.begin(), memory.end());
  b.can_fit = b.memory_bytes <= impl_->memory.capacity_bytes;
  if (b.can_fit) b.step_s = impl_->quick_step(job, chunks, orders);
  return b;
}

}  // namespace podsim::scenarios
