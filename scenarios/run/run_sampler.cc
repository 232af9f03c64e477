#include "scenarios/run/run_sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "scenarios/run/random_stream.h"

namespace podsim::scenarios {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

/// How the steps split into segments: `count` segments, all of `steps`
/// steps but the last, which has `last_steps` (at least as long as a
/// persist, so that the commit before it happens before the run ends: a
/// shorter remainder joins the segment before).
struct Segments {
  int64_t count = 1;
  int64_t steps = 0;
  int64_t last_steps = 0;
};

Segments segments_of(const RunInputs& in) {
  Segments s;
  // A save waits for no earlier persist: segments last at least as long.
  const auto persist_steps = static_cast<int64_t>(std::ceil(in.persist_s / in.step_time_s));
  s.steps = std::clamp<int64_t>(std::max(in.interval_steps, persist_steps), 1,
                                std::max<int64_t>(in.steps, 1));
  s.count = std::max<int64_t>(1, (in.steps + s.steps - 1) / s.steps);
  s.last_steps = in.steps - (s.count - 1) * s.steps;
  if (s.count > 1 && static_cast<double>(s.last_steps) * in.step_time_s < in.persist_s) {
    --s.count;
    s.last_steps += s.steps;
  }
  return s;
}

/// e^(rate t) - 1 over rate, and its limit t at rate 0.
double grown(double rate, double t) { return rate > 0 ? std::expm1(rate * t) / rate : t; }

/// The straggler process: episodes (one slow GPU each) start as a Poisson
/// process at rate v and last D on average, overlapping freely, so the
/// number present is an M/G/infinity count with mean r = v D; the job is
/// slowed while it is at least one. The job alternates between idle periods
/// (exponential with rate v, exact) and busy periods of mean (e^r - 1) / v
/// (exact for any duration distribution); busy periods are drawn
/// exponential, which keeps the slowed fraction of time, 1 - e^-r, exact
/// and approximates their spread. A run starts in the stationary state.
class Stragglers {
 public:
  Stragglers(const RunInputs& in, uint64_t seed, uint64_t index) : stream_(seed, 2 * index + 1) {
    if (in.straggler_step_factor <= 1 || in.straggler_rate_per_s <= 0) return;
    idle_rate_ = in.straggler_rate_per_s;
    const double present = in.straggler_rate_per_s * in.straggler_mean_s;
    busy_rate_ = in.straggler_rate_per_s / std::expm1(present);
    slowed_ = stream_.uniform() < -std::expm1(-present);
    change_ = stream_.exponential(slowed_ ? busy_rate_ : idle_rate_);
  }

  bool slowed() const { return slowed_; }
  /// When slowed() next changes (never without stragglers).
  double next_change() const { return change_; }
  /// Moves past a change at time t.
  void change(double t) {
    slowed_ = !slowed_;
    change_ = t + stream_.exponential(slowed_ ? busy_rate_ : idle_rate_);
  }

 private:
  RandomStream stream_;
  double idle_rate_ = 0, busy_rate_ = 0;
  bool slowed_ = false;
  double change_ = kNever;
};

/// Work done and not yet safe: nominal seconds and what stragglers added.
struct Work {
  double nominal = 0, extra = 0;
  Work& operator+=(const Work& o) {
    nominal += o.nominal;
    extra += o.extra;
    return *this;
  }
};

}  // namespace

