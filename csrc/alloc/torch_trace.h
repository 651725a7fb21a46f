// Books for the CUDA caching allocator's trace (see torch_trace_api.h): block allocations and
// frees go to the allocated books (AllocBooks::instance(), bytes held by tensors, at the
// block sizes the allocator hands out: alloc/block_mirror.h), segment
// allocations and frees to the reserved books (AllocBooks::reserved(), bytes the allocator
// holds from the driver). Both are tagged with the op running on the calling thread, which is
// the thread that asked the allocator for memory.
#pragma once

#include <cstdint>

#include "alloc/torch_trace_api.h"

namespace visprof::torch_trace {

void set_enabled(bool on);
bool enabled();
// One trace event; a no-op while disabled. Safe to call with the allocator's lock held: it
// takes only the books' own mutex and never calls back into torch or Python.
void on_event(int32_t action, uint64_t addr, uint64_t size, int32_t device);
// Forgets every booked allocation and segment, and the block mirror (before a memory pass
// seeds the books).
void clear();
const TorchTraceApi& api();

}  // namespace visprof::torch_trace
