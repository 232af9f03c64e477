#include "scenarios/step/memory_replay.h"

#include <algorithm>
#include <cmath>

namespace podsim::scenarios {
namespace {

using strategies::Buffer;
using strategies::Lifetime;
using strategies::Schedule;
using strategies::TaskId;

/// One allocation or release of a buffer at a moment of the step.
struct Event {
  sim::Time time;
  /// Order among events at one moment: releases first (a task that ends as
  /// the next starts hands its memory over), then what a task takes and
  /// gives back first (Buffer::first_in_task), then allocations, then the
  /// releases of buffers taken and given back at that same moment.
  int order = 0;
  uint32_t buffer = 0;  ///< index into the rank's buffers
  bool alloc = false;
  bool first_step_only = false;
};

uint64_t whole_bytes(double bytes) { return static_cast<uint64_t>(std::ceil(bytes)); }

}  // namespace

MemoryReplay replay_memory(const Schedule& schedule, const StepTimeline& timeline,
                           size_t rank_index, const ReplayOptions& options) {
  // The rank's buffers: contiguous, since the builder lays ranks out one
  // after the other.
  const TaskId begin = schedule.rank_begin[rank_index];
  const TaskId end = schedule.rank_begin[rank_index + 1];
  const auto& all = schedule.buffers;
  const auto first = std::partition_point(all.begin(), all.end(),
                                          [&](const Buffer& b) { return b.alloc < begin; });
  const auto last =
      std::partition_point(first, all.end(), [&](const Buffer& b) { return b.alloc < end; });
  const std::vector<Buffer> buffers(first, last);

  std::vector<Event> events;
  events.reserve(2 * buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& b = buffers[i];
    const auto index = static_cast<uint32_t>(i);
    if (b.lifetime == Lifetime::kPersistent) continue;
    const sim::Time start = timeline.tasks[b.alloc].start;
    if (b.first_in_task) {
      events.push_back({start, 1, index, true, false});
      events.push_back({start, 2, index, false, false});
      continue;
    }
    events.push_back({start, 3, index, true, b.lifetime == Lifetime::kFromFirstStep});
    if (b.lifetime == Lifetime::kStep) {
      const sim::Time stop = timeline.tasks[b.free].end;
      events.push_back({stop, stop == start ? 4 : 0, index, false, false});
    }
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.order != b.order) return a.order < b.order;
    return a.buffer < b.buffer;
  });

  hwmodels::CachingAllocator allocator(options.allocator);
  using Handle = hwmodels::CachingAllocator::Handle;
  // Handles of each buffer's blocks: [offset[i], offset[i + 1]).
  std::vector<size_t> offset(buffers.size() + 1, 0);
  for (size_t i = 0; i < buffers.size(); ++i) {
    offset[i + 1] = offset[i] + schedule.tensor_lists[buffers[i].tensors].size() *
                                    static_cast<size_t>(buffers[i].repeats);
  }
  std::vector<Handle> handles(offset.back());
  std::array<double, strategies::kMemoryKinds> live{};
  MemoryReplay out;
  double best = -1;
  bool last_step = false;
  auto note_peak = [&]() {
    if (!last_step) return;
    const auto allocated = static_cast<double>(allocator.allocated_bytes());
    if (allocated > best) {
      best = allocated;
      out.at_peak = live;
    }
  };
  auto take = [&](uint32_t i) {
    const Buffer& b = buffers[i];
    size_t h = offset[i];
    for (uint32_t r = 0; r < b.repeats; ++r) {
      for (double bytes : schedule.tensor_lists[b.tensors]) {
        handles[h++] = allocator.allocate(whole_bytes(bytes), static_cast<int>(b.pool));
      }
    }
    live[static_cast<size_t>(b.kind)] += schedule.bytes(b);
    note_peak();
  };
  auto give_back = [&](uint32_t i) {
    for (size_t h = offset[i]; h < offset[i + 1]; ++h) allocator.release(handles[h]);
    live[static_cast<size_t>(buffers[i].kind)] -= schedule.bytes(buffers[i]);
  };

  for (double bytes : options.workspaces) {
    allocator.allocate(whole_bytes(bytes), static_cast<int>(strategies::Stream::kCompute));
    live[static_cast<size_t>(strategies::MemoryKind::kTemporaries)] += bytes;
    out.workspace += bytes;
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].lifetime == Lifetime::kPersistent) take(static_cast<uint32_t>(i));
  }
  std::vector<uint32_t> until_next_step;  // live ones, freed as the next step starts
  for (int step = 0; step < options.steps; ++step) {
    for (uint32_t i : until_next_step) give_back(i);
    until_next_step.clear();
    if (step == options.steps - 1) {
      last_step = true;
      allocator.reset_peaks();
      note_peak();
    }
    for (const Event& e : events) {
      if (e.first_step_only && step > 0) continue;
      if (e.alloc) {
        take(e.buffer);
        if (buffers[e.buffer].lifetime == Lifetime::kUntilNextStep) {
          until_next_step.push_back(e.buffer);
        }
      } else {
        give_back(e.buffer);
      }
    }
  }
  out.allocated_peak = static_cast<double>(allocator.peak_allocated_bytes());
  out.reserved_peak = static_cast<double>(allocator.peak_reserved_bytes());
  out.alloc_retries = allocator.alloc_retries();
  out.out_of_memory = allocator.out_of_memory();
  return out;
}

}  // namespace podsim::scenarios
