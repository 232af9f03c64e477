#include "scenarios/step/step_simulation.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "scenarios/step/moe_dispatch.h"

namespace podsim::scenarios {
namespace {

using strategies::CollectiveKind;
using strategies::Dim;
using strategies::GroupKind;
using strategies::InWorkGroup;
using strategies::MoePart;
using strategies::Op;
using strategies::OpKind;
using strategies::OpRole;
using strategies::Schedule;
using strategies::Task;

uint64_t bits_of(double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// `hash` with `value` mixed in (for the lowering's hash tables).
uint64_t mix_hash(uint64_t hash, uint64_t value) {
  hash = (hash ^ value) * 0x9e3779b97f4a7c15ULL;
  return hash ^ (hash >> 29);
}

/// Prices ops and works; caches what repeats (every rank of a stage runs the
/// same works, and the same collective on congruent groups).
class Pricer {
 public:
  Pricer(const Schedule& schedule, const StepHardware& hardware)
      : schedule_(schedule), hw_(hardware), op_times_(schedule.works.size()) {}

  /// Seconds one instance of a compute op takes.
  double op_time(int32_t work, size_t segment, size_t op_index) {
    auto& times = op_times_[static_cast<size_t>(work)];
    const strategies::Work& w = schedule_.works[static_cast<size_t>(work)];
    if (times.empty()) {
      times.resize(w.segments.size());
      for (size_t s = 0; s < w.segments.size(); ++s) {
        times[s].resize(w.segments[s].ops.size(), -1.0);
      }
    }
    double& t = times[segment][op_index];
    if (t < 0) t = price_compute(w.segments[segment].ops[op_index]);
    return t;
  }

  /// Fraction of the GPU's SMs the NCCL kernel of a collective among
  /// `group` holds while it runs (hwmodels::kernel_sms over GpuSpec::sms),
  /// below 1 (compute beside it is priced at 1 / (1 - share)).
  double comm_sm_share(const std::vector<int64_t>& group) const {
    const int sms = hw_.gpu.spec().sms;
    if (sms <= 0) return 0.0;
    const int held = hwmodels::kernel_sms(hw_.fabric, group, hw_.collectives);
    return std::clamp(static_cast<double>(held) / sms, 0.0, 0.9);
  }

  /// The SM share of an in-task collective: a fused MoE dispatch holds the
  /// SMs the framework gives it, anything else its NCCL kernel's.
  double comm_sm_share(const strategies::CollectiveShape& c, const std::vector<int64_t>& group) {
    const int sms = hw_.gpu.spec().sms;
    if (c.dispatch.dispatch_sms > 0 && sms > 0) {
      return std::clamp(static_cast<double>(c.dispatch.dispatch_sms) / sms, 0.0, 0.9);
    }
    return comm_sm_share(group);
  }

  /// The framework's host costs.
  const hwmodels::HostCost& host() const { return hw_.kernels.host; }

  /// Seconds an in-task collective takes among `group` (priced alone).
  double collective_time(const Op& op, const std::vector<int64_t>& group) {
    const strategies::CollectiveShape& c = op.collective;
    if (group.size() <= 1 || c.bytes <= 0) return 0.0;
    const bool per_node = c.dispatch.per_node && c.kind == CollectiveKind::kAllToAll;
    auto key =
        std::make_tuple(static_cast<int>(c.kind) + (per_node ? 100 : 0), bits_of(c.bytes), group);
    auto it = collective_cache_.find(key);
    if (it != collective_cache_.end()) return it->second;
    const double t =
        per_node ? fused_dispatch_time(hw_.fabric, hw_.collectives, group, c.dispatch,
                                       *schedule_.job.model.moe, op.imbalance)
                 : hwmodels::predict_collective(hw_.fabric, collective_op(c.kind), group, c.bytes,
                                                hwmodels::Algorithm::kAuto, hw_.collectives)
                       .time_s;
    collective_cache_.emplace(std::move(key), t);
    return t;
  }

  /// Seconds of one instance of a compute op spent beyond its even share of
  /// the routed tokens (its imbalance).
  double imbalance_time(int32_t work, size_t segment, size_t op_index) {
    const Op& op = schedule_.works[static_cast<size_t>(work)].segments[segment].ops[op_index];
    if (!(op.imbalance > 1)) return 0.0;
    const double t = op_time(work, segment, op_index);
    if (op.kind == OpKind::kGemm && op.balanced_gemm.m > 0) {
      Op balanced = op;
      balanced.gemm = op.balanced_gemm;
      return std::max(0.0, t - price_compute(balanced));
    }
    return t * (1 - 1 / op.imbalance);
  }

 private:
  double price_compute(const Op& op) const {
    return price_op(op, hw_.gpu, schedule_.job, hw_.kernels.attention).time_s;
  }

  const Schedule& schedule_;
  const StepHardware& hw_;
  // [work][segment][op] -> seconds per instance; -1 = not priced yet.
  std::vector<std::vector<std::vector<double>>> op_times_;
  std::map<std::tuple<int, uint64_t, std::vector<int64_t>>, double> collective_cache_;
};

/// The group an in-task collective runs over: its dimension's, the
/// expert-TP (and EP) group of MoE experts under parallel folding, or the
/// whole stage (fp8 amax reduction).
GroupKind in_work_group_kind(const strategies::CollectiveShape& c) {
  switch (c.group) {
    case InWorkGroup::kExpertTp:
      return GroupKind::kExpertTp;
    case InWorkGroup::kExpertTpEp:
      return GroupKind::kExpertTpEp;
    case InWorkGroup::kStage:
      return GroupKind::kStage;
    case InWorkGroup::kOfDim:
      break;
  }
  return group_kind_of(c.dim);
}

/// Books `seconds` of an MoE op (and its imbalance share) on the cost.
void add_moe(WorkCost& cost, const Op& op, double seconds, double imbalance_s) {
  if (op.moe_part == MoePart::kNone) return;
  cost.moe_s[static_cast<size_t>(op.moe_part)] += seconds;
  cost.moe_imbalance_s += imbalance_s;
}

/// Books `seconds` of `op` (its price alone: `alone_s`) under its role and,
/// outside the optimizer, its kernel kind.
void add_op(WorkCost& cost, const Op& op, double seconds, double alone_s) {
  if (op.role != OpRole::kOptimizer) {
    switch (op.kind) {
      case OpKind::kGemm:
        cost.gemm_s += alone_s;
        break;
      case OpKind::kAttention:
        cost.attention_s += alone_s;
        break;
      default:
        cost.memory_bound_s += alone_s;
        break;
    }
  }
  switch (op.role) {
    case OpRole::kRecompute:
      cost.recompute_s += seconds;
      break;
    case OpRole::kOptimizer:
      cost.optimizer_s += seconds;
      break;
    default:
      cost.compute_s += seconds;
      break;
  }
}

/// Host seconds issuing one repeat of a segment's op `index`: a dispatch per
/// kernel (the backward's from the autograd engine), or, when the layers
/// replay from CUDA graphs, one graph launch per layer (charged at its first
/// op) and none at all when the whole iteration is one graph.
double op_issue_s(const hwmodels::HostCost& host, const strategies::Segment& seg, size_t index) {
  switch (host.graphs) {
    case hwmodels::CudaGraphs::kFullIteration:
      return 0;
    case hwmodels::CudaGraphs::kPerLayer:
      if (seg.name == "layer") return index == 0 ? host.graph_launch_s : 0.0;
      break;
    case hwmodels::CudaGraphs::kNone:
      break;
  }
  const Op& op = seg.ops[index];
  const bool backward = op.role == OpRole::kInputGrad || op.role == OpRole::kWeightGrad;
  return static_cast<double>(op.count) * static_cast<double>(op.kernels) *
         (backward ? host.dispatch_backward_s : host.dispatch_forward_s);
}

/// Host seconds issuing a segment's kernels, every repeat.
double segment_issue_s(const hwmodels::HostCost& host, const strategies::Segment& seg) {
  double issue = 0;
  for (size_t i = 0; i < seg.ops.size(); ++i) issue += op_issue_s(host, seg, i);
  return static_cast<double>(seg.repeat) * issue;
}

/// One op of a work as the host issues it and the compute stream runs it.
struct IssueStep {
  double issue_s = 0;  ///< host time issuing its kernels
  double kernels = 1;
  double gpu_s = 0;  ///< time it holds the compute stream
  bool sync = false;
};

/// The host issuing kernels ahead of the GPU as its own in-order stream
/// (docs/research/kernels-host-power.md 3.2): a kernel starts once it is
/// issued and the GPU is free; a host synchronisation waits until the GPU
/// has run everything issued, so the kernels after it start as they are
/// issued, until the host is ahead again.
class IssueRace {
 public:
  explicit IssueRace(double sync_s) : sync_s_(sync_s) {}
  void run(const IssueStep& step) {
    if (step.sync) host_s_ = std::max(host_s_, gpu_s_) + sync_s_;
    const double kernels = std::max(1.0, step.kernels);
    const double start = std::max(gpu_s_, host_s_ + step.issue_s / kernels);
    host_s_ += step.issue_s;
    // The last kernel cannot start before the host has issued it.
    gpu_s_ = std::max(start + step.gpu_s, host_s_ + step.gpu_s / kernels);
  }
  double end_s() const { return std::max(host_s_, gpu_s_); }

 private:
  double sync_s_;
  double host_s_ = 0;
  double gpu_s_ = 0;
};

/// Whether a work's host synchronisations sit at ops (Op::host_sync): then
/// where the host falls behind is found op by op. A whole-iteration graph
/// has no host sync inside (capture forbids one).
bool races_host(const hwmodels::HostCost& host, const strategies::Work& w) {
  if (host.graphs == hwmodels::CudaGraphs::kFullIteration) return false;
  for (const strategies::Segment& seg : w.segments) {
    for (const Op& op : seg.ops) {
      if (op.host_sync) return true;
    }
  }
  return false;
}

/// `slowdown` stretches the work's compute ops (a slow GPU, or a peer of one
/// through an in-task collective).
WorkCost price_work(const Schedule& schedule, Pricer& pricer, int32_t work, int64_t rank,
                    double slowdown = 1.0) {
  const strategies::Work& w = schedule.works[static_cast<size_t>(work)];
  WorkCost cost;
  // DualPipe's overlapped pair: its EP transfers run on their own SMs beside
  // the whole pair's compute, which loses that share of the SMs meanwhile.
  double beside = 0, beside_imbalance = 0, beside_share = 0;
  std::vector<InTaskCollective> beside_collectives;
  std::array<std::vector<int64_t>, strategies::kGroupKinds> groups;
  auto group_of = [&](const strategies::CollectiveShape& c) -> const std::vector<int64_t>& {
    const GroupKind kind = in_work_group_kind(c);
    auto& g = groups[static_cast<size_t>(kind)];
    if (g.empty()) g = schedule.layout.group(rank, kind);
    return g;
  };
  const hwmodels::HostCost& host = pricer.host();
  double issue_s = 0;     // host time issuing the work's kernels
  double sequence_s = 0;  // where the ops of the work are, one after another
  double beside_at = 0;   // DualPipe's beside transfers, back to back
  const bool race = races_host(host, w);
  IssueRace issue_race(host.sync_s);
  int64_t placed_syncs = 0;
  for (size_t s = 0; s < w.segments.size(); ++s) {
    const strategies::Segment& seg = w.segments[s];
    const double repeat = static_cast<double>(seg.repeat);
    issue_s += segment_issue_s(host, seg);
    std::vector<IssueStep> steps;  // one repeat of the segment, for the race
    auto record_step = [&](size_t op_index, double gpu_s) {
      if (!race) return;
      const Op& op = seg.ops[op_index];
      steps.push_back({op_issue_s(host, seg, op_index),
                       static_cast<double>(op.count) * static_cast<double>(op.kernels), gpu_s,
                       op.host_sync});
    };
    double repeat_s = 0;  // where in one repeat of the segment
    const size_t first_collective = cost.collectives.size();
    auto place = [&](size_t op_index, const Op& comm, double step, double tx, double exposed) {
      InTaskCollective c;
      c.segment = static_cast<uint32_t>(s);
      c.op = static_cast<uint32_t>(op_index);
      c.dim = comm.collective.dim;
      c.start_s = repeat_s;  // made absolute once the segment's repeat is priced
      c.repeats = seg.repeat;
      c.step_s = step;
      c.count = comm.count;
      c.time_s = tx;
      c.exposed_s = exposed;
      cost.collectives.push_back(c);
    };
    // A collective paired with a compute op runs beside it, step by step:
    // each of the `count` steps lasts the longer of the two. While the NCCL
    // kernel runs it holds `share` of the SMs, so the compute op progresses
    // at 1 - share for min(tx, its own stretched time): tc + share x that.
    std::vector<int32_t> partner(seg.ops.size(), -1);
    for (size_t i = 0; i < seg.ops.size(); ++i) {
      const Op& op = seg.ops[i];
      if (op.kind == OpKind::kCollective && op.collective.overlap_op >= 0) {
        partner[i] = op.collective.overlap_op;
        partner[static_cast<size_t>(op.collective.overlap_op)] = static_cast<int32_t>(i);
      }
    }
    std::vector<bool> done(seg.ops.size(), false);
    for (size_t i = 0; i < seg.ops.size(); ++i) {
      if (done[i]) continue;
      const Op& op = seg.ops[i];
      const double count = static_cast<double>(op.count) * repeat;
      if (partner[i] >= 0) {
        const auto j = static_cast<size_t>(partner[i]);
        done[j] = true;
        const Op& comm = op.kind == OpKind::kCollective ? op : seg.ops[j];
        const Op& compute = op.kind == OpKind::kCollective ? seg.ops[j] : op;
        const size_t compute_index = op.kind == OpKind::kCollective ? j : i;
        const double alone = slowdown * pricer.op_time(work, s, compute_index);
        const double tx = pricer.collective_time(comm, group_of(comm.collective));
        const double share = pricer.comm_sm_share(comm.collective, group_of(comm.collective));
        const double tc = tx > 0 ? alone + share * std::min(tx, alone / (1.0 - share)) : alone;
        const double exposed = std::max(0.0, tx - tc);
        if (tx > 0) place(op.kind == OpKind::kCollective ? i : j, comm, tc + exposed, tx, exposed);
        repeat_s += static_cast<double>(op.count) * (tc + exposed);
        record_step(i, static_cast<double>(op.count) * (tc + exposed));
        record_step(j, 0);
        add_op(cost, compute, count * tc, count * alone);
        cost.comm_contention_s += count * (tc - alone);
        cost.exposed_comm_s[static_cast<size_t>(comm.collective.dim)] += count * exposed;
        cost.hidden_comm_s += count * std::min(tx, tc);
        add_moe(cost, compute, count * tc,
                count * slowdown * pricer.imbalance_time(work, s, compute_index));
        add_moe(cost, comm, count * exposed,
                count * exposed * (1 - 1 / std::max(1.0, comm.imbalance)));
        continue;
      }
      if (op.kind == OpKind::kCollective) {
        const double tx = pricer.collective_time(op, group_of(op.collective));
        if (w.overlap_ep_comm && op.collective.dim == Dim::kEp) {
          // Beside the other half's compute (DualPipe's F&B), settled below.
          if (tx > 0) {
            InTaskCollective c;
            c.segment = static_cast<uint32_t>(s);
            c.op = static_cast<uint32_t>(i);
            c.dim = Dim::kEp;
            c.start_s = beside_at;
            c.step_s = tx;
            c.count = op.count * seg.repeat;
            c.time_s = tx;
            beside_collectives.push_back(c);
            beside_at += count * tx;
          }
          beside += count * tx;
          beside_imbalance += count * tx * (1 - 1 / std::max(1.0, op.imbalance));
          beside_share =
              std::max(beside_share, pricer.comm_sm_share(op.collective, group_of(op.collective)));
          record_step(i, 0);
          continue;
        }
        if (tx > 0) place(i, op, tx, tx, tx);
        repeat_s += static_cast<double>(op.count) * tx;
        record_step(i, static_cast<double>(op.count) * tx);
        cost.exposed_comm_s[static_cast<size_t>(op.collective.dim)] += count * tx;
        add_moe(cost, op, count * tx, count * tx * (1 - 1 / std::max(1.0, op.imbalance)));
      } else {
        const double op_s = pricer.op_time(work, s, i);
        const double t = count * slowdown * op_s;
        repeat_s += static_cast<double>(op.count) * slowdown * op_s;
        record_step(i, static_cast<double>(op.count) * slowdown * op_s);
        add_op(cost, op, t, t);
        add_moe(cost, op, t, count * slowdown * pricer.imbalance_time(work, s, i));
      }
    }
    for (size_t c = first_collective; c < cost.collectives.size(); ++c) {
      cost.collectives[c].start_s += sequence_s;
      cost.collectives[c].repeat_s = repeat_s;
    }
    sequence_s += repeat * repeat_s;
    for (int64_t k = 0; k < seg.repeat; ++k) {
      for (const IssueStep& st : steps) {
        issue_race.run(st);
        placed_syncs += st.sync ? 1 : 0;
      }
    }
  }
  cost.sequence_s = sequence_s;
  cost.collectives.insert(cost.collectives.end(), beside_collectives.begin(),
                          beside_collectives.end());
  if (beside > 0) {
    const double alone = cost.compute_s + cost.recompute_s;
    const double stretched = alone + beside_share * std::min(beside, alone / (1.0 - beside_share));
    const double exposed = std::max(0.0, beside - stretched);
    const double scale = alone > 0 ? stretched / alone : 1.0;
    cost.comm_contention_s += stretched - alone;
    cost.compute_s *= scale;
    cost.recompute_s *= scale;
    cost.hidden_comm_s += beside - exposed;
    cost.exposed_comm_s[static_cast<size_t>(Dim::kEp)] += exposed;
    cost.moe_s[static_cast<size_t>(MoePart::kDispatch)] += exposed;
    cost.moe_imbalance_s += beside > 0 ? beside_imbalance * exposed / beside : 0.0;
  }
  const double gpu_s = std::accumulate(cost.exposed_comm_s.begin(), cost.exposed_comm_s.end(),
                                       cost.compute_s + cost.recompute_s + cost.optimizer_s);
  // The host issues kernels ahead of the GPU: a task lasts at least its
  // issue time. A synchronisation drains the queue: what the host does next
  // (its sync round trip, the framework's hooks) is not hidden.
  const strategies::HostWork& h = w.host;
  cost.host_s = issue_s +
                static_cast<double>(h.compiled_region_calls) * host.compiled_region_call_s +
                h.dtensor_dispatches * host.dtensor_dispatch_s;
  // Hooks and per-rank list copies run after a synchronisation: exposed.
  const double hooks_s = static_cast<double>(h.hooked_units) * host.unit_hook_s +
                         h.rank_list_entries * host.rank_list_entry_s;
  // Syncs placed at ops: the GPU's waits for the host, op by op.
  const double gpu_and_host_waits_s =
      race ? gpu_s + std::max(0.0, issue_race.end_s() - sequence_s) : gpu_s;
  cost.host_s += static_cast<double>(placed_syncs) * host.sync_s;
  double duration = 0;
  if (h.syncs > 0) {
    cost.host_s += hooks_s + static_cast<double>(h.syncs) * host.sync_s;
    duration = std::max(gpu_and_host_waits_s, cost.host_s - hooks_s) + hooks_s +
               static_cast<double>(h.syncs) * (host.sync_s + host.dispatch_forward_s);
  } else {
    cost.host_s += hooks_s;
    duration = std::max(gpu_and_host_waits_s, cost.host_s);
  }
  cost.host_idle_s = duration - gpu_s;
  cost.duration_s = duration;
  return cost;
}

/// How many times as long `work`'s compute takes on `rank`: its own GPU's
/// slowdown, or that of the slowest member of any group the work has an
/// in-task collective on (the collective waits for it, op by op).
double work_slowdown(const Schedule& schedule, const Degradation& degradation, int32_t work,
                     int64_t rank) {
  auto slowdown_of = [&](int64_t r) {
    const auto it = degradation.gpu_slowdown.find(r);
    return it == degradation.gpu_slowdown.end() ? 1.0 : it->second;
  };
  double slowdown = slowdown_of(rank);
  std::array<bool, strategies::kGroupKinds> seen{};
  for (const strategies::Segment& seg : schedule.works[static_cast<size_t>(work)].segments) {
    for (const Op& op : seg.ops) {
      if (op.kind != OpKind::kCollective) continue;
      const GroupKind kind = in_work_group_kind(op.collective);
      if (seen[static_cast<size_t>(kind)]) continue;
      seen[static_cast<size_t>(kind)] = true;
      for (const int64_t member : schedule.layout.group(rank, kind)) {
        slowdown = std::max(slowdown, slowdown_of(member));
      }
    }
  }
  return slowdown;
}

/// Capacity factors of the fabric's links (empty: all healthy).
std::vector<double> link_factors(const hwmodels::Fabric& fabric, const Degradation& degradation) {
  if (degradation.nic_rate_fraction.empty()) return {};
  std::vector<double> factors(fabric.link_count(), 1.0);
  for (const auto& [rank, fraction] : degradation.nic_rate_fraction) {
    for (const uint32_t l : fabric.nic_links(fabric.nic_of(rank))) {
      factors[l] = std::min(factors[l], fraction);
    }
  }
  return factors;
}

/// Layout::distinct_shifts of the rank sets of a schedule's collectives,
/// each found once.
class Images {
 public:
  explicit Images(const strategies::Layout& layout) : layout_(layout) {}

  const std::vector<int64_t>& distinct(const std::vector<int64_t>& ranks) {
    auto it = cache_.find(ranks);
    if (it == cache_.end()) it = cache_.emplace(ranks, layout_.distinct_shifts(ranks)).first;
    return it->second;
  }

  /// `rank` moved by `shift`; an in-network endpoint stays where it is.
  int64_t apply(int64_t shift, int64_t rank) const {
    return rank == hwmodels::kInNetwork ? rank : layout_.shifted(rank, shift);
  }

 private:
  const strategies::Layout& layout_;
  std::map<std::vector<int64_t>, std::vector<int64_t>> cache_;
};

/// Hop multiplicities of transfers under the symmetric scope: how many
/// images of the transfer cross each link of its own route.
class ImageCounter {
 public:
  ImageCounter(Images& images, const hwmodels::FabricInstance& fabric)
      : images_(images), fabric_(fabric) {}

  /// `shifts`: Images::distinct of the members of the transfer's collective.
  void weigh(const std::vector<int64_t>& shifts, const hwmodels::Transfer& t,
             hwmodels::Route& route) {
    const auto key = std::make_tuple(t.src, t.dst, &shifts);
    auto it = counts_.find(key);
    if (it == counts_.end()) {
      std::vector<uint32_t> counts(route.hops.size(), 1);  // the transfer itself
      for (size_t s = 1; s < shifts.size(); ++s) {
        const hwmodels::Route image =
            fabric_.route(images_.apply(shifts[s], t.src), images_.apply(shifts[s], t.dst));
        for (const sim::PathHop& hop : image.hops) {
          for (size_t h = 0; h < route.hops.size(); ++h) {
            if (route.hops[h].link == hop.link) ++counts[h];
          }
        }
      }
      it = counts_.emplace(key, std::move(counts)).first;
    }
    for (size_t h = 0; h < route.hops.size(); ++h) route.hops[h].multiplicity *= it->second[h];
  }

 private:
  Images& images_;
  const hwmodels::FabricInstance& fabric_;
  std::map<std::tuple<int64_t, int64_t, const std::vector<int64_t>*>, std::vector<uint32_t>>
      counts_;
};

}  // namespace

hwmodels::KernelCost price_op(const Op& op, const hwmodels::GpuModel& gpu,
                              const strategies::Job& job,
                              std::optional<hwmodels::AttentionKernel> attention) {
  switch (op.kind) {
    case OpKind::kGemm: {
      const strategies::GemmShape& g = op.gemm;
      const int64_t at_once = op.concurrent_gemms;
      const hwmodels::GemmAccumulation accumulation = strategies::promotes_fp8_accumulation(job, op)
                                                          ? hwmodels::GemmAccumulation::kPromoted
                                                          : hwmodels::GemmAccumulation::kFast;
      if (at_once <= 0 || g.batch <= at_once) {
        hwmodels::KernelCost cost = gpu.gemm_time(g.m, g.n, g.k, g.batch, op.format, accumulation);
        cost.kernels = op.kernels;
        return cost;
      }
      // One GEMM per batch member, `at_once` of them beside each other on
      // their streams: each round shares the SMs as a batch of that size
      // (its tiles fill the waves together), rounds follow one another.
      hwmodels::KernelCost cost;
      for (int64_t done = 0; done < g.batch; done += at_once) {
        cost += gpu.gemm_time(g.m, g.n, g.k, std::min(at_once, g.batch - done), op.format,
                              accumulation);
      }
      cost.kernels = op.kernels;
      return cost;
    }
    case OpKind::kAttention: {
      const strategies::AttentionShape& a = op.attention;
      hwmodels::AttentionShape shape;
      shape.batch = a.batch;
      shape.heads = a.heads;
      shape.kv_heads = a.kv_heads;
      shape.q_len = a.q_len;
      shape.kv_len = a.kv_len;
      shape.head_dim = a.head_dim;
      shape.causal = a.causal;
      shape.window = a.window;
      shape.dropout = strategies::uses_dropout(job.model);
      const hwmodels::Pass pass = a.backward ? hwmodels::Pass::kBackward : hwmodels::Pass::kForward;
      if (a.flash && attention) return gpu.attention_time(shape, pass, *attention, op.format);
      return gpu.attention_time(shape, pass, a.flash, op.format);
    }
    case OpKind::kMemoryBound: {
      // An op of several kernels (an eager chain): each moves its share and
      // pays its own latency and launch.
      const double kernels = static_cast<double>(std::max(1, op.kernels));
      hwmodels::KernelCost cost =
          gpu.memory_bound_time(op.memory.bytes / kernels, op.memory.flops / kernels, op.format);
      cost.time_s *= kernels;
      cost.flops *= kernels;
      cost.bytes *= kernels;
      cost.compute_s *= kernels;
      cost.memory_s *= kernels;
      cost.kernels = op.kernels;
      return cost;
    }
    case OpKind::kCollective:
      break;
  }
  throw std::logic_error("price_op: a collective is not a compute op (" + op.name + ")");
}

GroupKind group_kind_of(Dim dim) {
  switch (dim) {
    case Dim::kTp:
      return GroupKind::kTp;
    case Dim::kCp:
      return GroupKind::kCp;
    case Dim::kEp:
      return GroupKind::kEp;
    case Dim::kDp:
      return GroupKind::kDp;
    case Dim::kPp:
      return GroupKind::kPp;
  }
  return GroupKind::kTp;
}

hwmodels::CollectiveOp collective_op(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return hwmodels::CollectiveOp::kAllReduce;
    case CollectiveKind::kAllGather:
      return hwmodels::CollectiveOp::kAllGather;
    case CollectiveKind::kReduceScatter:
      return hwmodels::CollectiveOp::kReduceScatter;
    case CollectiveKind::kAllToAll:
      return hwmodels::CollectiveOp::kAllToAll;
    case CollectiveKind::kSendRecv:
      return hwmodels::CollectiveOp::kSendRecv;
    case CollectiveKind::kBroadcast:
      return hwmodels::CollectiveOp::kBroadcast;
  }
  return hwmodels::CollectiveOp::kAllReduce;
}

WorkCost cost_work(const Schedule& schedule, const StepHardware& hardware, int32_t work,
                   int64_t rank) {
  Pricer pricer(schedule, hardware);
  return price_work(schedule, pricer, work, rank);
}

StepTimeline simulate_schedule(const Schedule& schedule, const StepHardware& hardware,
                               size_t max_flows) {
  const strategies::TaskList& tasks = schedule.tasks;
  const bool symmetric = schedule.scope == strategies::Scope::kRepresentatives;
  static const Degradation kHealthy;
  const Degradation& degradation = hardware.degradation ? *hardware.degradation : kHealthy;
  if (symmetric) {
    for (const auto* parts : {&degradation.gpu_slowdown, &degradation.nic_rate_fraction}) {
      for (const auto& [rank, factor] : *parts) {
        if (schedule.rank_index(rank) < 0) {
          throw std::logic_error("degraded rank " + std::to_string(rank) +
                                 " is not in the simulated replica: simulate every rank");
        }
      }
    }
  }
  StepTimeline out;
  out.task_cost.assign(tasks.size(), StepTimeline::kNoCost);

  sim::Engine engine;
  // About one activity per task (compute delays and pipeline flows; the
  // data-parallel collectives add a few joins and flows each) and one
  // dependency per schedule edge plus one per stream predecessor.
  engine.reserve(tasks.size() + tasks.size() / 16,
                 schedule.deps.size() + tasks.size() + tasks.size() / 8);
  // Each task's first and last activity.
  sim::BulkVector<sim::ActivityId> start(tasks.size()), end(tasks.size());
  {
    // What the activities are made from, released before the run so that
    // the run's arrays reuse its memory.
    const hwmodels::FabricInstance fabric =
        hardware.fabric.instantiate(engine, link_factors(hardware.fabric, degradation));
    Pricer pricer(schedule, hardware);
    Images images(schedule.layout);
    ImageCounter counter(images, fabric);

    // Work costs by the rank's TP/CP/EP/expert-TP groups (ranks whose groups
    // coincide share them), then by work: index into out.costs, in first-use
    // order. A work a degraded GPU slows is priced by (work, groups, slowdown)
    // instead.
    using RankGroups = std::tuple<int64_t, int64_t, int64_t, int64_t>;
    std::map<RankGroups, std::vector<uint32_t>> cost_index;
    std::map<std::tuple<int32_t, RankGroups, uint64_t>, uint32_t> slowed_cost_index;
    // Congruent groups (every TP group of an every-rank step placed alike)
    // give a work equal costs: each distinct cost is kept once.
    std::unordered_map<uint64_t, std::vector<uint32_t>> costs_by_hash;
    auto intern_cost = [&](WorkCost&& cost) {
      uint64_t h = cost.collectives.size();
      for (const double v : {cost.duration_s, cost.sequence_s, cost.compute_s, cost.host_s}) {
        h = mix_hash(h, bits_of(v));
      }
      std::vector<uint32_t>& same_hash = costs_by_hash[h];
      for (const uint32_t index : same_hash) {
        if (out.costs[index] == cost) return index;
      }
      const auto index = static_cast<uint32_t>(out.costs.size());
      out.costs.push_back(std::move(cost));
      same_hash.push_back(index);
      return index;
    };
    std::unordered_map<int64_t, hwmodels::ScheduledCollective> instances;
    // Plans by (group or -1, sender, receiver, op, bytes): the data-parallel
    // buckets and pipeline transfers of a step repeat a few shapes many times.
    // Each is routed (and, when symmetric, weighed) once, with the share of
    // the SMs its kernels hold.
    struct RoutedPlan {
      hwmodels::CollectivePlan plan;
      std::vector<hwmodels::Route> routes;
      double sm_share = 0;
    };
    using PlanKey = std::tuple<int32_t, int64_t, int64_t, int, uint64_t>;
    struct PlanKeyHash {
      size_t operator()(const PlanKey& k) const {
        uint64_t h = static_cast<uint64_t>(std::get<0>(k));
        for (const uint64_t v :
             {static_cast<uint64_t>(std::get<1>(k)), static_cast<uint64_t>(std::get<2>(k)),
              static_cast<uint64_t>(std::get<3>(k)), std::get<4>(k)}) {
          h = mix_hash(h, v);
        }
        return static_cast<size_t>(h);
      }
    };
    std::unordered_map<PlanKey, RoutedPlan, PlanKeyHash> plans;
    // Each simulated GPU's SMs (pool i is schedule.ranks[i]'s): its compute
    // tasks run on them, and every NCCL kernel it takes part in holds some of
    // them while the transfer is in flight (hwmodels::kernel_sms), so compute
    // beside communication slows.
    std::vector<sim::PoolId> sms;
    sms.reserve(schedule.ranks.size());
    for (size_t r = 0; r < schedule.ranks.size(); ++r) sms.push_back(engine.add_pool());
    std::vector<sim::PoolId> held_sms;  // scratch: the simulated members' SMs of one collective

    auto add_comm = [&](const Task& task, int64_t rank, uint32_t id) {
      const bool p2p = task.group < 0;
      const std::array<int64_t, 2> pair{rank, task.peer};
      const std::span<const int64_t> members =
          p2p ? std::span<const int64_t>(pair)
              : std::span<const int64_t>(schedule.groups[static_cast<size_t>(task.group)].ranks);
      const hwmodels::CollectiveOp op =
          p2p ? hwmodels::CollectiveOp::kBroadcast : collective_op(task.collective);
      const PlanKey plan_key{p2p ? -1 : task.group, p2p ? rank : -1, p2p ? task.peer : -1,
                             static_cast<int>(op), bits_of(task.bytes)};
      auto plan = plans.find(plan_key);
      if (plan == plans.end()) {
        const std::vector<int64_t> group(members.begin(), members.end());
        RoutedPlan routed;
        routed.plan = hwmodels::plan_collective(hardware.fabric, op, group, task.bytes,
                                                hwmodels::Algorithm::kAuto, hardware.collectives);
        hwmodels::RouteHook hook;
        if (symmetric) {
          const std::vector<int64_t>* shifts = &images.distinct(group);
          hook = [&counter, shifts](const hwmodels::Transfer& t, hwmodels::Route& route) {
            counter.weigh(*shifts, t, route);
          };
        }
        routed.routes = hwmodels::collective_routes(fabric, routed.plan, hook);
        routed.sm_share = pricer.comm_sm_share(group);
        plan = plans.emplace(plan_key, std::move(routed)).first;
      }
      out.flows += plan->second.plan.flow_count();
      const hwmodels::ScheduledCollective c =
          hwmodels::add_collective(engine, plan->second.plan, plan->second.routes, id);
      const double share = plan->second.sm_share;
      if (share > 0) {
        held_sms.clear();
        for (const int64_t m : members) {
          const int64_t index = schedule.rank_index(m);
          if (index >= 0) held_sms.push_back(sms[static_cast<size_t>(index)]);
        }
        engine.add_hold(c.entry, c.exit, held_sms, share);
      }
      return c;
    };

    for (size_t r = 0; r < schedule.ranks.size(); ++r) {
      const int64_t rank = schedule.ranks[r];
      auto group_id = [&](GroupKind kind) {
        const std::vector<int64_t> g = schedule.layout.group(rank, kind);
        return *std::min_element(g.begin(), g.end());
      };
      const RankGroups rank_groups{group_id(GroupKind::kTp), group_id(GroupKind::kCp),
                                   group_id(GroupKind::kEp), group_id(GroupKind::kExpertTp)};
      std::vector<uint32_t>& rank_costs = cost_index[rank_groups];
      rank_costs.resize(schedule.works.size(), StepTimeline::kNoCost);
      auto next_task = schedule.rank_tasks(r).begin();
      for (uint32_t id = schedule.rank_begin[r]; id < schedule.rank_begin[r + 1]; ++id) {
        const Task task = *next_task++;
        if (task.work >= 0) {
          const double slowdown = degradation.gpu_slowdown.empty()
                                      ? 1.0
                                      : work_slowdown(schedule, degradation, task.work, rank);
          uint32_t cost = StepTimeline::kNoCost;
          if (slowdown == 1.0) {
            uint32_t& shared = rank_costs[static_cast<size_t>(task.work)];
            if (shared == StepTimeline::kNoCost) {
              shared = intern_cost(price_work(schedule, pricer, task.work, rank, slowdown));
            }
            cost = shared;
          } else {
            const auto key = std::make_tuple(task.work, rank_groups, bits_of(slowdown));
            auto it = slowed_cost_index.find(key);
            if (it == slowed_cost_index.end()) {
              it = slowed_cost_index.emplace(key, static_cast<uint32_t>(out.costs.size())).first;
              out.costs.push_back(price_work(schedule, pricer, task.work, rank, slowdown));
            }
            cost = it->second;
          }
          out.task_cost[id] = cost;
          const sim::ActivityId a = engine.add_pool_work(
              sim::Time::from_seconds_ceil(out.costs[cost].duration_s), sms[r], sim::kNoStream, id);
          start[id] = end[id] = a;
          continue;
        }
        // Communication: one set of flows per collective instance, shared by
        // the simulated members; a pipeline transfer is a broadcast from the
        // sender to its peer.
        if (task.group < 0) {
          const hwmodels::ScheduledCollective c = add_comm(task, rank, id);
          start[id] = c.entry;
          end[id] = c.exit;
        } else {
          auto inst = instances.find(task.instance());
          if (inst == instances.end()) {
            inst = instances.emplace(task.instance(), add_comm(task, rank, id)).first;
          }
          start[id] = inst->second.entry;
          end[id] = inst->second.exit;
        }
        if (out.flows > max_flows) {
          out.too_many_flows_task = id;
          return out;
        }
      }
    }
  }

  // Dependencies: the schedule's, and the previous task of the same stream.
  for (size_t r = 0; r < schedule.ranks.size(); ++r) {
    std::array<int64_t, strategies::kStreams> last{};
    last.fill(-1);
    auto next_task = schedule.rank_tasks(r).begin();
    for (uint32_t id = schedule.rank_begin[r]; id < schedule.rank_begin[r + 1]; ++id) {
      const Task task = *next_task++;
      for (strategies::TaskId dep : schedule.dependencies(task)) {
        engine.add_dependency(end[dep], start[id]);
      }
      int64_t& prev = last[static_cast<size_t>(task.stream)];
      if (prev >= 0) engine.add_dependency(end[static_cast<size_t>(prev)], start[id]);
      prev = id;
    }
  }

  out.activities = engine.activity_count();
  out.run = engine.run();
  if (out.run.beyond_clock) {
    out.beyond_clock_task = engine.tag(*out.run.beyond_clock);
    return out;
  }
  if (!out.run.completed()) {
    std::string stuck;
    for (size_t i = 0; i < out.run.deadlocked.size() && i < 20; ++i) {
      stuck += "\n  " + schedule.task_name(engine.tag(out.run.deadlocked[i]));
    }
    throw std::logic_error("step simulation deadlocked (a schedule bug); stuck tasks:" + stuck);
  }
  out.tasks.resize(tasks.size());
  for (size_t id = 0; id < tasks.size(); ++id) {
    out.tasks[id] = {engine.start_time(start[id]), engine.finish_time(end[id])};
  }
  return out;
}

}  // namespace podsim::scenarios
