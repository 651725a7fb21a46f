// Plain records that the tracer hands to Python. No CUPTI types here, so record handling and
// its NumPy export compile in every backend.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace visprof {

enum class ActivityKind : uint8_t { Kernel = 0, Memcpy = 1, Memset = 2 };

// Packed so that the bytes are exactly visprof.native.records.KERNEL_DTYPE and Python can view the
// buffer without copying field by field.
#pragma pack(push, 1)
struct KernelRow {
  uint8_t kind;
  uint32_t name_id;
  uint64_t start_ns;
  uint64_t end_ns;
  int32_t device;
  uint32_t stream;
  uint32_t correlation_id;
  uint64_t external_id;
  int32_t grid[3];
  int32_t block[3];
  uint16_t registers;
  int32_t shared_mem;
  uint64_t bytes;
};

// One CUDA runtime or driver API call (RUNTIME/DRIVER activity). Matches API_DTYPE.
struct ApiRow {
  uint8_t domain;  // 0 runtime, 1 driver
  uint32_t cbid;
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t thread_id;
  uint32_t correlation_id;
  uint64_t external_id;
};
#pragma pack(pop)
static_assert(sizeof(KernelRow) == 79, "KernelRow must match KERNEL_DTYPE");
static_assert(sizeof(ApiRow) == 37, "ApiRow must match API_DTYPE");

// Interns kernel names: a trace of 100k launches usually has a few hundred distinct names.
class StringTable {
 public:
  uint32_t intern(const char* s);
  const std::vector<std::string>& strings() const { return strings_; }
  void clear();

 private:
  std::vector<std::string> strings_;
  std::unordered_map<std::string, uint32_t> index_;
};

// Everything drained from the tracer since the last drain.
struct TraceRecords {
  std::vector<KernelRow> kernels;  // kernels, memcpys and memsets, in completion order
  std::vector<ApiRow> api_calls;
  std::vector<std::string> names;
  uint64_t external_correlations = 0;  // EXTERNAL_CORRELATION records seen
  uint64_t dropped = 0;                // records CUPTI reported as dropped
};

}  // namespace visprof
