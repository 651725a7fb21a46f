"""visprof._alloc_tracker: observes PyTorch's own CUDA caching allocator in this process
(csrc/alloc_tracker/alloc_tracker.cpp), for the memory pass.

The tracker is attached once per process (torch cannot detach trackers) and books into
visprof._C's allocated and reserved books only while ``booking()`` is active; in between it
costs one atomic load per allocator event. Like the ATen observer it is compiled on first use
against the running torch (visprof/native/runtime_module.py). ``attach_tracker()`` says why
when it cannot be used: no compiler or CUDA headers, an allocator backend that takes no
trackers (``PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync``, a pluggable allocator), or
``VISPROF_ALLOC_TRACKER=0``.
"""
from __future__ import annotations

import contextlib
import functools
import os
from typing import Iterator

from visprof.native._loader import native
from visprof.native.runtime_module import RuntimeModule

TRACKER = RuntimeModule("_visprof_alloc_tracker", "alloc_tracker", libraries=("c10", "c10_cuda"),
                        cuda_headers=True, purpose="allocator tracker")


@functools.lru_cache(maxsize=1)
def attach_tracker() -> tuple[bool, str | None]:
    """(True, None) once the tracker is attached, else (False, why not)."""
    if os.environ.get("VISPROF_ALLOC_TRACKER", "1") in ("0", ""):
        return False, "VISPROF_ALLOC_TRACKER=0"
    import torch

    if not torch.cuda.is_available():
        return False, "no CUDA GPU"
    torch.cuda.init()  # the allocator attaches trackers to the devices it has set up
    backend = torch.cuda.get_allocator_backend()
    if backend != "native":
        return False, f"the CUDA allocator backend is {backend!r}, which takes no trace trackers"
    module, why = TRACKER.load()
    if module is None:
        return False, why
    try:
        module.attach(native().alloc._torch_trace_capsule())
    except RuntimeError as exc:  # c10::Error: e.g. a pluggable allocator is installed
        return False, f"torch refused the tracker: {str(exc).splitlines()[0]}"
    return True, None


def seed_events(snapshot_segments: list[dict], device: int) -> list[tuple[int, int, int, int]]:
    """Trace events that book what is already allocated and reserved on ``device``, from
    ``torch.cuda.memory_snapshot()``: each segment as reserved, each block a tensor holds as
    allocated (with its requested size, as the allocator's ALLOC events carry)."""
    a = native().alloc
    events = []
    for segment in snapshot_segments:
        if segment.get("device") != device:
            continue
        events.append((a.TRACE_SEGMENT_ALLOC, int(segment["address"]), int(segment["total_size"]), device))
        address = int(segment["address"])
        for block in segment.get("blocks", ()):
            address = int(block.get("address", address))  # blocks tile their segment in order
            if block.get("state") == "active_allocated":
                size = int(block.get("requested_size") or block["size"])
                events.append((a.TRACE_ALLOC, address, size, device))
            address += int(block["size"])
    return events


@contextlib.contextmanager
def booking(device: int) -> Iterator[None]:
    """Books every allocator event on ``device``'s allocator while active: the books start
    from what is live now (untagged) with their peaks reset."""
    import torch

    a = native().alloc
    a.set_trace_enabled(False)
    a.clear_trace_books()
    segments = torch.cuda.memory_snapshot()  # no CUDA allocation happens between this and enabling
    a.set_trace_enabled(True)
    try:
        a.feed_trace_events(seed_events(segments, device))
        a.reset_peaks()
        yield
    finally:
        a.set_trace_enabled(False)
