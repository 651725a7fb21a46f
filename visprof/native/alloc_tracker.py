"""visprof._alloc_tracker: observes PyTorch's own CUDA caching allocator in this process
(csrc/alloc_tracker/alloc_tracker.cpp), for the memory pass.

The tracker is attached once per process (torch cannot detach trackers) and books into
visprof._C's allocated and reserved books only while ``booking()`` is active, each allocation
at the size of the allocator's block (visprof._C mirrors its splits and merges,
csrc/alloc/block_mirror.h; ``block_counts`` says how each size was found); in between it
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
    ``torch.cuda.memory_snapshot()``: each segment as reserved (mapped, for an expandable
    one), and each block the allocator holds for a tensor or a pending free at its exact
    block size (SEED_BLOCK, for the block mirror), the allocated ones then booked as the
    allocator's ALLOC events book them (their requested size, whose block is the seeded one).
    Inactive blocks stay free ranges of their segment."""
    a = native().alloc
    events = []
    for segment in snapshot_segments:
        if segment.get("device") != device:
            continue
        address = int(segment["address"])
        reserve = a.TRACE_SEGMENT_MAP if segment.get("is_expandable") else a.TRACE_SEGMENT_ALLOC
        events.append((reserve, address, int(segment["total_size"]), device))
        for block in segment.get("blocks", ()):
            address = int(block.get("address", address))  # blocks tile their segment in order
            size = int(block["size"])
            state = block.get("state")
            if state in ("active_allocated", "active_pending_free"):
                events.append((a.TRACE_SEED_BLOCK, address, size, device))
            if state == "active_allocated":
                events.append((a.TRACE_ALLOC, address, int(block.get("requested_size") or size), device))
            address += size
    return events


# PYTORCH_CUDA_ALLOC_CONF settings that change the blocks the allocator hands out in ways the
# block mirror (csrc/alloc/block_mirror.h) does not model. expandable_segments is modeled
# (every block there is its rounded size); backend:cudaMallocAsync takes no tracker at all;
# the others (garbage_collection_threshold, release_lock_on_cudamalloc, pinned_*) change when
# segments are freed or how host memory is pinned, which the trace shows or does not touch.
UNMODELED_SETTINGS = {
    "roundup_power2_divisions": "rounds requests up to power-of-two divisions, not to 512 bytes",
    "max_split_size_mb": "leaves large blocks unsplit and hands out larger cached blocks",
    "max_non_split_rounding_mb": "hands out larger cached blocks unsplit",
}
ALLOC_CONF_VARIABLES = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


def unmodeled_allocator_settings(environ: dict[str, str] | None = None) -> list[str]:
    """``"NAME=setting"`` for each allocator setting in the environment that the block mirror
    does not model (UNMODELED_SETTINGS)."""
    environ = os.environ if environ is None else environ
    found = []
    for variable in ALLOC_CONF_VARIABLES:
        for key in _conf_keys(environ.get(variable, "")):
            if key in UNMODELED_SETTINGS:
                found.append(f"{variable}={key}")
    return found


def _conf_keys(conf: str) -> list[str]:
    """The keys of ``key:value,key:[a:b,c:d]`` (commas inside brackets belong to the value)."""
    keys, depth, token = [], 0, ""
    for char in conf + ",":
        if char == "," and depth == 0:
            if token.strip():
                keys.append(token.split(":", 1)[0].strip())
            token = ""
            continue
        depth += (char == "[") - (char == "]")
        token += char
    return keys


def block_counts(device: int) -> dict[str, int]:
    """How the booked allocations' block sizes were found since the books were last cleared:
    ``split_rules``, ``seeded`` (from the snapshot), ``expandable`` and ``fallbacks`` (no free
    block at the address: booked at the rounded requested size)."""
    return dict(native().alloc.block_mirror_counts(device))


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
