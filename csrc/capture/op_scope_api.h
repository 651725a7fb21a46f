// op_enter/op_exit as plain function pointers, handed to visprof's other native module (the
// ATen observer, csrc/aten_observer) through a Python capsule. That module is compiled
// against the running torch and loaded separately, yet it must push ids into this module's
// tracer and thread-locals, not into a second copy of them.
#pragma once

#include <cstdint>

namespace visprof {

struct OpScopeApi {
  void (*enter)(uint64_t external_id, int64_t nvtx_handle, uint32_t argb_color, int64_t tag);
  void (*exit)();
};

// The capsule's name; both modules check it before trusting the pointer.
constexpr const char* kOpScopeCapsuleName = "visprof._C.op_scope_api";

}  // namespace visprof
