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
    // Sift the former last element down from the root with a hole. The
    // smaller child is chosen arithmetically (no branch to mispredict).
    size_t hole = 0;
    for (;;) {
      size_t child = 2 * hole + 1;
      if (child + 1 >= n) {
        if (child < n && before(heap_[child], last)) {
          heap_[hole] = heap_[child];
          hole = child;
        }
        break;
      }
      child += before(heap_[child + 1], heap_[child]) ? 1 : 0;
      if (!before(heap_[child], last)) break;
      heap_[hole] = heap_[child];
      hole = child;
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
  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace podsim::sim
