// What this build of visprof._C is and what it finds at run time. Never throws: a machine
// with the CUDA build and no GPU (or no driver) reports gpu_count 0 and the reason.
#pragma once

#include <string>
#include <vector>

namespace visprof {

struct NativeInfo {
  std::string backend;  // "cuda" or "cpu"
  bool instrumentation_disabled = false;
  int cuda_runtime_built = 0;   // CUDART_VERSION at build time, 0 without CUDA
  int cuda_runtime_loaded = 0;  // cudaRuntimeGetVersion()
  int cuda_driver = 0;          // cudaDriverGetVersion(), 0 without a driver
  unsigned cupti_api_built = 0;
  unsigned cupti_api_loaded = 0;
  std::string cupti_library;  // path of the libcupti actually loaded
  int gpu_count = 0;
  std::vector<std::string> gpu_names;
  std::string gpu_error;  // why gpu_count is 0, when it is
};

NativeInfo native_info();

}  // namespace visprof
