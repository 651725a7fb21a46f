// The CUDA caching allocator's trace, handed from visprof's allocator-tracker module to this
// module's books. The tracker (csrc/alloc_tracker) is compiled against the running torch and
// loaded separately, yet it must book into visprof._C's books and read its per-thread tags,
// so it receives these entry points through a Python capsule, as the ATen observer receives
// op_enter/op_exit (capture/op_scope_api.h). Header-only, no torch or pybind11 types.
#pragma once

#include <atomic>
#include <cstdint>

namespace visprof {

// visprof's own numbering of TraceEntry::Action: the tracker translates torch's enum by
// name, so a reordering in torch cannot mislabel events.
enum TorchTraceAction : int32_t {
  kTraceAlloc = 0,          // a block handed to a tensor
  kTraceFreeRequested = 1,  // the tensor let go of it (allocated bytes drop here)
  kTraceFreeCompleted = 2,  // a free deferred by record_stream completed
  kTraceSegmentAlloc = 3,   // cudaMalloc of a new segment (reserved bytes grow)
  kTraceSegmentFree = 4,    // cudaFree of a segment (empty_cache, OOM retry)
  kTraceSegmentMap = 5,     // expandable segments: memory mapped into a segment
  kTraceSegmentUnmap = 6,
  kTraceOom = 7,
  kTraceOther = 8,
  // visprof's own, never sent by the tracker: a block torch.cuda.memory_snapshot() shows
  // allocated, or freed and awaiting its stream events, at its exact block size (seeds the
  // block mirror; an allocated one is then booked by an ALLOC at the same address).
  kTraceSeedBlock = 9,
};

struct TorchTraceApi {
  // Read by the tracker before every call: with no memory pass running, the tracker (which
  // torch cannot detach) returns after one relaxed load.
  const std::atomic<bool>* enabled;
  void (*on_event)(int32_t action, uint64_t addr, uint64_t size, int32_t device);
};

constexpr const char* kTorchTraceCapsuleName = "visprof._C.torch_trace_api";

}  // namespace visprof
