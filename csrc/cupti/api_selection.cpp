#include "cupti/api_selection.h"

namespace visprof {

bool is_work_submitting_api(const std::string& name) {
  // Graph-node calls (cuGraphAddMemcpyNode, ...) only describe work; cuGraphLaunch submits it.
  if (name.find("Node") != std::string::npos) return false;
  for (const char* marker : {"Launch", "Memcpy", "Memset"}) {
    if (name.find(marker) != std::string::npos) return true;
  }
  return false;
}

std::vector<ApiId> known_apis() {
  std::vector<ApiId> out;
  const std::pair<CUpti_CallbackDomain, CUpti_CallbackId> domains[] = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE},
  };
  for (const auto& [domain, size] : domains) {
    for (CUpti_CallbackId cbid = 1; cbid < size; ++cbid) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
      out.push_back({domain, cbid, name, is_work_submitting_api(name)});
    }
  }
  return out;
}

std::vector<ApiId> work_submitting_apis() {
  std::vector<ApiId> out;
  for (ApiId& api : known_apis()) {
    if (api.submits_work) out.push_back(std::move(api));
  }
  return out;
}

}  // namespace visprof
