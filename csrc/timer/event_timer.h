// Interval timer on any stream handle (a torch stream's .cuda_stream or a CuPy stream's .ptr).
//
// start()/stop() only record a pair of pre-created CUDA events, so timing thousands of
// intervals costs one cudaEventRecord each; all elapsed times are read in one call at the
// end. Without the CUDA backend (or with device < 0) it times with the host clock instead,
// behind the same API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace visprof {

class EventTimer {
 public:
  // device < 0 selects the host-clock fallback.
  explicit EventTimer(int device);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  // Returns the interval's index; stream 0 is the legacy default stream.
  size_t start(uintptr_t stream);
  void stop(size_t interval, uintptr_t stream);
  // Waits for the intervals from `first` on to stop, then returns them in nanoseconds.
  std::vector<int64_t> elapsed_ns(size_t first = 0);
  void reset();
  size_t size() const { return used_; }
  bool uses_gpu() const { return device_ >= 0; }
  int device() const { return device_; }

 private:
  void ensure_capacity(size_t intervals);

  int device_;
  size_t used_ = 0;
  std::vector<void*> start_events_;  // cudaEvent_t, created on device_
  std::vector<void*> stop_events_;
  std::vector<uint64_t> host_start_ns_;  // host-clock fallback
  std::vector<uint64_t> host_stop_ns_;
  std::vector<bool> stopped_;
};

}  // namespace visprof
