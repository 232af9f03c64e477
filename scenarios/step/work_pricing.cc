#include "scenarios/step/work_pricing.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "scenarios/step/moe_dispatch.h"

namespace podsim::scenarios {

using strategies::CollectiveKind;
using strategies::Dim;
using strategies::GroupKind;
using strategies::InWorkGroup;
using strategies::MoePart;
using strategies::Op;
using strategies::OpKind;
using strategies::OpRole;
using strategies::Schedule;

double Pricer::op_time(int32_t work, size_t segment, size_t op_index) {
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

double Pricer::overlapped_op_time(int32_t work, size_t segment, size_t op_index, int32_t chunks) {
  const Op& op = schedule_.works[static_cast<size_t>(work)].segments[segment].ops[op_index];
  if (chunks <= 1 || op.kind != OpKind::kGemm || op.gemm.m < 2) {
    return op_time(work, segment, op_index);
  }
  const auto key = std::make_tuple(work, segment, op_index, chunks);
  const auto it = chunked_times_.find(key);
  if (it != chunked_times_.end()) return it->second;
  // m rows in `chunks` pieces: `longer` of them one row longer than the rest.
  const int64_t pieces = std::min<int64_t>(chunks, op.gemm.m);
  const int64_t rows = op.gemm.m / pieces;
  const int64_t longer = op.gemm.m % pieces;
  Op chunk = op;
  chunk.gemm.m = rows;
  double t = static_cast<double>(pieces - longer) * price_compute(chunk);
  if (longer > 0) {
    chunk.gemm.m = rows + 1;
    t += static_cast<double>(longer) * price_compute(chunk);
  }
  chunked_times_.emplace(key, t);
  return t;
}

double Pricer::comm_sm_share(const std::vector<int64_t>& group) const {
  const int sms = hw_.gpu.spec().sms;
  if (sms <= 0) return 0.0;
  const int held = hwmodels::kernel_sms(hw_.fabric, group, hw_.collectives);
  return std::clamp(static_cast<double>(held) / sms, 0.0, 0.9);
}

double Pricer::comm_sm_share(const strategies::CollectiveShape& c,
                             const std::vector<int64_t>& group) {
  if (c.kernel_sms < 0) return comm_sm_share(group);
  const int sms = hw_.gpu.spec().sms;
  return sms > 0 ? std::clamp(static_cast<double>(c.kernel_sms) / sms, 0.0, 0.9) : 0.0;
}

double Pricer::collective_time(const Op& op, const std::vector<int64_t>& group) {
  const strategies::CollectiveShape& c = op.collective;
  if (group.size() <= 1 || c.bytes <= 0) return 0.0;
  const bool per_node = c.dispatch.per_node && c.kind == CollectiveKind::kAllToAll;
  auto key =
      std::make_tuple(static_cast<int>(c.kind) + (per_node ? 100 : 0), bits_of(c.bytes), group);
  // A fused dispatch's price depends on the schedule's routing, so it stays
  // with the schedule; a collective's depends on the hardware alone.
  CollectiveTimes& cache =
      per_node || hw_.collective_times == nullptr ? collective_cache_ : *hw_.collective_times;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const double t =
      per_node ? fused_dispatch_time(hw_.fabric, hw_.collectives, group, c.dispatch,
                                     *schedule_.job.model.moe, op.imbalance)
               : hwmodels::predict_collective(hw_.fabric, collective_op(c.kind), group, c.bytes,
                                              hwmodels::Algorithm::kAuto, hw_.collectives)
                     .time_s;
  cache.emplace(std::move(key), t);
  return t;
}

double Pricer::imbalance_time(int32_t work, size_t segment, size_t op_index) {
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

double Pricer::price_compute(const Op& op) const {
  return price_op(op, hw_.gpu, schedule_.job, hw_.kernels.attention).time_s;
}

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

namespace {

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

}  // namespace

WorkCost price_work(const Schedule& schedule, Pricer& pricer, int32_t work, int64_t rank,
                    double slowdown) {
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
        const double alone = slowdown * pricer.overlapped_op_time(work, s, compute_index,
                                                                  comm.collective.gemm_chunks);
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
  // Offloaded activations cross the host link on DMA engines beside the
  // kernels (each direction at the link's rate); the work cannot end before
  // its copies have.
  const double link = pricer.host_link_bytes_per_s();
  if (link > 0) {
    const double copy_s = std::max(w.host_copy_out_bytes, w.host_copy_in_bytes) / link;
    cost.host_copy_wait_s = std::max(0.0, copy_s - duration);
    duration += cost.host_copy_wait_s;
  }
  cost.duration_s = duration;
  return cost;
}

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
          gpu.memory_bound_time(op.memory.bytes / kernels, op.memory.flops / kernels, op.format,
                                op.memory.bandwidth_fraction);
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

}  // namespace podsim::scenarios
