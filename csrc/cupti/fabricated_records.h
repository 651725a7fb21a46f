// Builds CUPTI activity records by hand, for tests of record processing on machines without
// a GPU. The layout is the one Tracer::parse_buffer reads: [uint64 size][record bytes]...
#pragma once

#include <cstdint>
#include <string>

namespace visprof {

struct FabricatedKernel {
  std::string name;
  uint64_t start = 0, end = 0;
  uint32_t device = 0, stream = 0, correlation = 0;
  int32_t grid[3] = {1, 1, 1};
  int32_t block[3] = {1, 1, 1};
  uint16_t registers = 0;
  int32_t static_shared = 0, dynamic_shared = 0;
};

// Each returns one framed record; callers concatenate them into a buffer.
std::string fabricate_kernel(const FabricatedKernel& k);
std::string fabricate_memcpy(uint64_t bytes, uint64_t start, uint64_t end, uint32_t device,
                             uint32_t stream, uint32_t correlation);
std::string fabricate_memset(uint64_t bytes, uint64_t start, uint64_t end, uint32_t device,
                             uint32_t stream, uint32_t correlation);
std::string fabricate_api(bool driver, uint32_t cbid, uint64_t start, uint64_t end,
                          uint32_t thread, uint32_t correlation);
std::string fabricate_external_correlation(uint64_t external_id, uint32_t correlation);

}  // namespace visprof
