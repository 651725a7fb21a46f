// Error handling shared by every native component.
//
// VISPROF_CHECK_* throw visprof::Error carrying the failing call, file:line and the library's
// own error string. They must never be used inside CUPTI or allocator callbacks: those run on
// CUDA's threads or inside torch's allocator and may not throw (see CallbackErrors below).
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace visprof {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// CUPTI is already subscribed by another tool (torch.profiler/Kineto, Nsight Systems, Nsight
// Compute). Callers catch this to fall back to event timing.
class CuptiBusyError : public Error {
 public:
  using Error::Error;
};

// The feature needs the CUDA backend, which this build does not have.
class NotBuiltError : public Error {
 public:
  using Error::Error;
};

std::string format_failure(const char* call, const char* file, int line, const std::string& why);

// Errors seen where throwing is not allowed (CUPTI callbacks, allocator hooks): counted and the
// last one kept, for Python to read after the fact.
class CallbackErrors {
 public:
  void record(const char* what) noexcept;
  uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
  std::string last() const;
  void reset() noexcept;

 private:
  std::atomic<uint64_t> count_{0};
  std::atomic<const char*> last_{nullptr};
};

CallbackErrors& callback_errors();

}  // namespace visprof

#define VISPROF_THROW(call, why) \
  throw ::visprof::Error(::visprof::format_failure(call, __FILE__, __LINE__, why))

#ifdef VISPROF_WITH_CUDA
#include <cuda_runtime_api.h>
#define VISPROF_CHECK_CUDA(call)                                                        \
  do {                                                                                  \
    cudaError_t visprof_status_ = (call);                                               \
    if (visprof_status_ != cudaSuccess) VISPROF_THROW(#call, cudaGetErrorString(visprof_status_)); \
  } while (0)
#endif
