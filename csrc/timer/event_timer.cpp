#include "timer/event_timer.h"

#include <algorithm>
#include <string>

#include "common/check.h"
#include "common/clock.h"

#ifdef VISPROF_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace visprof {
namespace {

#ifdef VISPROF_WITH_CUDA
// Events belong to the device that was current when they were created; recording them on
// another device's stream fails. This switches for the duration of one call.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    VISPROF_CHECK_CUDA(cudaGetDevice(&previous_));
    if (previous_ != device) VISPROF_CHECK_CUDA(cudaSetDevice(device));
    switched_ = previous_ != device;
  }
  ~DeviceGuard() {
    if (switched_) cudaSetDevice(previous_);
  }

 private:
  int previous_ = 0;
  bool switched_ = false;
};
#endif

}  // namespace

EventTimer::EventTimer(int device) : device_(device) {
#ifndef VISPROF_WITH_CUDA
  if (device_ >= 0) throw NotBuiltError("CUDA event timing needs the CUDA backend of visprof._C");
#else
  if (device_ >= 0) {
    int count = 0;
    VISPROF_CHECK_CUDA(cudaGetDeviceCount(&count));
    if (device_ >= count) {
      throw Error("EventTimer: no CUDA device " + std::to_string(device_) + " (" +
                  std::to_string(count) + " visible)");
    }
  }
#endif
}

EventTimer::~EventTimer() {
#ifdef VISPROF_WITH_CUDA
  for (void* e : start_events_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
  for (void* e : stop_events_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
#endif
}

void EventTimer::ensure_capacity(size_t intervals) {
  if (intervals <= stopped_.size()) return;
  size_t grown = stopped_.size() ? stopped_.size() * 2 : 64;
  while (grown < intervals) grown *= 2;
  if (uses_gpu()) {
#ifdef VISPROF_WITH_CUDA
    DeviceGuard guard(device_);
    while (start_events_.size() < grown) {
      cudaEvent_t start = nullptr, stop = nullptr;
      VISPROF_CHECK_CUDA(cudaEventCreate(&start));
      VISPROF_CHECK_CUDA(cudaEventCreate(&stop));
      start_events_.push_back(start);
      stop_events_.push_back(stop);
    }
#endif
  } else {
    host_start_ns_.resize(grown);
    host_stop_ns_.resize(grown);
  }
  stopped_.resize(grown, false);
}

size_t EventTimer::start(uintptr_t stream) {
  ensure_capacity(used_ + 1);
  const size_t interval = used_++;
  stopped_[interval] = false;
  if (!uses_gpu()) {
    host_start_ns_[interval] = monotonic_ns();
    return interval;
  }
#ifdef VISPROF_WITH_CUDA
  DeviceGuard guard(device_);
  VISPROF_CHECK_CUDA(cudaEventRecord(static_cast<cudaEvent_t>(start_events_[interval]),
                                     reinterpret_cast<cudaStream_t>(stream)));
#endif
  return interval;
}

void EventTimer::stop(size_t interval, uintptr_t stream) {
  if (interval >= used_) throw Error("EventTimer.stop: interval " + std::to_string(interval) + " was never started");
  if (stopped_[interval]) throw Error("EventTimer.stop: interval " + std::to_string(interval) + " already stopped");
  stopped_[interval] = true;
  if (!uses_gpu()) {
    host_stop_ns_[interval] = monotonic_ns();
    return;
  }
#ifdef VISPROF_WITH_CUDA
  DeviceGuard guard(device_);
  VISPROF_CHECK_CUDA(cudaEventRecord(static_cast<cudaEvent_t>(stop_events_[interval]),
                                     reinterpret_cast<cudaStream_t>(stream)));
#endif
}

std::vector<int64_t> EventTimer::elapsed_ns(size_t first) {
  first = std::min(first, used_);
  std::vector<int64_t> out(used_ - first, -1);
  for (size_t i = first; i < used_; ++i) {
    if (!stopped_[i]) throw Error("EventTimer: interval " + std::to_string(i) + " was started but not stopped");
  }
  if (!uses_gpu()) {
    for (size_t i = first; i < used_; ++i) out[i - first] = static_cast<int64_t>(host_stop_ns_[i] - host_start_ns_[i]);
    return out;
  }
#ifdef VISPROF_WITH_CUDA
  DeviceGuard guard(device_);
  for (size_t i = first; i < used_; ++i) {
    auto stop = static_cast<cudaEvent_t>(stop_events_[i]);
    VISPROF_CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0.f;
    VISPROF_CHECK_CUDA(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_events_[i]), stop));
    out[i - first] = static_cast<int64_t>(static_cast<double>(ms) * 1e6 + 0.5);
  }
#endif
  return out;
}

void EventTimer::reset() { used_ = 0; }

}  // namespace visprof
