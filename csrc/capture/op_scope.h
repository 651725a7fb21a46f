// One call in, one call out, per captured op: pushes the CUPTI external correlation id (when
// the tracer runs), an NVTX range and an allocation tag together. Per-op overhead is what
// separates a usable attributed pass from a slow one, so the three pushes share a single
// Python -> C++ crossing instead of three.
#pragma once

#include <cstdint>

namespace visprof {

// nvtx_handle < 0: no NVTX range; tag < 0: no allocation tag; external_id 0: no id.
void op_enter(uint64_t external_id, int64_t nvtx_handle, uint32_t argb_color, int64_t tag);
// Pops what the matching op_enter pushed on this thread; a no-op without one.
void op_exit();
int op_depth();

}  // namespace visprof
