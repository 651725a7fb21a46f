#include "nvtx/nvtx_ranges.h"

#include <mutex>
#include <vector>

#include "common/switches.h"

#ifdef VISPROF_WITH_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace visprof {
namespace nvtx {
namespace {

thread_local int range_depth = 0;

#ifdef VISPROF_WITH_NVTX
nvtxDomainHandle_t domain() {
  static nvtxDomainHandle_t handle = nvtxDomainCreateA("visprof");
  return handle;
}

std::mutex registry_mutex;
std::vector<nvtxStringHandle_t> registered;  // guarded by registry_mutex when growing

nvtxEventAttributes_t attributes(uint32_t argb_color, int64_t payload) {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = argb_color;
  a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
  a.payload.llValue = payload;
  return a;
}
#endif

}  // namespace

bool enabled() {
#ifdef VISPROF_WITH_NVTX
  return !instrumentation_disabled();
#else
  return false;
#endif
}

uint32_t register_message(const std::string& message) {
#ifdef VISPROF_WITH_NVTX
  std::lock_guard<std::mutex> lock(registry_mutex);
  registered.push_back(nvtxDomainRegisterStringA(domain(), message.c_str()));
  return static_cast<uint32_t>(registered.size() - 1);
#else
  (void)message;
  return 0;
#endif
}

void push_registered(uint32_t handle, uint32_t argb_color, int64_t payload) {
  ++range_depth;
#ifdef VISPROF_WITH_NVTX
  if (instrumentation_disabled()) return;
  nvtxEventAttributes_t a = attributes(argb_color, payload);
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    a.message.registered = handle < registered.size() ? registered[handle] : nullptr;
  }
  nvtxDomainRangePushEx(domain(), &a);
#else
  (void)handle, (void)argb_color, (void)payload;
#endif
}

void push(const std::string& message, uint32_t argb_color, int64_t payload) {
  ++range_depth;
#ifdef VISPROF_WITH_NVTX
  if (instrumentation_disabled()) return;
  nvtxEventAttributes_t a = attributes(argb_color, payload);
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message.c_str();
  nvtxDomainRangePushEx(domain(), &a);
#else
  (void)message, (void)argb_color, (void)payload;
#endif
}

void pop() {
  if (range_depth == 0) return;  // an unmatched pop would close someone else's range
  --range_depth;
#ifdef VISPROF_WITH_NVTX
  if (instrumentation_disabled()) return;
  nvtxDomainRangePop(domain());
#endif
}

int depth() { return range_depth; }

}  // namespace nvtx
}  // namespace visprof
