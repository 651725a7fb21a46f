#include "native_info.h"

#include "common/switches.h"

#ifdef VISPROF_WITH_CUDA
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#endif

namespace visprof {

NativeInfo native_info() {
  NativeInfo info;
  info.instrumentation_disabled = instrumentation_disabled();
#ifdef VISPROF_WITH_CUDA
  info.backend = "cuda";
  info.cuda_runtime_built = CUDART_VERSION;
  info.cupti_api_built = CUPTI_API_VERSION;
  cudaRuntimeGetVersion(&info.cuda_runtime_loaded);
  if (cudaDriverGetVersion(&info.cuda_driver) != cudaSuccess) info.cuda_driver = 0;
  uint32_t cupti_version = 0;
  if (cuptiGetVersion(&cupti_version) == CUPTI_SUCCESS) info.cupti_api_loaded = cupti_version;
  Dl_info where{};
  if (dladdr(reinterpret_cast<void*>(&cuptiGetVersion), &where) && where.dli_fname) {
    info.cupti_library = where.dli_fname;
  }
  cudaError_t status = cudaGetDeviceCount(&info.gpu_count);
  if (status != cudaSuccess) {
    info.gpu_count = 0;
    // The runtime reports a missing driver (no libcuda.so.1) as an "insufficient" one.
    info.gpu_error = status == cudaErrorInsufficientDriver && info.cuda_driver == 0
                         ? "no NVIDIA driver found (libcuda.so.1 is not installed)"
                         : cudaGetErrorString(status);
    cudaGetLastError();
  }
  for (int i = 0; i < info.gpu_count; ++i) {
    cudaDeviceProp prop{};
    info.gpu_names.push_back(cudaGetDeviceProperties(&prop, i) == cudaSuccess ? prop.name : "?");
  }
  if (info.gpu_count == 0 && info.gpu_error.empty()) info.gpu_error = "no CUDA device visible";
#else
  info.backend = "cpu";
  info.gpu_error = "visprof._C was built without CUDA (CPU-only backend)";
#endif
  return info;
}

}  // namespace visprof
