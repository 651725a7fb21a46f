#include "cupti/tracer.h"

#include <cupti.h>

#include <string>

#include "common/check.h"
#include "common/clock.h"
#include "common/switches.h"
#include "capture/current_op.h"
#include "cupti/api_selection.h"
#include "cupti/record_parser.h"

#define VISPROF_CHECK_CUPTI(call)                                         \
  do {                                                                    \
    CUptiResult visprof_status_ = (call);                                 \
    if (visprof_status_ != CUPTI_SUCCESS) {                               \
      const char* visprof_why_ = nullptr;                                 \
      cuptiGetResultString(visprof_status_, &visprof_why_);               \
      VISPROF_THROW(#call, visprof_why_ ? visprof_why_ : "unknown CUPTI error"); \
    }                                                                     \
  } while (0)

namespace visprof {
namespace {

// Kineto (torch.profiler) registers its own timestamp callback, which returns TSC ticks, and
// leaves it registered after the profiler stops: every later CUPTI timestamp in the process
// is then not in nanoseconds (docs/architecture.md, section 4, "the timestamp trap"). Re-registering ours on every
// start keeps visprof's records in CLOCK_MONOTONIC nanoseconds whatever ran before.
uint64_t CUPTIAPI monotonic_timestamp() { return monotonic_ns(); }

// The subscription claims CUPTI (a second subscriber is refused, which is how a running
// torch.profiler / Nsight session is detected) and, with kTraceCallbackCorrelation, receives
// the launch callbacks that link kernels to ops.
void CUPTIAPI api_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  Tracer::on_api(userdata, static_cast<int>(domain), cbid, data);
}

const CUpti_ActivityKind kKindOf[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,            CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,            CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
};

}  // namespace

Tracer& Tracer::instance() {
  static Tracer* tracer = new Tracer();  // never destroyed: CUPTI may call back at exit
  return *tracer;
}

void Tracer::enable_kinds(uint32_t kinds, bool enable) {
  // Work APIs only: RUNTIME/DRIVER on, then every other API switched off one by one. The
  // per-API switches act only while their kind is on (cupti/api_selection.h).
  const bool work_only = (kinds & kTraceWorkApis) && !(kinds & (kTraceRuntime | kTraceDriver));
  if (work_only) kinds |= kTraceRuntime | kTraceDriver;
  for (size_t bit = 0; bit < sizeof(kKindOf) / sizeof(kKindOf[0]); ++bit) {
    if (!(kinds & (1u << bit))) continue;
    if (enable) {
      VISPROF_CHECK_CUPTI(cuptiActivityEnable(kKindOf[bit]));
    } else {
      cuptiActivityDisable(kKindOf[bit]);  // best effort on the way out
    }
  }
  if (!work_only) return;
  for (const ApiId& api : known_apis()) {
    // On the way out every API is switched back on, so a later full trace records them all.
    const uint8_t on = (!enable || api.submits_work) ? 1 : 0;
    CUptiResult status = api.domain == CUPTI_CB_DOMAIN_RUNTIME_API ? cuptiActivityEnableRuntimeApi(api.cbid, on)
                                                                   : cuptiActivityEnableDriverApi(api.cbid, on);
    if (enable && status != CUPTI_SUCCESS) {
      const char* why = nullptr;
      cuptiGetResultString(status, &why);
      VISPROF_THROW(("selecting API records for " + api.name).c_str(), why ? why : "unknown CUPTI error");
    }
  }
}

void Tracer::start(uint32_t kinds, bool share_idle_subscriber) {
  if (instrumentation_disabled()) return;
  if (active()) throw Error("visprof tracer is already running; stop it before starting again");

  CUpti_SubscriberHandle subscriber = nullptr;
  CUptiResult status = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)api_callback, this);
  shared_ = false;
  if (status == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && share_idle_subscriber) {
    shared_ = true;
    subscriber = nullptr;
  } else if (status == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    throw CuptiBusyError(
        "CUPTI is already in use by another profiler in this process (torch.profiler, Nsight "
        "Systems or Nsight Compute); only one tool can trace kernels at a time");
  }
  if (status != CUPTI_SUCCESS && !shared_) {
    const char* why = nullptr;
    cuptiGetResultString(status, &why);
    throw Error(std::string("cannot start CUPTI: ") + (why ? why : "unknown error"));
  }
  subscriber_ = subscriber;
  if ((kinds & kTraceCallbackCorrelation) && shared_) {
    // No subscription of our own, so no callbacks: link through external ids and full API
    // records instead (the combination validated on all reference models).
    kinds = (kinds & ~kTraceCallbackCorrelation) | kTraceRuntime | kTraceDriver | kTraceExternalCorrelation;
  }
  try {
    VISPROF_CHECK_CUPTI(cuptiActivityRegisterTimestampCallback(monotonic_timestamp));
    VISPROF_CHECK_CUPTI(cuptiActivityRegisterCallbacks(buffer_requested,
                                                       (CUpti_BuffersCallbackCompleteFunc)buffer_completed));
    enable_kinds(kinds, true);
    if (kinds & kTraceCallbackCorrelation) enable_launch_callbacks(true);
  } catch (...) {
    enable_kinds(kinds, false);
    if (subscriber_) cuptiUnsubscribe(static_cast<CUpti_SubscriberHandle>(subscriber_));
    subscriber_ = nullptr;
    throw;
  }
  kinds_ = kinds;
  dropped_.store(0);
  callback_correlation_.store((kinds & kTraceCallbackCorrelation) != 0, std::memory_order_release);
  active_.store(true, std::memory_order_release);
}

