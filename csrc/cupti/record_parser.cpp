#include "cupti/record_parser.h"

#include <utility>

namespace visprof {

void RecordParser::consume(const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      add_kernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      add_memcpy(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      add_memset(*reinterpret_cast<const CUpti_ActivityMemset4*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      add_api(*reinterpret_cast<const CUpti_ActivityAPI*>(record), 0);
      break;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      add_api(*reinterpret_cast<const CUpti_ActivityAPI*>(record), 1);
      break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& e = *reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      external_of_correlation_[e.correlationId] = e.externalId;
      ++external_correlations_;
      break;
    }
    default:
      ++unknown_kinds_;
  }
}

void RecordParser::add_kernel(const CUpti_ActivityKernel10& k) {
  KernelRow row{};
  row.kind = static_cast<uint8_t>(ActivityKind::Kernel);
  row.name_id = names_.intern(k.name);
  row.start_ns = k.start;
  row.end_ns = k.end;
  row.device = static_cast<int32_t>(k.deviceId);
  row.stream = k.streamId;
  row.correlation_id = k.correlationId;
  row.grid[0] = k.gridX;
  row.grid[1] = k.gridY;
  row.grid[2] = k.gridZ;
  row.block[0] = k.blockX;
  row.block[1] = k.blockY;
  row.block[2] = k.blockZ;
  row.registers = k.registersPerThread;
  row.shared_mem = k.staticSharedMemory + k.dynamicSharedMemory;
  kernels_.push_back(row);
}

// Memcpy and memset records share the fields visprof keeps, under the same names.
template <typename Transfer>
KernelRow transfer_row(const Transfer& t, ActivityKind kind, uint32_t name_id) {
  KernelRow row{};
  row.kind = static_cast<uint8_t>(kind);
  row.name_id = name_id;
  row.start_ns = t.start;
  row.end_ns = t.end;
  row.device = static_cast<int32_t>(t.deviceId);
  row.stream = t.streamId;
  row.correlation_id = t.correlationId;
  row.bytes = t.bytes;
  return row;
}

void RecordParser::add_memcpy(const CUpti_ActivityMemcpy6& m) {
  kernels_.push_back(transfer_row(m, ActivityKind::Memcpy, names_.intern("[memcpy]")));
}

void RecordParser::add_memset(const CUpti_ActivityMemset4& m) {
  kernels_.push_back(transfer_row(m, ActivityKind::Memset, names_.intern("[memset]")));
}

void RecordParser::add_api(const CUpti_ActivityAPI& a, uint8_t domain) {
  ApiRow row{};
  row.domain = domain;
  row.cbid = a.cbid;
  row.start_ns = a.start;
  row.end_ns = a.end;
  row.thread_id = a.threadId;
  row.correlation_id = a.correlationId;
  api_calls_.push_back(row);
}

TraceRecords RecordParser::finish(uint64_t dropped) {
  // External-correlation records can arrive in a later buffer than the kernels they describe,
  // so the join waits until everything of the session is in.
  auto external_of = [this](uint32_t correlation) -> uint64_t {
    auto found = external_of_correlation_.find(correlation);
    return found == external_of_correlation_.end() ? 0 : found->second;
  };
  for (auto& row : kernels_) row.external_id = external_of(row.correlation_id);
  for (auto& row : api_calls_) row.external_id = external_of(row.correlation_id);

  TraceRecords out;
  out.kernels = std::move(kernels_);
  out.api_calls = std::move(api_calls_);
  out.names = names_.strings();
  out.external_correlations = external_correlations_;
  out.dropped = dropped;

  kernels_.clear();
  api_calls_.clear();
  names_.clear();
  external_of_correlation_.clear();
  external_correlations_ = 0;
  return out;
}

}  // namespace visprof
