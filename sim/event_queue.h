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

/// A 4-ary min-heap of events ordered by (time, insertion sequence): events
/// at equal times pop in the order they were pushed. No allocation per event
/// once the storage has grown (reserve() to pre-size it), no virtual calls.
/// Four children per node halve the levels a pop walks down a heap that does
/// not fit in cache (every rank's streams of a large job are pending at
/// once), and a node's children are adjacent; (time, seq) is a total order,
/// so the pop order is that of any other heap.
class EventQueue {
 public:
  /// Schedules an event; returns its sequence number (to recognise it later).
  uint64_t push(Time time, uint32_t target, uint32_t kind) {
    const Event event{time.ps(), next_seq_++, target, kind};
    heap_.push_back(event);
    // Sift up with a hole: move parents down until the event's place is found.
    size_t hole = heap_.size() - 1;
    while (hole > 0) {
      const size_t parent = (hole - 1) / kArity;
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
    if (!heap_.empty()) sift_down(0, last);
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
    // Heapify bottom-up: sift down every node that has a child.
    if (heap_.size() < 2) return;
    for (size_t node = (heap_.size() - 2) / kArity + 1; node-- > 0;) sift_down(node, heap_[node]);
  }

  /// True when `a` pops before `b`.
  static bool before(const Event& a, const Event& b) {
#ifdef __SIZEOF_INT128__
    // One 128-bit compare of (time, seq): much faster than two branches on
    // the heap's unpredictable child choice. The sign flip keeps int64 order.
    __extension__ using Key = unsigned __int128;
    constexpr uint64_t kSign = uint64_t{1} << 63;
    const Key key_a = (Key{static_cast<uint64_t>(a.time_ps) ^ kSign} << 64) | a.seq;
    const Key key_b = (Key{static_cast<uint64_t>(b.time_ps) ^ kSign} << 64) | b.seq;
    return key_a < key_b;
#else
    return (a.time_ps < b.time_ps) | ((a.time_ps == b.time_ps) & (a.seq < b.seq));
#endif
  }

 private:
  static constexpr size_t kArity = 4;

  /// Places `event` in the subtree rooted at `hole` (whose own event has been
  /// taken out): children smaller than it move up into the hole.
  void sift_down(size_t hole, const Event event) {
    const size_t n = heap_.size();
    for (;;) {
      const size_t first = kArity * hole + 1;
      if (first >= n) break;
      size_t best = first;
      if (first + kArity <= n) {
        // A full set of children: the smallest, chosen arithmetically (no
        // branch to mispredict on the heap's unpredictable order).
        for (size_t c = first + 1; c < first + kArity; ++c) {
          best = before(heap_[c], heap_[best]) ? c : best;
        }
      } else {
        for (size_t c = first + 1; c < n; ++c) best = before(heap_[c], heap_[best]) ? c : best;
      }
      if (!before(heap_[best], event)) break;
      heap_[hole] = heap_[best];
      hole = best;
    }
    heap_[hole] = event;
  }

  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace podsim::sim
