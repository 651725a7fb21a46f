// Process-wide switches read once from the environment.
#pragma once

namespace visprof {

// VISPROF_DISABLE=1 turns every NVTX range and tracing call into a no-op, so instrumented
// code can ship and be switched off without a rebuild.
bool instrumentation_disabled() noexcept;

}  // namespace visprof
