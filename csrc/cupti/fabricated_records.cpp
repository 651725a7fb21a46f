#include "cupti/fabricated_records.h"

#include <cupti.h>

#include <cstring>
#include <deque>

namespace visprof {
namespace {

template <typename Record>
std::string frame(const Record& record) {
  std::string out(sizeof(uint64_t) + sizeof(Record), '\0');
  const uint64_t size = sizeof(Record);
  std::memcpy(&out[0], &size, sizeof(size));
  std::memcpy(&out[sizeof(size)], &record, sizeof(Record));
  return out;
}

// Kernel records point at their name; fabricated names must outlive the parse.
const char* keep_name(const std::string& name) {
  static std::deque<std::string> names;
  names.push_back(name);
  return names.back().c_str();
}

}  // namespace

std::string fabricate_kernel(const FabricatedKernel& k) {
  CUpti_ActivityKernel10 r;
  std::memset(&r, 0, sizeof(r));
  r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  r.name = keep_name(k.name);
  r.start = k.start;
  r.end = k.end;
  r.deviceId = k.device;
  r.streamId = k.stream;
  r.correlationId = k.correlation;
  r.gridX = k.grid[0];
  r.gridY = k.grid[1];
  r.gridZ = k.grid[2];
  r.blockX = k.block[0];
  r.blockY = k.block[1];
  r.blockZ = k.block[2];
  r.registersPerThread = k.registers;
  r.staticSharedMemory = k.static_shared;
  r.dynamicSharedMemory = k.dynamic_shared;
  return frame(r);
}

template <typename Transfer>
std::string fabricate_transfer(CUpti_ActivityKind kind, uint64_t bytes, uint64_t start, uint64_t end,
                               uint32_t device, uint32_t stream, uint32_t correlation) {
  Transfer r;
  std::memset(&r, 0, sizeof(r));
  r.kind = kind;
  r.bytes = bytes;
  r.start = start;
  r.end = end;
  r.deviceId = device;
  r.streamId = stream;
  r.correlationId = correlation;
  return frame(r);
}

std::string fabricate_memcpy(uint64_t bytes, uint64_t start, uint64_t end, uint32_t device,
                             uint32_t stream, uint32_t correlation) {
  return fabricate_transfer<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY, bytes, start, end, device,
                                                   stream, correlation);
}

std::string fabricate_memset(uint64_t bytes, uint64_t start, uint64_t end, uint32_t device,
                             uint32_t stream, uint32_t correlation) {
  return fabricate_transfer<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET, bytes, start, end, device,
                                                   stream, correlation);
}

std::string fabricate_api(bool driver, uint32_t cbid, uint64_t start, uint64_t end,
                          uint32_t thread, uint32_t correlation) {
  CUpti_ActivityAPI r;
  std::memset(&r, 0, sizeof(r));
  r.kind = driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
  r.cbid = cbid;
  r.start = start;
  r.end = end;
  r.threadId = thread;
  r.correlationId = correlation;
  return frame(r);
}

std::string fabricate_external_correlation(uint64_t external_id, uint32_t correlation) {
  CUpti_ActivityExternalCorrelation r;
  std::memset(&r, 0, sizeof(r));
  r.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  r.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  r.externalId = external_id;
  r.correlationId = correlation;
  return frame(r);
}

}  // namespace visprof
