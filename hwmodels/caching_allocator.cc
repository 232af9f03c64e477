#include "hwmodels/caching_allocator.h"

#include <algorithm>

#include "sim/ceil_div.h"

namespace podsim::hwmodels {

CachingAllocator::CachingAllocator(const CachingAllocatorParams& params) : params_(params) {}

uint64_t CachingAllocator::rounded(uint64_t bytes) const {
  const uint64_t b = params_.min_block_bytes;
  return std::max<uint64_t>(b, round_up(bytes, b));
}

uint64_t CachingAllocator::segment_size(uint64_t bytes) const {
  const uint64_t size = rounded(bytes);
  if (size <= params_.small_size_bytes) return params_.small_buffer_bytes;
  if (size < params_.min_large_alloc_bytes) return params_.large_buffer_bytes;
  return round_up(size, params_.round_large_bytes);
}

CachingAllocator::FreeKey CachingAllocator::key(uint32_t id) const {
  const Block& b = blocks_[id];
  return {b.stream, b.size, b.address, id};
}

void CachingAllocator::insert_free(uint32_t id) {
  (blocks_[id].small ? free_small_ : free_large_).insert(key(id));
}

void CachingAllocator::erase_free(uint32_t id) {
  (blocks_[id].small ? free_small_ : free_large_).erase(key(id));
}

uint32_t CachingAllocator::new_segment(uint64_t size, int stream, bool small) {
  Block b;
  b.address = next_address_;
  b.size = size;
  b.stream = stream;
  b.small = small;
  b.segment = static_cast<int64_t>(segments_.size());
  segments_.push_back({size, false});
  next_address_ += size;
  reserved_ += size;
  uint32_t id = 0;
  if (recycled_.empty()) {
    id = static_cast<uint32_t>(blocks_.size());
    blocks_.push_back(b);
  } else {
    id = recycled_.back();
    recycled_.pop_back();
    blocks_[id] = b;
  }
  return id;
}

void CachingAllocator::flush_cache() {
  for (std::set<FreeKey>* pool : {&free_small_, &free_large_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      const uint32_t id = std::get<3>(*it);
      Block& b = blocks_[id];
      if (b.prev == -1 && b.next == -1) {  // the whole segment is free
        segments_[static_cast<size_t>(b.segment)].released = true;
        reserved_ -= b.size;
        recycled_.push_back(id);
        it = pool->erase(it);
      } else {
        ++it;
      }
    }
  }
}

void CachingAllocator::note_peaks() {
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  peak_reserved_ = std::max(peak_reserved_, reserved_);
}

void CachingAllocator::reset_peaks() {
  peak_allocated_ = allocated_;
  peak_reserved_ = reserved_;
}

CachingAllocator::Handle CachingAllocator::allocate(uint64_t bytes, int stream) {
  const uint64_t size = rounded(bytes);
  const bool small = size <= params_.small_size_bytes;
  std::set<FreeKey>& pool = small ? free_small_ : free_large_;
  uint32_t id = 0;
  auto it = pool.lower_bound({stream, size, 0, 0});
  if (it != pool.end() && std::get<0>(*it) == stream) {
    id = std::get<3>(*it);
    pool.erase(it);
  } else {
    const uint64_t segment = segment_size(size);
    if (reserved_ + segment > params_.limit_bytes) {
      ++alloc_retries_;
      flush_cache();
      if (reserved_ + segment > params_.limit_bytes) ++out_of_memory_;
    }
    id = new_segment(segment, stream, small);
  }
  // Split off the remainder when it can serve later requests of its pool.
  const uint64_t remaining = blocks_[id].size - size;
  const bool split =
      small ? remaining >= params_.min_block_bytes : remaining > params_.small_size_bytes;
  if (split) {
    Block rest = blocks_[id];
    rest.address += size;
    rest.size = remaining;
    rest.prev = id;
    uint32_t rest_id = 0;
    if (recycled_.empty()) {
      rest_id = static_cast<uint32_t>(blocks_.size());
      blocks_.push_back(rest);
    } else {
      rest_id = recycled_.back();
      recycled_.pop_back();
      blocks_[rest_id] = rest;
    }
    Block& b = blocks_[id];
    if (b.next != -1) blocks_[static_cast<size_t>(b.next)].prev = rest_id;
    b.next = rest_id;
    b.size = size;
    insert_free(rest_id);
  }
  Block& b = blocks_[id];
  b.live = true;
  allocated_ += b.size;
  note_peaks();
  return id;
}

void CachingAllocator::release(Handle id) {
  Block& b = blocks_[id];
  b.live = false;
  allocated_ -= b.size;
  // Merge with free neighbours of the same segment.
  if (b.next != -1 && !blocks_[static_cast<size_t>(b.next)].live) {
    const auto n = static_cast<uint32_t>(b.next);
    erase_free(n);
    b.size += blocks_[n].size;
    b.next = blocks_[n].next;
    if (b.next != -1) blocks_[static_cast<size_t>(b.next)].prev = id;
    recycled_.push_back(n);
  }
  if (b.prev != -1 && !blocks_[static_cast<size_t>(b.prev)].live) {
    const auto p = static_cast<uint32_t>(b.prev);
    erase_free(p);
    Block& prev = blocks_[p];
    prev.size += b.size;
    prev.next = b.next;
    if (prev.next != -1) blocks_[static_cast<size_t>(prev.next)].prev = p;
    recycled_.push_back(id);
    insert_free(p);
    return;
  }
  insert_free(id);
}

}  // namespace podsim::hwmodels
