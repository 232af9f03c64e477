#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/time.h"

namespace podsim::sim {

/// One scheduled event: a plain 24-byte struct, ordered by (time, seq).
struct Event {
  int64_t time_ps = 0;  ///< when it happens (Time::ps())
  uint64_t seq = 0;     ///< insertion sequence: unique per queue, breaks ties
  uint32_t target = 0;  ///< what it is about (an index chosen by the user)
  uint32_t kind = 0;    ///< what happens (a code chosen by the user)

  Time time() const { return Time::from_ps(time_ps); }
};

/// A binary min-heap of events ordered by (time, insertion sequence): events
/// at equal times pop in the order they were pushed. No allocation per event
/// once the storage has grown (reserve() to pre-size it), no virtual calls.
class EventQueue {
 public:
  /// Schedules an event; returns its sequence number (to recognise it later).
  uint64_t push(Time time, uint32_t target, uint32_t kind) {
    const Event event{time.ps(), next_seq_++, target, kind};
    heap_.push_back(event);
    // Sift up with a hole: move parents down until the event's place is found.
    size_t hole = heap_.size() - 1;
    while (hole > 0) {
      const size_t parent = (hole - 1) / 2;
      if (!before(event, heap_[parent])) break;
      heap_[hole] = heap_[parent];
      hole = parent;
    }
    heap_[hole] = event;
    return event.seq;
  }

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  /// The earliest event. Precondition: !empty().
  const Event& top() const { return heap_.front(); }

  /// Removes and returns the earliest event. Precondition: !empty().
  Event pop() {
    const Event result = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n == 0) return result;
    // Bottom-up deletion (Floyd): walk the hole from the root to a leaf along
    // the smaller child (one comparison per level), then sift the former last
    // element up from there; it usually belongs near the bottom.
    size_t hole = 0;
    size_t child = 1;
    while (child + 1 < n) {
      child += before(heap_[child + 1], heap_[child]) ? 1 : 0;
      heap_[hole] = heap_[child];
      hole = child;
      child = 2 * hole + 1;
    }
    if (child < n) {
      heap_[hole] = heap_[child];
      hole = child;
    }
    while (hole > 0) {
      const size_t parent = (hole - 1) / 2;
      if (!before(last, heap_[parent])) break;
      heap_[hole] = heap_[parent];
      hole = parent;
    }
    heap_[hole] = last;
    return result;
  }

  void reserve(size_t events) { heap_.reserve(events); }
  /// Events pushed so far (the next sequence number).
  uint64_t pushed() const { return next_seq_; }

  /// Drops every event for which `keep(event)` is false, in O(size). The pop
  /// order of the remaining events is unchanged ((time, seq) is a total order).
  template <class Keep>
  void retain_if(Keep keep) {
    std::erase_if(heap_, [&keep](const Event& event) { return !keep(event); });
    std::make_heap(heap_.begin(), heap_.end(),
                   [](const Event& a, const Event& b) { return before(b, a); });
  }

  /// True when `a` pops before `b`.
  static bool before(const Event& a, const Event& b) {
    return a.time_ps < b.time_ps || (a.time_ps == b.time_ps && a.seq < b.seq);
  }

 private:
  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace podsim::sim