void Tracer::stop() {
  if (!active()) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  enable_kinds(kinds_, false);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  callback_correlation_.store(false, std::memory_order_release);
  if (subscriber_) cuptiUnsubscribe(static_cast<CUpti_SubscriberHandle>(subscriber_));  // ends callbacks
  subscriber_ = nullptr;
  active_.store(false, std::memory_order_release);
}

TraceRecords Tracer::drain() {
  if (active()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // no lock held here
  std::vector<ActivityBuffer> buffers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    buffers.swap(completed_);
  }
  std::vector<std::pair<uint32_t, uint64_t>> correlations;
  {
    std::lock_guard<std::mutex> lock(correlation_mutex_);
    correlations.swap(correlations_);
  }
  RecordParser parser;
  for (const auto& [correlation, op] : correlations) parser.add_correlation(correlation, op);
  for (const auto& buffer : buffers) {
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer.data(), buffer.valid(), &record) == CUPTI_SUCCESS) {
      parser.consume(record);
    }
  }
  return parser.finish(dropped_.exchange(0));
}

TraceRecords Tracer::parse_buffer(const uint8_t* data, size_t valid_bytes, uint64_t dropped) {
  return parse_buffer(data, valid_bytes, dropped, {});
}

TraceRecords Tracer::parse_buffer(const uint8_t* data, size_t valid_bytes, uint64_t dropped,
                                  const std::vector<std::pair<uint32_t, uint64_t>>& correlations) {
  RecordParser parser;
  for (const auto& [correlation, op] : correlations) parser.add_correlation(correlation, op);
  size_t offset = 0;
  // Fabricated buffers are a sequence of records, each prefixed by its byte size, because
  // cuptiActivityGetNextRecord's record sizes are private to CUPTI.
  while (offset + sizeof(uint64_t) <= valid_bytes) {
    uint64_t size = *reinterpret_cast<const uint64_t*>(data + offset);
    offset += sizeof(uint64_t);
    if (size == 0 || offset + size > valid_bytes) break;
    parser.consume(reinterpret_cast<const CUpti_Activity*>(data + offset));
    offset += size;
  }
  return parser.finish(dropped);
}

TimebaseSample Tracer::timebase_sample() const {
  TimebaseSample sample{};
  cuptiGetTimestamp(&sample.cupti_ns);
  sample.monotonic_ns = monotonic_ns();
  return sample;
}

void Tracer::enable_launch_callbacks(bool enable) {
  auto subscriber = static_cast<CUpti_SubscriberHandle>(subscriber_);
  for (const ApiId& api : work_submitting_apis()) {
    CUptiResult status = cuptiEnableCallback(enable ? 1 : 0, subscriber, api.domain, api.cbid);
    if (enable && status != CUPTI_SUCCESS) {
      const char* why = nullptr;
      cuptiGetResultString(status, &why);
      VISPROF_THROW(("enabling the launch callback for " + api.name).c_str(), why ? why : "unknown CUPTI error");
    }
  }
}

void Tracer::on_api(void* userdata, int domain, uint32_t, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (info->callbackSite != CUPTI_API_ENTER) return;
  const uint64_t op = current_op_id();
  if (op == 0) return;
  auto* tracer = static_cast<Tracer*>(userdata);
  try {  // a CUPTI callback must never throw
    std::lock_guard<std::mutex> lock(tracer->correlation_mutex_);
    tracer->correlations_.emplace_back(info->correlationId, op);
  } catch (...) {
    callback_errors().record("could not record a launch correlation");
  }
}

void Tracer::push_external_id(uint64_t id) {
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
}

void Tracer::pop_external_id() {
  uint64_t last = 0;
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

void Tracer::buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  ActivityBuffer fresh = ActivityBuffer::allocate();
  *size = fresh.data() ? fresh.size() : 0;
  *buffer = fresh.release();
  *max_records = 0;  // as many as fit
  if (*buffer == nullptr) callback_errors().record("out of host memory for a CUPTI buffer");
}

void Tracer::buffer_completed(void* context, uint32_t stream, uint8_t* buffer, size_t size,
                              size_t valid) {
  ActivityBuffer done = ActivityBuffer::adopt(buffer, size, valid);
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(static_cast<CUcontext>(context), stream, &dropped) ==
          CUPTI_SUCCESS &&
      dropped > 0) {
    instance().dropped_.fetch_add(dropped);
  }
  if (valid == 0) return;
  Tracer& tracer = instance();
  try {
    std::lock_guard<std::mutex> lock(tracer.mutex_);
    tracer.completed_.push_back(std::move(done));
  } catch (...) {  // a CUPTI callback must never throw
    callback_errors().record("could not queue a completed CUPTI buffer");
  }
}

}  // namespace visprof
