#include "alloc/alloc_books.h"

#include <algorithm>

namespace visprof {
namespace {

thread_local std::vector<uint32_t> tag_stack;

void grow(std::vector<int64_t>& v, size_t size) {
  if (v.size() < size) v.resize(size, 0);
}

}  // namespace

AllocBooks& AllocBooks::instance() {
  static AllocBooks* books = new AllocBooks();  // outlives every allocation, even at exit
  return *books;
}

AllocBooks& AllocBooks::reserved() {
  static AllocBooks* books = new AllocBooks();
  return *books;
}

void AllocBooks::push_tag(uint32_t tag) { tag_stack.push_back(tag); }

void AllocBooks::pop_tag() {
  if (!tag_stack.empty()) tag_stack.pop_back();
}

uint32_t AllocBooks::current_tag() { return tag_stack.empty() ? 0 : tag_stack.back(); }

DeviceBooks& AllocBooks::books_for(int device) { return books_[device]; }

void AllocBooks::on_alloc(const void* ptr, size_t size, int device, size_t requested) {
  const uint32_t tag = current_tag();
  const auto bytes = static_cast<int64_t>(size);
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_[ptr] = Allocation{size, requested, tag, device};
  DeviceBooks& b = books_for(device);
  grow(b.tag_live, tag + 1);
  grow(b.tag_peak, tag + 1);
  b.allocs += 1;
  b.live += bytes;
  b.requested_live += static_cast<int64_t>(requested);
  b.requested_peak = std::max(b.requested_peak, b.requested_live);
  b.tag_live[tag] += bytes;
  b.tag_peak[tag] = std::max(b.tag_peak[tag], b.tag_live[tag]);
  if (b.live > b.peak) {
    b.peak = b.live;
    b.live_at_peak = b.tag_live;  // a handful of tags: cheap enough on every new peak
  }
}

size_t AllocBooks::on_free(const void* ptr, int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = allocations_.find(ptr);
  if (found == allocations_.end()) return 0;
  const Allocation a = found->second;
  allocations_.erase(found);
  DeviceBooks& b = books_for(a.device >= 0 ? a.device : device);
  const auto bytes = static_cast<int64_t>(a.size);
  b.frees += 1;
  b.live -= bytes;
  b.requested_live -= static_cast<int64_t>(a.requested);
  b.tag_live[a.tag] -= bytes;
  return a.size;
}

void AllocBooks::on_failed(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  books_for(device).failed += 1;
}

void AllocBooks::reset_peaks() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& entry : books_) {
    DeviceBooks& b = entry.second;
    b.peak = b.live;
    b.requested_peak = b.requested_live;
    b.tag_peak = b.tag_live;
    b.live_at_peak = b.tag_live;
    b.allocs = 0;
    b.frees = 0;
    b.failed = 0;
  }
}

void AllocBooks::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_.clear();
  books_.clear();
}

DeviceBooks AllocBooks::snapshot(int device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = books_.find(device);
  return found == books_.end() ? DeviceBooks{} : found->second;
}

std::vector<int> AllocBooks::devices() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int> out;
  for (const auto& entry : books_) out.push_back(entry.first);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace visprof
