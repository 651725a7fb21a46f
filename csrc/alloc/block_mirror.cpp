#include "alloc/block_mirror.h"

#include <algorithm>
#include <iterator>

namespace visprof {

uint64_t round_block_size(uint64_t requested) {
  if (requested < kMinBlockSize) return kMinBlockSize;
  return kMinBlockSize * ((requested + kMinBlockSize - 1) / kMinBlockSize);
}

BlockMirror& BlockMirror::instance() {
  static BlockMirror* mirror = new BlockMirror();  // outlives every allocation, even at exit
  return *mirror;
}

void BlockMirror::erase_range(std::map<uint64_t, uint64_t>& ranges, uint64_t start, uint64_t end) {
  auto it = ranges.upper_bound(start);
  if (it != ranges.begin()) {
    auto before = std::prev(it);
    const uint64_t before_end = before->first + before->second;
    if (before_end > start) {  // starts before `start` and reaches into it: keep its head
      before->second = start - before->first;
      if (before_end > end) ranges[end] = before_end - end;  // and its tail past `end`
    }
  }
  while (it != ranges.end() && it->first < end) {
    const uint64_t it_end = it->first + it->second;
    it = ranges.erase(it);
    if (it_end > end) ranges[end] = it_end - end;
  }
}

bool BlockMirror::contains(const std::map<uint64_t, uint64_t>& ranges, uint64_t addr) {
  auto it = ranges.upper_bound(addr);
  if (it == ranges.begin()) return false;
  --it;
  return addr < it->first + it->second;
}

void BlockMirror::add_segment(uint64_t addr, uint64_t size, int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  Device& d = devices_[device];
  d.segments[addr] = size;
  erase_range(d.free, addr, addr + size);  // a stale range left by a lost event
  d.free[addr] = size;
}

void BlockMirror::remove_segment(uint64_t addr, uint64_t size, int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  Device& d = devices_[device];
  d.segments.erase(addr);
  erase_range(d.free, addr, addr + size);
}

void BlockMirror::map(uint64_t addr, uint64_t size, int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  Device& d = devices_[device];
  uint64_t start = addr, end = addr + size;
  auto it = d.mapped.upper_bound(start);
  if (it != d.mapped.begin() && std::prev(it)->first + std::prev(it)->second >= start) --it;
  while (it != d.mapped.end() && it->first <= end) {  // overlapping or adjacent: one range
    start = std::min(start, it->first);
    end = std::max(end, it->first + it->second);
    it = d.mapped.erase(it);
  }
  d.mapped[start] = end - start;
}

void BlockMirror::unmap(uint64_t addr, uint64_t size, int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  erase_range(devices_[device].mapped, addr, addr + size);
}

void BlockMirror::seed_block(uint64_t addr, uint64_t size, int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  Device& d = devices_[device];
  bool carved = false;
  auto it = d.free.upper_bound(addr);
  if (it != d.free.begin()) {
    --it;
    if (it->first <= addr && addr + size <= it->first + it->second) {
      erase_range(d.free, addr, addr + size);
      carved = true;
    }
  }
  // Not carved (an expandable segment's block): held at its size, never returned as free.
  d.blocks[addr] = Block{size, carved, true};
}

uint64_t BlockMirror::allocate(uint64_t addr, uint64_t requested, int device) {
  const uint64_t size = round_block_size(requested);
  std::lock_guard<std::mutex> lock(mutex_);
  Device& d = devices_[device];
  auto held = d.blocks.find(addr);
  if (held != d.blocks.end()) {
    if (held->second.awaiting_alloc) {
      held->second.awaiting_alloc = false;
      d.counts.seeded += 1;
      return held->second.size;
    }
    d.blocks.erase(held);  // its FREE_COMPLETED was lost: the allocator reuses the address
  }
  auto found = d.free.find(addr);
  if (found != d.free.end() && found->second >= size) {
    const uint64_t whole = found->second;
    const uint64_t remaining = whole - size;
    const bool small_pool = size <= kSmallSize;
    const bool split = small_pool ? remaining >= kMinBlockSize : remaining > kSmallSize;
    const uint64_t block = split ? size : whole;
    d.free.erase(found);
    if (split) d.free[addr + size] = remaining;
    d.blocks[addr] = Block{block, true, false};
    d.counts.split_rules += 1;
    return block;
  }
  if (contains(d.mapped, addr)) {
    d.blocks[addr] = Block{size, false, false};
    d.counts.expandable += 1;
    return size;
  }
  erase_range(d.free, addr, addr + size);  // whatever the mirror thought free there is not
  d.blocks[addr] = Block{size, false, false};
  d.counts.fallbacks += 1;
  return size;
}

void BlockMirror::release(uint64_t addr, int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  Device& d = devices_[device];
  auto held = d.blocks.find(addr);
  if (held == d.blocks.end()) return;
  const Block block = held->second;
  d.blocks.erase(held);
  if (!block.tracked) return;
  auto segment = d.segments.upper_bound(addr);
  if (segment == d.segments.begin()) return;
  --segment;
  const uint64_t segment_start = segment->first;
  const uint64_t segment_end = segment->first + segment->second;
  uint64_t start = addr;
  uint64_t end = addr + block.size;
  if (end > segment_end) return;  // not this segment's block: the books lost track
  // Merge with the free neighbours of the same segment, as the allocator's free_block does.
  if (end < segment_end) {
    auto next = d.free.find(end);
    if (next != d.free.end()) {
      end += next->second;
      d.free.erase(next);
    }
  }
  auto prev = d.free.lower_bound(start);
  if (prev != d.free.begin()) {
    --prev;
    if (prev->first >= segment_start && prev->first + prev->second == start) {
      start = prev->first;
      d.free.erase(prev);
    }
  }
  d.free[start] = end - start;
}

MirrorCounts BlockMirror::counts(int device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = devices_.find(device);
  return found == devices_.end() ? MirrorCounts{} : found->second.counts;
}

void BlockMirror::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  devices_.clear();
}

}  // namespace visprof
