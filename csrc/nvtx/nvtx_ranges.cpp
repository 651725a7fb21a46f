#include "nvtx/nvtx_ranges.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "common/check.h"
#include "common/switches.h"

#ifdef VISPROF_WITH_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace visprof {
namespace nvtx {
namespace {

// Registered messages, readable without a lock: entries live in chunks that never move, and
// a handle is published (registered_count) only after its entry is written. Pushing from
// the ATen observer on every op must not take a mutex.
constexpr uint32_t kChunkBits = 8;
constexpr uint32_t kChunkSize = 1u << kChunkBits;
constexpr uint32_t kMaxChunks = 1024;  // 262144 messages; a model has a few hundred

struct Entry {
  bool pair = false;  // an op: a category range around the op's own range
  uint32_t kind = kUser;
  std::string outer_text, text;
#ifdef VISPROF_WITH_NVTX
  nvtxStringHandle_t outer = nullptr, inner = nullptr;
#endif
};

std::mutex registry_mutex;  // serializes registration only
std::atomic<Entry*> chunks[kMaxChunks];
std::atomic<uint32_t> registered_count{0};

// Per thread: how many NVTX ranges each visprof push pushed (1, or 2 for an op).
thread_local std::vector<uint8_t> widths;

std::atomic<bool> log_on{false};
std::mutex log_mutex;
std::vector<LogEntry> log_entries;  // guarded by log_mutex

void log_push(const std::string& message, uint32_t kind, int64_t payload, uint32_t color) {
  std::lock_guard<std::mutex> lock(log_mutex);
  log_entries.push_back({true, message, kind, payload, color});
}

void log_pops(int count) {
  std::lock_guard<std::mutex> lock(log_mutex);
  for (int i = 0; i < count; ++i) log_entries.push_back({false, std::string(), kUser, 0, 0});
}

const Entry* find(uint32_t handle) {
  if (handle >= registered_count.load(std::memory_order_acquire)) return nullptr;
  return &chunks[handle >> kChunkBits].load(std::memory_order_acquire)[handle & (kChunkSize - 1)];
}

#ifdef VISPROF_WITH_NVTX
nvtxDomainHandle_t domain() {
  static nvtxDomainHandle_t handle = [] {
    nvtxDomainHandle_t d = nvtxDomainCreateA("visprof");
    // Named categories: Nsight shows the names, and importers read the ids.
    nvtxDomainNameCategoryA(d, kModel, "model");
    nvtxDomainNameCategoryA(d, kModule, "module");
    nvtxDomainNameCategoryA(d, kCategory, "category");
    nvtxDomainNameCategoryA(d, kOp, "op");
    return d;
  }();
  return handle;
}

nvtxEventAttributes_t attributes(uint32_t argb_color, int64_t payload, uint32_t kind) {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = kind;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = argb_color;
  a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
  a.payload.llValue = payload;
  return a;
}

// VISPROF_NVTX_ASCII=1 pushes registered ranges with their text instead of the handle, for
// tools that do not resolve registered strings (read once).
bool ascii_messages() {
  static const bool ascii = [] {
    const char* value = std::getenv("VISPROF_NVTX_ASCII");
    return value != nullptr && value[0] != '\0' && value[0] != '0';
  }();
  return ascii;
}

void push_handle(nvtxStringHandle_t message, const std::string& text, uint32_t argb_color, int64_t payload,
                 uint32_t kind) {
  nvtxEventAttributes_t a = attributes(argb_color, payload, kind);
  if (ascii_messages() || message == nullptr) {
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = text.c_str();  // lives in the registry as long as the process
  } else {
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = message;
  }
  nvtxDomainRangePushEx(domain(), &a);
}
#endif

uint32_t add(Entry entry) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  const uint32_t handle = registered_count.load(std::memory_order_relaxed);
  if (handle >= kChunkSize * kMaxChunks) throw Error("too many registered NVTX messages");
  Entry* chunk = chunks[handle >> kChunkBits].load(std::memory_order_relaxed);
  if (chunk == nullptr) {
    chunk = new Entry[kChunkSize];  // never freed: handles stay valid for the process
    chunks[handle >> kChunkBits].store(chunk, std::memory_order_release);
  }
#ifdef VISPROF_WITH_NVTX
  if (entry.pair) entry.outer = nvtxDomainRegisterStringA(domain(), entry.outer_text.c_str());
  entry.inner = nvtxDomainRegisterStringA(domain(), entry.text.c_str());
#endif
  chunk[handle & (kChunkSize - 1)] = std::move(entry);
  registered_count.store(handle + 1, std::memory_order_release);
  return handle;
}

}  // namespace

