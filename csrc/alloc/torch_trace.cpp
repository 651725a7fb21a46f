#include "alloc/torch_trace.h"

#include "alloc/alloc_books.h"

namespace visprof::torch_trace {
namespace {

std::atomic<bool> tracing{false};

}  // namespace

void set_enabled(bool on) { tracing.store(on, std::memory_order_release); }

bool enabled() { return tracing.load(std::memory_order_acquire); }

void on_event(int32_t action, uint64_t addr, uint64_t size, int32_t device) {
  if (!tracing.load(std::memory_order_relaxed)) return;
  const void* ptr = reinterpret_cast<const void*>(addr);
  switch (action) {
    case kTraceAlloc:
      AllocBooks::instance().on_alloc(ptr, size, device);
      break;
    case kTraceFreeRequested:  // the bytes stop being a tensor's here, as torch's stats count
      AllocBooks::instance().on_free(ptr, device);
      break;
    case kTraceSegmentAlloc:
    case kTraceSegmentMap:
      AllocBooks::reserved().on_alloc(ptr, size, device);
      break;
    case kTraceSegmentFree:
    case kTraceSegmentUnmap:
      AllocBooks::reserved().on_free(ptr, device);
      break;
    case kTraceOom:
      AllocBooks::instance().on_failed(device);
      break;
    default:  // FREE_COMPLETED, SNAPSHOT, annotations: nothing changes hands
      break;
  }
}

void clear() {
  AllocBooks::instance().clear();
  AllocBooks::reserved().clear();
}

const TorchTraceApi& api() {
  static const TorchTraceApi entry_points{&tracing, &on_event};
  return entry_points;
}

}  // namespace visprof::torch_trace
