"""Allocation hooks: every tensor allocation booked live/peak, per device and per tag.

torch: `install_torch_allocator()` swaps in a pluggable allocator and must run before the
process's first CUDA allocation (PyTorch refuses to swap allocators after that); visprof's
memory pass does not use it: it observes torch's own caching allocator in place
(visprof/native/alloc_tracker.py), whose books `stats` and `reserved_stats` read too. CuPy:
`install_cupy_allocator()` works at any time.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

from visprof.base.errors import NoGPUError, VisprofError
from visprof.native._loader import native


class AllocatorTooLateError(VisprofError):
    """torch's CUDA allocator was already used in this process."""


@dataclass
class AllocStats:
    device: int
    live: int  # the caching allocator's trace books block sizes here, as max_memory_allocated
    peak: int
    requested_live: int  # what tensors asked for, before the allocator's rounding
    requested_peak: int
    allocs: int
    frees: int
    failed: int
    tag_live: list[int]
    tag_peak: list[int]  # each tag's own transient peak
    live_at_peak: list[int]  # live bytes per tag at the moment of the device's peak

    def tag(self, values: list[int], tag: int) -> int:
        return values[tag] if tag < len(values) else 0


def stats(device: int) -> AllocStats:
    """Bytes held by tensors: the pluggable hooks' books, or the caching allocator's trace."""
    return AllocStats(device=device, **native().alloc.stats(device))


def reserved_stats(device: int) -> AllocStats:
    """Bytes the CUDA caching allocator reserved from the driver (its segments), from its trace."""
    return AllocStats(device=device, **native().alloc.reserved_stats(device))


def reset_peaks() -> None:
    """Peaks restart from what is live now; live allocations stay booked."""
    native().alloc.reset_peaks()


def push_tag(tag: int) -> None:
    native().alloc.push_tag(tag)


def pop_tag() -> None:
    native().alloc.pop_tag()


@contextlib.contextmanager
def tagged(tag: int):
    """Books allocations made in the body (on this thread) under `tag`."""
    c = native()
    c.alloc.push_tag(tag)
    try:
        yield
    finally:
        c.alloc.pop_tag()


def install_torch_allocator() -> None:
    """Routes torch's CUDA allocations through visprof's hooks (cudaMallocAsync underneath)."""
    import torch  # noqa: PLC0415

    c = native()
    info = c.native_info()
    if info["backend"] != "cuda":
        raise VisprofError("the torch allocation hooks need the CUDA backend of visprof._C")
    if info["gpu_count"] == 0:
        raise NoGPUError(info["gpu_error"])
    if _torch_allocator_used(torch):
        raise AllocatorTooLateError(
            "torch has already allocated CUDA memory in this process, so its allocator can no "
            "longer be replaced; install visprof's allocator hooks before the first CUDA "
            "tensor (visprof.profile's memory pass needs no hooks: it observes torch's own allocator)"
        )
    allocator = torch.cuda.memory.CUDAPluggableAllocator(c.__file__, c.alloc.TORCH_MALLOC, c.alloc.TORCH_FREE)
    try:
        torch.cuda.memory.change_current_allocator(allocator)
    except RuntimeError as exc:
        raise AllocatorTooLateError(f"torch refused visprof's allocator: {exc}") from exc


def _torch_allocator_used(torch) -> bool:
    if not torch.cuda.is_initialized():
        return False
    try:
        return any(torch.cuda.memory_reserved(i) > 0 for i in range(torch.cuda.device_count()))
    except RuntimeError:
        return True


def install_cupy_allocator():
    """Makes CuPy allocate through visprof's hooks; returns the allocator object."""
    import cupy  # noqa: PLC0415 - heavy and optional

    c = native()
    malloc_fn, free_fn = c.alloc.cupy_entry_points()
    allocator = cupy.cuda.memory.CFunctionAllocator(0, malloc_fn, free_fn, c)
    cupy.cuda.set_allocator(allocator.malloc)
    return allocator
