// The one host clock visprof uses. CLOCK_MONOTONIC is what Python's time.perf_counter_ns()
// and time.monotonic_ns() read on Linux, so CUPTI timestamps (which visprof routes through this
// clock, see cupti/tracer.cpp) line up with op ranges recorded from Python.
#pragma once

#include <cstdint>
#include <ctime>

namespace visprof {

inline uint64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace visprof
