#include "strategies/pipeline_order.h"

#include <algorithm>
#include <deque>
#include <limits>

namespace podsim::strategies {
namespace {

/// Megatron's interleaved (and, with v = 1, plain) 1F1B order of one stage.
std::vector<Slot> one_f_one_b(int64_t p, int64_t v, int64_t m, int64_t s, SlotKind backward) {
  const int64_t total = m * v;
  const int64_t warmup = std::min(total, v == 1 ? p - s - 1 : (p - s - 1) * 2 + (v - 1) * p);
  auto mb = [&](int64_t k) { return static_cast<int32_t>((k / (p * v)) * p + k % p); };
  auto fwd = [&](int64_t k) {
    return Slot{SlotKind::kForward, mb(k), static_cast<int32_t>((k / p) % v)};
  };
  auto bwd = [&](int64_t k) {
    return Slot{backward, mb(k), static_cast<int32_t>(v - 1 - (k / p) % v)};
  };
  std::vector<Slot> out;
  out.reserve(static_cast<size_t>(2 * total));
  for (int64_t k = 0; k < warmup; ++k) out.push_back(fwd(k));
  for (int64_t i = 0; i < total - warmup; ++i) {
    out.push_back(fwd(warmup + i));
    out.push_back(bwd(i));
  }
  for (int64_t k = total - warmup; k < total; ++k) out.push_back(bwd(k));
  return out;
}

std::vector<std::vector<Slot>> zero_bubble_h1(int64_t p, int64_t m) {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<Slot>> fb(static_cast<size_t>(p));
  for (int64_t s = 0; s < p; ++s)
    fb[static_cast<size_t>(s)] = one_f_one_b(p, 1, m, s, SlotKind::kBackward);
  std::vector<std::vector<int64_t>> f_end(static_cast<size_t>(p),
                                          std::vector<int64_t>(static_cast<size_t>(m), kNever));
  std::vector<std::vector<int64_t>> b_end = f_end;
  std::vector<size_t> pos(static_cast<size_t>(p), 0);
  std::vector<int64_t> busy(static_cast<size_t>(p), 0), f_done(static_cast<size_t>(p), 0),
      w_done(static_cast<size_t>(p), 0);
  std::vector<std::deque<int32_t>> pending_w(static_cast<size_t>(p));
  std::vector<std::vector<Slot>> out(static_cast<size_t>(p));
  const auto total = static_cast<size_t>(3 * m);
  for (int64_t t = 0;; ++t) {
    bool all_done = true;
    for (int64_t s = 0; s < p; ++s) {
      const auto si = static_cast<size_t>(s);
      if (out[si].size() < total) all_done = false;
      if (busy[si] > t || out[si].size() == total) continue;
      const std::vector<Slot>& seq = fb[si];
      bool ready = false;
      bool is_forward = false;
      if (pos[si] < seq.size()) {
        const Slot& next = seq[pos[si]];
        const auto mbi = static_cast<size_t>(next.micro_batch);
        is_forward = next.kind == SlotKind::kForward;
        if (is_forward) {
          ready = s == 0 || f_end[si - 1][mbi] <= t;
        } else {
          ready = s == p - 1 ? f_end[si][mbi] <= t : b_end[si + 1][mbi] <= t;
        }
      }
      const bool over_cap = is_forward && f_done[si] - w_done[si] >= p;
      if (ready && !(over_cap && !pending_w[si].empty())) {
        Slot next = seq[pos[si]++];
        const auto mbi = static_cast<size_t>(next.micro_batch);
        if (next.kind == SlotKind::kForward) {
          f_end[si][mbi] = t + 1;
          ++f_done[si];
        } else {
          b_end[si][mbi] = t + 1;
          pending_w[si].push_back(next.micro_batch);
        }
        out[si].push_back(next);
        busy[si] = t + 1;
      } else if (!pending_w[si].empty()) {
        out[si].push_back({SlotKind::kBackwardWeight, pending_w[si].front(), 0});
        pending_w[si].pop_front();
        ++w_done[si];
        busy[si] = t + 1;
      }
    }
    if (all_done) break;
  }
  return out;
}

}  // namespace

std::vector<std::vector<Slot>> pipeline_orders(const Job& job) {
  const int64_t p = job.plan.pp, m = micro_batches(job);
  const int64_t v = job.plan.virtual_stages;
  std::vector<std::vector<Slot>> out(static_cast<size_t>(p));
  switch (job.plan.schedule) {
    case PipelineSchedule::kGpipe:
      for (auto& order : out) {
        for (int32_t i = 0; i < m; ++i) order.push_back({SlotKind::kForward, i, 0});
        for (int32_t i = 0; i < m; ++i) order.push_back({SlotKind::kBackward, i, 0});
      }
      return out;
    case PipelineSchedule::kOneFOneB:
    case PipelineSchedule::kInterleavedOneFOneB:
      for (int64_t s = 0; s < p; ++s) {
        out[static_cast<size_t>(s)] = one_f_one_b(p, v, m, s, SlotKind::kBackward);
      }
      return out;
    case PipelineSchedule::kZeroBubble:
      return zero_bubble_h1(p, m);
  }
  return out;
}

}  // namespace podsim::strategies
