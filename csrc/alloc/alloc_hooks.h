// C entry points with the exact signatures the frameworks' pluggable allocators call.
//
//  * torch.cuda.memory.CUDAPluggableAllocator(path_to_this_so, "visprof_torch_malloc",
//    "visprof_torch_free")
//  * cupy.cuda.memory.CFunctionAllocator(0, visprof_cupy_malloc, visprof_cupy_free, owner);
//    CuPy's free carries no size, which is why the books remember every pointer's size.
//
// The backing memory is stream-ordered (cudaMallocAsync/cudaFreeAsync from the device's
// default pool), so freeing never synchronizes the device. The host variants book plain
// malloc/free the same way, for tests without a GPU.
#pragma once

#include <sys/types.h>

#include <cstddef>

// pybind11 builds with hidden visibility; these must stay visible to dlsym().
#define VISPROF_EXPORT __attribute__((visibility("default")))

extern "C" {
VISPROF_EXPORT void* visprof_torch_malloc(ssize_t size, int device, void* stream);
VISPROF_EXPORT void visprof_torch_free(void* ptr, ssize_t size, int device, void* stream);
VISPROF_EXPORT void* visprof_cupy_malloc(void* param, size_t size, int device);
VISPROF_EXPORT void visprof_cupy_free(void* param, void* ptr, int device);
}

namespace visprof {
void* host_malloc(size_t size, int device);
void host_free(void* ptr, int device);
}  // namespace visprof
