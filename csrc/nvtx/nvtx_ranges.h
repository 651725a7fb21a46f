// NVTX ranges in the "visprof" domain, which Nsight Systems shows as a row and Nsight
// Compute can filter on: ncu --nvtx --nvtx-include "visprof@attention/".
//
// Messages are registered once (nvtxDomainRegisterStringA) and pushed by handle, so a push
// costs no string handling. Without the CUDA backend, or with VISPROF_DISABLE=1, every call
// is a no-op that still keeps the depth count, so exception-safety tests run anywhere.
#pragma once

#include <cstdint>
#include <string>

namespace visprof {
namespace nvtx {

// Registers `message` in the visprof domain and returns a handle for push_registered().
uint32_t register_message(const std::string& message);
void push_registered(uint32_t handle, uint32_t argb_color, int64_t payload);
void push(const std::string& message, uint32_t argb_color, int64_t payload);
void pop();
// Ranges pushed and not yet popped on this thread by visprof.
int depth();
bool enabled();

// RAII range for C++ callers: popped on every way out of the scope, exceptions included.
class ScopedRange {
 public:
  ScopedRange(const std::string& message, uint32_t argb_color = 0xFF76B900, int64_t payload = 0) {
    push(message, argb_color, payload);
  }
  ~ScopedRange() { pop(); }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
};

}  // namespace nvtx
}  // namespace visprof
