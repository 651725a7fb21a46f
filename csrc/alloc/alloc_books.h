// Bookkeeping behind the allocation hooks: live and peak bytes per device, per tag, and the
// per-tag breakdown of live bytes at the moment of each device's peak.
//
// A tag is a small integer that Python pushes while an op runs (visprof uses one tag per
// operator category). Tags live on a per-thread stack, because an allocation belongs to the
// op running on the thread that asked for it. Tag 0 means "untagged".
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace visprof {

struct DeviceBooks {
  int64_t live = 0;
  int64_t peak = 0;
  // The sizes tensors asked for, before the allocator's rounding (the caching allocator's
  // trace books its block sizes in `live` and `peak`; the hooks book requested sizes in both).
  int64_t requested_live = 0;
  int64_t requested_peak = 0;
  uint64_t allocs = 0;
  uint64_t frees = 0;
  uint64_t failed = 0;        // backing allocation returned nothing
  std::vector<int64_t> tag_live;
  std::vector<int64_t> tag_peak;      // each tag's own transient peak
  std::vector<int64_t> live_at_peak;  // tag_live copied when `peak` was last raised
};

class AllocBooks {
 public:
  // Bytes held by tensors: the pluggable-allocator hooks and the caching allocator's trace.
  static AllocBooks& instance();
  // Bytes the CUDA caching allocator reserved from the driver (its segments).
  static AllocBooks& reserved();

  // `size` is booked; `requested` is what the tensor asked for (the hooks see only that).
  void on_alloc(const void* ptr, size_t size, int device, size_t requested);
  void on_alloc(const void* ptr, size_t size, int device) { on_alloc(ptr, size, device, size); }
  // Returns the size booked for ptr (0 if unknown, e.g. allocated before the hooks).
  size_t on_free(const void* ptr, int device);
  void on_failed(int device);

  // Peaks restart from the current live bytes; live allocations stay booked.
  void reset_peaks();
  // Forgets every allocation and every device's figures.
  void clear();
  DeviceBooks snapshot(int device) const;
  std::vector<int> devices() const;

  static void push_tag(uint32_t tag);
  static void pop_tag();
  static uint32_t current_tag();

 private:
  struct Allocation {
    size_t size;
    size_t requested;
    uint32_t tag;
    int device;
  };
  DeviceBooks& books_for(int device);  // mutex_ held

  mutable std::mutex mutex_;
  std::unordered_map<const void*, Allocation> allocations_;
  std::unordered_map<int, DeviceBooks> books_;
};

}  // namespace visprof
