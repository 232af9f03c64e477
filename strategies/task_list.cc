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
  if (!list_->in_id_order_ && id_ < list_->size_) segment_ = list_->segment_of(id_);
}

TaskList::Iterator& TaskList::Iterator::operator++() {
  ++id_;
  if (!list_->in_id_order_ && segment_ + 1 < list_->segments_.size() &&
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

size_t TaskList::segment_end(size_t segment) const {
  return segment + 1 < segments_.size() ? segments_[segment + 1].first : size_;
}

Task TaskList::at(size_t segment, TaskId id) const {
  if (in_id_order_) return whole_[id];
  const Segment& s = segments_[segment];
  const uint32_t k = id - s.first;
  Task t = whole_[s.whole_begin + k];
  if (s.link_begin == Segment::kWhole) return t;
  const int32_t link = links_[s.link_begin + k];
  t.rank = s.rank;
  if (t.group >= 0) t.group = link;
  if (t.peer >= 0) t.peer = link;
  t.dep_begin = s.dep_base + (t.dep_begin - whole_[s.whole_begin].dep_begin);
  return t;
}

void TaskList::push_back(const Task& task) {
  const auto id = static_cast<TaskId>(size_);
  if (segments_.empty() || segments_.back().link_begin != Segment::kWhole ||
      segments_.back().whole_begin + (id - segments_.back().first) != whole_.size()) {
    segments_.push_back({id, static_cast<uint32_t>(whole_.size()), Segment::kWhole, 0, 0});
  }
  whole_.push_back(task);
  ++size_;
}

void TaskList::reserve(size_t whole, size_t shared) {
  whole_.reserve(whole);
  links_.reserve(shared);
}

bool TaskList::share_pattern(TaskId first, TaskId pattern) {
  const size_t last_segment = segments_.size() - 1;
  const Segment& last = segments_[last_segment];
  if (last.link_begin != Segment::kWhole || first < last.first || pattern >= first ||
      last.whole_begin + (size_ - last.first) != whole_.size()) {
    throw std::logic_error("TaskList::share_pattern: the tasks are not the last whole ones");
  }
  const size_t pattern_segment = segment_of(pattern);
  const Segment& p = segments_[pattern_segment];
  if (p.link_begin != Segment::kWhole) return false;
  const size_t count = size_ - first;
  const size_t pattern_at = p.whole_begin + (pattern - p.first);
  // The pattern's tasks: whole, in a row, before `first`, of one rank.
  if (pattern + count > std::min<size_t>(segment_end(pattern_segment), first)) return false;
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
  const auto link_begin = static_cast<uint32_t>(links_.size());
  for (size_t k = 0; k < count; ++k) {
    const Task& t = whole_[at + k];
    links_.push_back(t.group >= 0 ? t.group : t.peer);
  }
  whole_.resize(at);
  if (first == last.first) segments_.pop_back();
  segments_.push_back({first, static_cast<uint32_t>(pattern_at), link_begin, rank, 0});
  in_id_order_ = false;
  return true;
}

void TaskList::make_whole(size_t segment) {
  const Segment s = segments_[segment];
  const auto whole_begin = static_cast<uint32_t>(whole_.size());
  for (auto id = s.first; id < segment_end(segment); ++id) whole_.push_back(at(segment, id));
  segments_[segment].whole_begin = whole_begin;
  segments_[segment].link_begin = Segment::kWhole;
}

void TaskList::set_dependencies(TaskId id, uint32_t begin, uint32_t count) {
  const size_t segment = in_id_order_ ? 0 : segment_of(id);
  Segment& s = segments_[segment];
  const uint32_t k = id - s.first;
  if (s.link_begin != Segment::kWhole) {
    const Task& pattern = whole_[s.whole_begin + k];
    if (k == 0) s.dep_base = begin;
    if (begin == s.dep_base + (pattern.dep_begin - whole_[s.whole_begin].dep_begin) &&
        count == pattern.dep_count) {
      return;
    }
    make_whole(segment);
  }
  Task& t = whole_[s.whole_begin + k];
  t.dep_begin = begin;
  t.dep_count = count;
}

}  // namespace podsim::strategies
