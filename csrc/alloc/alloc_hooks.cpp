#include "alloc/alloc_hooks.h"

#include <cstdlib>

#include "alloc/alloc_books.h"
#include "common/check.h"

#ifdef VISPROF_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace visprof {

void* host_malloc(size_t size, int device) {
  void* ptr = std::malloc(size ? size : 1);
  if (ptr == nullptr) {
    AllocBooks::instance().on_failed(device);
    return nullptr;
  }
  AllocBooks::instance().on_alloc(ptr, size, device);
  return ptr;
}

void host_free(void* ptr, int device) {
  if (ptr == nullptr) return;
  AllocBooks::instance().on_free(ptr, device);
  std::free(ptr);
}

}  // namespace visprof

using visprof::AllocBooks;

#ifdef VISPROF_WITH_CUDA
namespace {

// Allocations must come from `device`'s pool whatever device is current on this thread.
void* device_malloc(size_t size, int device, cudaStream_t stream) {
  if (size == 0) return nullptr;
  int previous = 0;
  cudaGetDevice(&previous);
  if (previous != device) cudaSetDevice(device);
  void* ptr = nullptr;
  cudaError_t status = cudaMallocAsync(&ptr, size, stream);
  if (previous != device) cudaSetDevice(previous);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-less error so the caller sees a clean OOM
    AllocBooks::instance().on_failed(device);
    return nullptr;  // torch turns this into its OutOfMemoryError
  }
  AllocBooks::instance().on_alloc(ptr, size, device);
  return ptr;
}

void device_free(void* ptr, int device, cudaStream_t stream) {
  if (ptr == nullptr) return;
  AllocBooks::instance().on_free(ptr, device);
  if (cudaFreeAsync(ptr, stream) != cudaSuccess) {
    cudaGetLastError();
    visprof::callback_errors().record("cudaFreeAsync failed in the allocation hook");
  }
}

}  // namespace

extern "C" {
void* visprof_torch_malloc(ssize_t size, int device, void* stream) {
  return device_malloc(static_cast<size_t>(size), device, static_cast<cudaStream_t>(stream));
}
void visprof_torch_free(void* ptr, ssize_t, int device, void* stream) {
  device_free(ptr, device, static_cast<cudaStream_t>(stream));
}
// CuPy gives no stream; the legacy default stream orders the free after all prior work on
// blocking streams, which is what CuPy's own default-stream usage needs.
void* visprof_cupy_malloc(void*, size_t size, int device) { return device_malloc(size, device, nullptr); }
void visprof_cupy_free(void*, void* ptr, int device) { device_free(ptr, device, nullptr); }
}
#else
extern "C" {
// CPU-only build: the symbols exist so the same .so path works everywhere, but no GPU
// memory can be handed out.
void* visprof_torch_malloc(ssize_t, int device, void*) {
  AllocBooks::instance().on_failed(device);
  return nullptr;
}
void visprof_torch_free(void*, ssize_t, int, void*) {}
void* visprof_cupy_malloc(void*, size_t, int device) {
  AllocBooks::instance().on_failed(device);
  return nullptr;
}
void visprof_cupy_free(void*, void*, int) {}
}
#endif
