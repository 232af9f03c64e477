#include <algorithm>
#include <bit>
#include <stdexcept>

#include "strategies/schedule.h"

namespace podsim::strategies {
namespace {

/// Whether `t` runs `pattern` with only its own rank, peers, groups and
/// dependencies (set later, so not compared) differing.
bool runs_pattern(const Task& t, const Task& pattern) {
  return t.stage == pattern.stage && t.chunk == pattern.chunk &&
         t.micro_batch == pattern.micro_batch && t.layer_begin == pattern.layer_begin &&
         t.layer_end == pattern.layer_end && t.work == pattern.work && t.kind == pattern.kind &&
         t.stream == pattern.stream && t.embedding == pattern.embedding && t.head == pattern.head &&
         t.purpose == pattern.purpose && t.collective == pattern.collective &&
         t.dim == pattern.dim && t.group_seq == pattern.group_seq &&
         std::bit_cast<uint64_t>(t.bytes) == std::bit_cast<uint64_t>(pattern.bytes) &&
         (t.group < 0) == (pattern.group < 0) && (t.peer < 0) == (pattern.peer < 0) &&
         (t.group < 0 || t.peer < 0);
}

}  // namespace

TaskList::Iterator::Iterator(const TaskList* list, TaskId id) : list_(list), id_(id) {
  if (list_->shared_tasks_ > 0 && id_ < list_->size_) segment_ = list_->segment_of(id_);
}

TaskList::Iterator& TaskList::Iterator::operator++() {
  ++id_;
  if (list_->shared_tasks_ > 0 && segment_ + 1 < list_->segments_.size() &&
      id_ >= list_->segments_[segment_ + 1].first) {
    ++segment_;
  }
  return *this;
}

TaskList::Range TaskList::range(TaskId first, TaskId last) const {
  return Range(*this, first, last);
}

size_t TaskList::segment_of(TaskId id) const {
  const auto after = std::upper_bound(segments_.begin(), segments_.end(), id,
                                      [](TaskId i, const Segment& s) { return i < s.first; });
  return static_cast<size_t>(after - segments_.begin()) - 1;
}

Task TaskList::at(size_t segment, TaskId id) const {
  if (shared_tasks_ == 0) return whole_[id];
  const Segment& s = segments_[segment];
  const uint32_t k = id - s.first;
  Task t = whole_[s.whole_begin + k];
  if (s.own_begin == Segment::kWhole) return t;
  const Own& own = own_[s.own_begin + k];
  t.rank = s.rank;
  if (t.group >= 0) t.group = own.link;
  if (t.peer >= 0) t.peer = own.link;
  t.dep_begin = own.dep_begin;
  t.dep_count = own.dep_count;
  return t;
}

void TaskList::push_back(const Task& task) {
  const auto id = static_cast<TaskId>(size_);
  if (segments_.empty() || segments_.back().own_begin != Segment::kWhole) {
    segments_.push_back({id, static_cast<uint32_t>(whole_.size()), Segment::kWhole, 0});
  }
  whole_.push_back(task);
  ++size_;
}

void TaskList::reserve(size_t whole, size_t shared) {
  whole_.reserve(whole);
  own_.reserve(shared);
}

bool TaskList::share_pattern(TaskId first, TaskId pattern) {
  // Both runs are whole: `first` starts the last segment's tail.
  const Segment& last = segments_.back();
  if (last.own_begin != Segment::kWhole || first < last.first || pattern >= first) {
    throw std::logic_error("TaskList::share_pattern: the tasks are not the last whole ones");
  }
  const size_t pattern_segment = segment_of(pattern);
  const Segment& p = segments_[pattern_segment];
  if (p.own_begin != Segment::kWhole) return false;
  const size_t count = size_ - first;
  const size_t pattern_at = p.whole_begin + (pattern - p.first);
  const size_t next = pattern_segment + 1 < segments_.size() ? segments_[pattern_segment + 1].first
                                                             : static_cast<size_t>(size_);
  // The pattern's tasks: whole, in a row, before `first`, of one rank.
  if (pattern + count > std::min<size_t>(next, first)) return false;
  const size_t at = last.whole_begin + (first - last.first);
  const int32_t rank = whole_[at].rank;
  for (size_t k = 0; k < count; ++k) {
    const Task& t = whole_[at + k];
    const Task& pattern_task = whole_[pattern_at + k];
    if (t.rank != rank || pattern_task.rank != whole_[pattern_at].rank ||
        !runs_pattern(t, pattern_task)) {
      return false;
    }
  }
  const auto own_begin = static_cast<uint32_t>(own_.size());
  for (size_t k = 0; k < count; ++k) {
    const Task& t = whole_[at + k];
    own_.push_back({t.group >= 0 ? t.group : t.peer, t.dep_begin, t.dep_count});
  }
  whole_.resize(at);
  if (first == segments_.back().first) segments_.pop_back();
  segments_.push_back({first, static_cast<uint32_t>(pattern_at), own_begin, rank});
  shared_tasks_ += count;
  return true;
}

void TaskList::set_dependencies(TaskId id, uint32_t begin, uint32_t count) {
  if (shared_tasks_ == 0) {
    whole_[id].dep_begin = begin;
    whole_[id].dep_count = count;
    return;
  }
  const Segment& s = segments_[segment_of(id)];
  const uint32_t k = id - s.first;
  if (s.own_begin == Segment::kWhole) {
    whole_[s.whole_begin + k].dep_begin = begin;
    whole_[s.whole_begin + k].dep_count = count;
  } else {
    own_[s.own_begin + k].dep_begin = begin;
    own_[s.own_begin + k].dep_count = count;
  }
}

}  // namespace podsim::strategies
