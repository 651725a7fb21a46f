// The CUPTI activity tracer: one per process (CUPTI itself is process-wide).
//
// Lock order: mutex_ guards only the queue of completed buffers. It is never held while
// calling into CUPTI, because cuptiActivityFlushAll calls buffer_completed() on this thread,
// which takes mutex_ (docs/architecture.md, section 5: lock order).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "cupti/activity_buffer.h"
#include "cupti/records.h"

namespace visprof {

// Which activity kinds to enable; RUNTIME/DRIVER are needed for EXTERNAL_CORRELATION records.
enum TraceKinds : uint32_t {
  kTraceKernels = 1u << 0,
  kTraceMemcpy = 1u << 1,
  kTraceMemset = 1u << 2,
  kTraceRuntime = 1u << 3,
  kTraceDriver = 1u << 4,
  kTraceExternalCorrelation = 1u << 5,
  kTraceAll = 0x3f,
  // Instead of RUNTIME/DRIVER: record only the API calls that submit GPU work
  // (cupti/api_selection.h). Enough for external correlation, at a fraction of the cost.
  kTraceWorkApis = 1u << 6,
  // Link kernels to ops through a CUPTI callback on the work-submitting APIs, which reads
  // the op id that op_enter leaves in a thread-local (capture/current_op.h), instead of
  // CUPTI's external-correlation push/pop per op and API activity records. Needs visprof's
  // own subscription; with a shared one it falls back to RUNTIME/DRIVER + external ids.
  kTraceCallbackCorrelation = 1u << 7,
};

struct TimebaseSample {
  uint64_t cupti_ns;     // cuptiGetTimestamp(): CUPTI's notion of "now"
  uint64_t monotonic_ns;  // visprof's clock at the same moment
};

class Tracer {
 public:
  static Tracer& instance();

  // Subscribes to CUPTI, installs visprof's timestamp callback and enables `kinds`.
  // If another subscriber exists: throws CuptiBusyError, unless `share_idle_subscriber`,
  // which the caller sets when it knows that subscriber is idle. Kineto subscribes on the
  // first torch.profiler session and never unsubscribes, so after any torch.profiler run the
  // subscription is taken even though nothing is tracing.
  void start(uint32_t kinds, bool share_idle_subscriber);
  // True when the last start() found CUPTI subscribed by an idle tool and shared it.
  bool shared_subscription() const { return shared_; }
  // Flushes, disables all kinds and releases the subscription. Records stay for drain().
  void stop();
  bool active() const { return active_.load(std::memory_order_acquire); }
  // Forces CUPTI to hand over every buffer, then parses them. Safe while active.
  TraceRecords drain();
  TimebaseSample timebase_sample() const;

  // The test seam: parse fabricated records exactly as drain() parses CUPTI's.
  static TraceRecords parse_buffer(const uint8_t* data, size_t valid_bytes, uint64_t dropped);

  static void push_external_id(uint64_t id);
  static void pop_external_id();

  // CUPTI's callback for the subscribed APIs (userdata: the Tracer). Never throws.
  static void on_api(void* userdata, int domain, uint32_t cbid, const void* data);
  // True while ops are linked by the launch callback (kTraceCallbackCorrelation).
  bool correlates_by_callback() const { return callback_correlation_.load(std::memory_order_acquire); }
  // Test seam: parse fabricated records plus (correlation id, op id) pairs as the launch
  // callback would have collected them.
  static TraceRecords parse_buffer(const uint8_t* data, size_t valid_bytes, uint64_t dropped,
                                   const std::vector<std::pair<uint32_t, uint64_t>>& correlations);

 private:
  Tracer() = default;
  static void buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void buffer_completed(void* context, uint32_t stream, uint8_t* buffer, size_t size,
                               size_t valid);
  void enable_kinds(uint32_t kinds, bool enable);
  void enable_launch_callbacks(bool enable);

  std::atomic<bool> active_{false};
  uint32_t kinds_ = 0;
  void* subscriber_ = nullptr;  // CUpti_SubscriberHandle
  bool shared_ = false;
  std::mutex mutex_;
  std::vector<ActivityBuffer> completed_;  // guarded by mutex_
  std::atomic<uint64_t> dropped_{0};
  std::atomic<bool> callback_correlation_{false};
  std::mutex correlation_mutex_;  // guards correlations_; taken inside CUPTI callbacks only
  std::vector<std::pair<uint32_t, uint64_t>> correlations_;
};

}  // namespace visprof
