#include "strategies/pipeline_order.h"

#include <algorithm>
#include <array>
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

/// DualPipe's order of rank r (see pipeline_order.h).
std::vector<Slot> dualpipe(int64_t p, int64_t m, int64_t r) {
  const int64_t n = p / 2, half = std::min(r, p - 1 - r), chunks = m / 2;
  const bool second_half = r >= n;
  const bool middle = r == n - 1 || r == n;
  // Phase 0 is the direction entering at this rank's end of the pipeline.
  auto chunk_of = [&](int phase) { return static_cast<int32_t>(phase ^ (second_half ? 1 : 0)); };
  std::array<int32_t, 2> next_f{0, 0}, next_b{0, 0};  // by chunk, index within its direction
  auto mb = [&](int32_t chunk, int32_t index) {
    return static_cast<int32_t>(chunk * chunks + index);
  };
  std::vector<Slot> out;
  auto forward = [&](int phase) {
    const int32_t c = chunk_of(phase);
    out.push_back({SlotKind::kForward, mb(c, next_f[static_cast<size_t>(c)]++), c, -1, -1});
  };
  auto backward = [&](int phase, bool input_only) {
    const int32_t c = chunk_of(phase);
    out.push_back({input_only ? SlotKind::kBackwardInput : SlotKind::kBackward,
                   mb(c, next_b[static_cast<size_t>(c)]++), c, -1, -1});
  };
  std::deque<Slot> deferred;  // input-only backwards whose W is pending, oldest first
  auto weight = [&]() {
    Slot w = deferred.front();
    deferred.pop_front();
    w.kind = SlotKind::kBackwardWeight;
    out.push_back(w);
  };
  auto backward_zb = [&](int phase, bool input_only) {
    backward(phase, input_only);
    if (input_only) deferred.push_back(out.back());
  };
  auto pair = [&](int forward_phase, int backward_phase) {
    const int32_t fc = chunk_of(forward_phase), bc = chunk_of(backward_phase);
    out.push_back({SlotKind::kForwardBackward, mb(fc, next_f[static_cast<size_t>(fc)]++), fc,
                   mb(bc, next_b[static_cast<size_t>(bc)]++), bc});
  };
  for (int64_t i = 0; i < 2 * (n - half - 1); ++i) forward(0);
  for (int64_t i = 0; i < half + 1; ++i) {
    forward(0);
    forward(1);
  }
  for (int64_t i = 0; i < n - half - 1; ++i) {
    backward_zb(1, true);
    weight();
    forward(1);
  }
  for (int64_t i = 0; i < chunks - p + half + 1; ++i) {
    if (i == 0 && middle) {
      forward(0);  // "we don't overlap these two chunks to further reduce bubble size"
      backward_zb(1, false);
    } else {
      pair(0, 1);
    }
    pair(1, 0);
  }
  for (int64_t i = 0; i < n - half - 1; ++i) {
    backward_zb(1, false);
    pair(1, 0);
  }
  bool zb = false;
  for (int64_t i = 0; i < half + 1; ++i) {
    if (i == (half + 1) / 2 && half % 2 == 1) zb = true;
    backward_zb(1, zb);
    if (i == (half + 1) / 2 && half % 2 == 0) zb = true;
    backward_zb(0, zb);
  }
  for (int64_t i = 0; i < n - half - 1; ++i) {
    weight();
    backward_zb(0, true);
  }
  for (int64_t i = 0; i < half + 1; ++i) weight();
  return out;
}

std::vector<std::vector<Slot>> zero_bubble_h1(int64_t p, int64_t m) {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<Slot>> fb(static_cast<size_t>(p));
  for (int64_t s = 0; s < p; ++s)
    fb[static_cast<size_t>(s)] = one_f_one_b(p, 1, m, s, SlotKind::kBackwardInput);
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
    case PipelineSchedule::kDualPipe:
      for (int64_t s = 0; s < p; ++s) out[static_cast<size_t>(s)] = dualpipe(p, m, s);
      return out;
  }
  return out;
}

}  // namespace podsim::strategies
