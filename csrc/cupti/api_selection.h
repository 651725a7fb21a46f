// Which CUDA runtime/driver API calls the tracer records when asked for launches only.
//
// External-correlation records exist only for API calls CUPTI records, and recording every
// runtime and driver call is costly: torch makes many driver calls per op (context and
// stream queries) that launch nothing. CUPTI can record a chosen set of calls
// (cuptiActivityEnableRuntimeApi/DriverApi); this picks every call that can put work on
// the GPU: kernel and graph launches, async copies and memsets.
//
// Order matters: per-API switches take effect only while the RUNTIME/DRIVER kind itself is
// enabled (a first H200 run that set them without the kind recorded no API call at all).
#pragma once

#include <cupti.h>

#include <string>
#include <vector>

namespace visprof {

struct ApiId {
  CUpti_CallbackDomain domain;  // CUPTI_CB_DOMAIN_RUNTIME_API or CUPTI_CB_DOMAIN_DRIVER_API
  CUpti_CallbackId cbid;
  std::string name;
  bool submits_work;
};

bool is_work_submitting_api(const std::string& name);
// Every runtime and driver API this CUPTI knows by name.
std::vector<ApiId> known_apis();
// Those of known_apis() that is_work_submitting_api accepts.
std::vector<ApiId> work_submitting_apis();

}  // namespace visprof
