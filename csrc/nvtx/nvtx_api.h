// push_registered/pop as plain function pointers, handed to visprof's ATen observer module
// (csrc/aten_observer) through a Python capsule, so that the observer pushes module ranges
// into this module's registry and per-thread depth count, not into a second copy of them.
#pragma once

#include <cstdint>

namespace visprof {

struct NvtxApi {
  void (*push_registered)(uint32_t handle, uint32_t argb_color, int64_t payload);
  void (*pop)();
  // The caller keeps the count (nvtx_ranges.h): no per-thread stack, no TLS lookup per op.
  int (*push_unstacked)(uint32_t handle, uint32_t argb_color, int64_t payload);
  void (*pop_unstacked)(int count);
};

// The capsule's name; both modules check it before trusting the pointer.
constexpr const char* kNvtxCapsuleName = "visprof._C.nvtx_api";

}  // namespace visprof
