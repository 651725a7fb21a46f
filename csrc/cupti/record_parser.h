// Turns CUPTI activity records into visprof rows.
//
// This is the seam that makes record processing testable without a GPU (kineto's pattern):
// the tracer feeds it records pulled out of CUPTI buffers, tests feed it records they
// fabricate (cupti/fabricated_records.h). Both go through consume().
#pragma once

#include <cupti.h>

#include <unordered_map>

#include "cupti/records.h"

namespace visprof {

class RecordParser {
 public:
  void consume(const CUpti_Activity* record);
  // A link collected by the launch callback: the API call `correlation` ran inside op `op`.
  void add_correlation(uint32_t correlation, uint64_t op) { external_of_correlation_[correlation] = op; }
  // Joins kernels to external ids and hands everything over; the parser is empty afterwards.
  TraceRecords finish(uint64_t dropped);
  uint64_t unknown_kinds() const { return unknown_kinds_; }

 private:
  void add_kernel(const CUpti_ActivityKernel10& k);
  void add_memcpy(const CUpti_ActivityMemcpy6& m);
  void add_memset(const CUpti_ActivityMemset4& m);
  void add_api(const CUpti_ActivityAPI& a, uint8_t domain);

  std::vector<KernelRow> kernels_;
  std::vector<ApiRow> api_calls_;
  StringTable names_;
  // correlation id of an API call -> external id that was on top of the stack when it ran.
  std::unordered_map<uint32_t, uint64_t> external_of_correlation_;
  uint64_t external_correlations_ = 0;
  uint64_t unknown_kinds_ = 0;
};

}  // namespace visprof
