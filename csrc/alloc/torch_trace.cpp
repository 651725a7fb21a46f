#include "alloc/torch_trace.h"

#include "alloc/alloc_books.h"
#include "alloc/block_mirror.h"

namespace visprof::torch_trace {
namespace {

std::atomic<bool> tracing{false};

}  // namespace

void set_enabled(bool on) { tracing.store(on, std::memory_order_release); }

bool enabled() { return tracing.load(std::memory_order_acquire); }

void on_event(int32_t action, uint64_t addr, uint64_t size, int32_t device) {
  if (!tracing.load(std::memory_order_relaxed)) return;
  const void* ptr = reinterpret_cast<const void*>(addr);
  BlockMirror& mirror = BlockMirror::instance();
  switch (action) {
    case kTraceAlloc:  // `size` is the requested size; the books take the block's, as torch's stats
      AllocBooks::instance().on_alloc(ptr, mirror.allocate(addr, size, device), device, size);
      break;
    case kTraceFreeRequested:  // the bytes stop being a tensor's here, as torch's stats count
      AllocBooks::instance().on_free(ptr, device);
      break;
    case kTraceFreeCompleted:  // the block is free for the allocator to reuse or merge
      mirror.release(addr, device);
      break;
    case kTraceSegmentAlloc:
      mirror.add_segment(addr, size, device);
      AllocBooks::reserved().on_alloc(ptr, size, device);
      break;
    case kTraceSegmentMap:
      mirror.map(addr, size, device);
      AllocBooks::reserved().on_alloc(ptr, size, device);
      break;
    case kTraceSegmentFree:
      mirror.remove_segment(addr, size, device);
      AllocBooks::reserved().on_free(ptr, device);
      break;
    case kTraceSegmentUnmap:
      mirror.unmap(addr, size, device);
      AllocBooks::reserved().on_free(ptr, device);
      break;
    case kTraceOom:
      AllocBooks::instance().on_failed(device);
      break;
    case kTraceSeedBlock:
      mirror.seed_block(addr, size, device);
      break;
    default:  // SNAPSHOT, annotations: nothing changes hands
      break;
  }
}

void clear() {
  AllocBooks::instance().clear();
  AllocBooks::reserved().clear();
  BlockMirror::instance().clear();
}

const TorchTraceApi& api() {
  static const TorchTraceApi entry_points{&tracing, &on_event};
  return entry_points;
}

}  // namespace visprof::torch_trace