bool enabled() {
#ifdef VISPROF_WITH_NVTX
  return !instrumentation_disabled();
#else
  return false;
#endif
}

uint32_t register_message(const std::string& message, uint32_t kind) {
  Entry entry;
  entry.kind = kind;
  entry.text = message;
  return add(std::move(entry));
}

uint32_t register_op(const std::string& category, const std::string& message) {
  Entry entry;
  entry.pair = true;
  entry.kind = kOp;
  entry.outer_text = category;
  entry.text = message;
  return add(std::move(entry));
}

int push_unstacked(uint32_t handle, uint32_t argb_color, int64_t payload) {
  const Entry* entry = find(handle);
  const bool pair = entry != nullptr && entry->pair;
  if (log_on.load(std::memory_order_relaxed)) {
    if (pair) log_push(entry->outer_text, kCategory, payload, argb_color);
    log_push(entry ? entry->text : std::string(), entry ? entry->kind : kUser, payload, argb_color);
  }
#ifdef VISPROF_WITH_NVTX
  if (!instrumentation_disabled()) {
    static const std::string unknown;
    if (pair) push_handle(entry->outer, entry->outer_text, argb_color, payload, kCategory);
    push_handle(entry ? entry->inner : nullptr, entry ? entry->text : unknown, argb_color, payload,
                entry ? entry->kind : kUser);
  }
#else
  (void)argb_color, (void)payload;
#endif
  return pair ? 2 : 1;
}

void pop_unstacked(int count) {
  if (log_on.load(std::memory_order_relaxed)) log_pops(count);
#ifdef VISPROF_WITH_NVTX
  if (instrumentation_disabled()) return;
  for (int i = 0; i < count; ++i) nvtxDomainRangePop(domain());
#endif
}

void push_registered(uint32_t handle, uint32_t argb_color, int64_t payload) {
  widths.push_back(static_cast<uint8_t>(push_unstacked(handle, argb_color, payload)));
}

void push(const std::string& message, uint32_t argb_color, int64_t payload, uint32_t kind) {
  widths.push_back(1);
  if (log_on.load(std::memory_order_relaxed)) log_push(message, kind, payload, argb_color);
#ifdef VISPROF_WITH_NVTX
  if (instrumentation_disabled()) return;
  nvtxEventAttributes_t a = attributes(argb_color, payload, kind);
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message.c_str();
  nvtxDomainRangePushEx(domain(), &a);
#endif
}

void pop() {
  if (widths.empty()) return;  // an unmatched pop would close someone else's range
  const int width = widths.back();
  widths.pop_back();
  pop_unstacked(width);
}

void mark(const std::string& message, uint32_t argb_color, int64_t payload) {
#ifdef VISPROF_WITH_NVTX
  if (instrumentation_disabled()) return;
  nvtxEventAttributes_t a = attributes(argb_color, payload, kUser);
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message.c_str();
  nvtxDomainMarkEx(domain(), &a);
#else
  (void)message, (void)argb_color, (void)payload;
#endif
}

int depth() { return static_cast<int>(widths.size()); }

void set_log(bool on) {
  std::lock_guard<std::mutex> lock(log_mutex);
  log_entries.clear();
  log_on.store(on, std::memory_order_relaxed);
}

std::vector<LogEntry> take_log() {
  std::lock_guard<std::mutex> lock(log_mutex);
  std::vector<LogEntry> out;
  out.swap(log_entries);
  return out;
}

}  // namespace nvtx
}  // namespace visprof