RunSample sample_run(const RunInputs& in, uint64_t seed, uint64_t index) {
  const Segments layout = segments_of(in);
  const double rate = in.interruption_rate_per_s;
  const double factor = std::max(1.0, in.straggler_step_factor);
  RandomStream failures(seed, 2 * index);
  Stragglers stragglers(in, seed, index);
  auto seg_work = [&](int64_t seg) {
    return static_cast<double>(seg + 1 < layout.count ? layout.steps : layout.last_steps) *
           in.step_time_s;
  };

  enum class Phase { kWork, kStall, kRestart };
  RunSample out;
  Phase phase = Phase::kWork;
  double t = 0;
  double phase_left = seg_work(0);  // work: nominal seconds; stall, restart: wall seconds
  int64_t seg = 0;                  // segment being worked on or saved
  int64_t committed = -1;           // segments [0, committed] are safe
  bool pending = false;             // a save whose commit is still to come
  double commit_at = kNever;
  Work safe, pending_work, current;
  double next_failure = rate > 0 ? failures.exponential(rate) : kNever;
  // The pending save (the segment before `seg`) becomes the one to roll back to.
  auto commit = [&]() {
    safe += pending_work;
    pending_work = Work{};
    committed = seg - 1;
    pending = false;
  };
  // A save's stall ended at t: it commits when its write does (at once if
  // the write was in the stall).
  auto saved = [&]() {
    if (in.persist_s <= 0) return commit();
    pending = true;
    commit_at = t + in.persist_s;
  };

  while (true) {
    const double speed_factor = stragglers.slowed() ? factor : 1.0;
    // Whole segments (work + stall) until the next failure or change of
    // pace are identical: step over them at once.
    if (phase == Phase::kWork && phase_left == seg_work(seg) && seg + 1 < layout.count) {
      const double cycle = seg_work(seg) * speed_factor + in.save_stall_s;
      const double horizon = std::min(next_failure, stragglers.next_change());
      const int64_t room = layout.count - 1 - seg;
      const double fits = std::floor((horizon - t) / cycle);
      const int64_t cycles = fits >= static_cast<double>(room) ? room : static_cast<int64_t>(fits);
      if (cycles >= 2 && (!pending || commit_at <= t + cycle)) {
        const Work one{seg_work(seg), seg_work(seg) * (speed_factor - 1)};
        if (pending) safe += pending_work;
        for (int64_t k = 0; k + 1 < cycles; ++k) safe += one;  // committed on the way
        committed = seg + cycles - 2;
        pending_work = one;
        seg += cycles;
        t += static_cast<double>(cycles) * cycle;
        out.checkpoint_s += static_cast<double>(cycles) * in.save_stall_s;
        saved();
        phase_left = seg_work(seg);
        continue;
      }
    }
    const double phase_end = t + phase_left * (phase == Phase::kWork ? speed_factor : 1.0);
    const double change = stragglers.next_change();
    const double commit_time = pending ? commit_at : kNever;
    const double next = std::min({next_failure, commit_time, phase_end, change});
    const double dt = next - t;
    const bool phase_ends = next == phase_end && next != next_failure && next != commit_time;
    switch (phase) {
      case Phase::kWork: {
        const double nominal = phase_ends ? phase_left : std::min(phase_left, dt / speed_factor);
        current += Work{nominal, dt - nominal};
        phase_left -= nominal;
        break;
      }
      case Phase::kStall:
        out.checkpoint_s += dt;
        phase_left -= dt;
        break;
      case Phase::kRestart:
        out.restart_s += dt;
        phase_left -= dt;
        break;
    }
    t = next;
    if (next == change) stragglers.change(t);
    if (next == next_failure) {
      ++out.interruptions;
      if (phase != Phase::kRestart) {
        out.lost_s += pending_work.nominal + pending_work.extra + current.nominal + current.extra;
        pending_work = current = Work{};
        pending = false;
        seg = committed + 1;
      }
      phase = Phase::kRestart;
      phase_left = in.restart_s;
      next_failure = t + failures.exponential(rate);
    } else if (next == commit_time) {
      commit();
    } else if (phase_ends) {
      if (phase == Phase::kRestart) {
        phase = Phase::kWork;
        phase_left = seg_work(seg);
      } else if (phase == Phase::kWork && seg + 1 == layout.count) {
        safe += current;
        break;
      } else if (phase == Phase::kWork) {
        phase = Phase::kStall;
        phase_left = in.save_stall_s;
      } else {
        // The save's stall ended: its checkpoint commits after the persist.
        pending_work = current;
        current = Work{};
        ++seg;
        phase = Phase::kWork;
        phase_left = seg_work(seg);
        saved();
      }
    }
  }
  out.wall_s = t;
  out.useful_s = safe.nominal;
  out.straggler_s = safe.extra;
  return out;
}

double expected_wall_s(const RunInputs& in) {
  const Segments layout = segments_of(in);
  const double rate = in.interruption_rate_per_s;
  const double p = in.persist_s, restart = in.restart_s;
  double slowdown = 1;
  if (in.straggler_step_factor > 1 && in.straggler_rate_per_s > 0) {
    // Slowed a fraction q of the wall-clock time: work proceeds at
    // (1 - q) + q / f of its pace.
    const double q = -std::expm1(-in.straggler_rate_per_s * in.straggler_mean_s);
    slowdown = 1 / (1 - q + q / in.straggler_step_factor);
  }
  const double work = static_cast<double>(layout.steps) * in.step_time_s * slowdown;
  const double last = static_cast<double>(layout.last_steps) * in.step_time_s * slowdown;
  const double resumed = rate > 0 ? std::exp(rate * restart) : 1.0;
  if (layout.count == 1) return grown(rate, last) * resumed;
  const double after_commit = (rate > 0 ? std::exp(rate * p) : 1.0) * resumed;
  const double c = work + in.save_stall_s;
  return grown(rate, c + p) * resumed +
         static_cast<double>(layout.count - 2) * grown(rate, c) * after_commit +
         grown(rate, last - p) * after_commit;
}

}  // namespace podsim::scenarios
