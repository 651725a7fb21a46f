// visprof._alloc_tracker: observes every block allocation and free of PyTorch's own CUDA
// caching allocator, in the process being profiled, without replacing the allocator.
//
// It attaches an AllocatorTraceTracker (c10::cuda::CUDACachingAllocator::
// attachAllocatorTraceTracker). Torch calls trackers from its allocator for every ALLOC,
// FREE_REQUESTED and segment event whether or not memory history is being recorded, with the
// per-device allocator lock held, on the thread that asked for memory. So the callback takes
// no lock of torch's, never touches Python, and forwards the event to visprof._C's books
// (alloc/torch_trace.h) through the entry points of a capsule, where the current op's tag
// is read from the same thread.
//
// Trackers cannot be detached: attach() is done once per process, and between memory passes
// the callback returns after one relaxed atomic load (TorchTraceApi::enabled).
//
// Compiled at run time against the torch in the process (visprof/native/alloc_tracker.py),
// because c10's allocator interface has no stable ABI across torch versions.
#include <c10/cuda/CUDACachingAllocator.h>
#include <pybind11/pybind11.h>

#include <cstring>
#include <stdexcept>

#include "alloc/torch_trace_api.h"

namespace py = pybind11;

namespace visprof {
namespace {

namespace alloc = c10::cuda::CUDACachingAllocator;

TorchTraceApi api{};
bool attached = false;

int32_t to_visprof_action(alloc::TraceEntry::Action action) {
  switch (action) {
    case alloc::TraceEntry::ALLOC:
      return kTraceAlloc;
    case alloc::TraceEntry::FREE_REQUESTED:
      return kTraceFreeRequested;
    case alloc::TraceEntry::FREE_COMPLETED:
      return kTraceFreeCompleted;
    case alloc::TraceEntry::SEGMENT_ALLOC:
      return kTraceSegmentAlloc;
    case alloc::TraceEntry::SEGMENT_FREE:
      return kTraceSegmentFree;
    case alloc::TraceEntry::SEGMENT_MAP:
      return kTraceSegmentMap;
    case alloc::TraceEntry::SEGMENT_UNMAP:
      return kTraceSegmentUnmap;
    case alloc::TraceEntry::OOM:
      return kTraceOom;
    default:
      return kTraceOther;
  }
}

void on_trace_entry(const alloc::TraceEntry& entry) {
  if (!api.enabled->load(std::memory_order_relaxed)) return;
  api.on_event(to_visprof_action(entry.action_), static_cast<uint64_t>(entry.addr_),
               static_cast<uint64_t>(entry.size_), static_cast<int32_t>(entry.device_));
}

// Returns false when this process's allocator takes no trackers (not the native caching
// allocator); raises for a wrong capsule.
bool attach(py::capsule entry_points) {
  if (std::strcmp(entry_points.name(), kTorchTraceCapsuleName) != 0) {
    throw std::invalid_argument("not visprof._C's torch trace capsule");
  }
  api = *static_cast<const TorchTraceApi*>(entry_points.get_pointer());
  if (attached) return true;
  // The native allocator attaches the tracker to the allocators of the devices it has
  // initialised; visprof attaches after CUDA is initialised (the model is on its device).
  alloc::attachAllocatorTraceTracker(&on_trace_entry);
  attached = true;
  return true;
}

}  // namespace
}  // namespace visprof

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "Observes torch's CUDA caching allocator for visprof's memory pass (alloc_tracker.cpp).";
  m.def("attach", &visprof::attach, py::arg("entry_points"),
        "Attaches the trace tracker (once per process) that feeds visprof._C's books.");
  m.def("attached", [] { return visprof::attached; });
}
