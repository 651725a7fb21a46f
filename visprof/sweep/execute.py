"""Runs one cell inside a worker (a local worker process or a Ray task) and says how it went.

On out of memory the batch decays as timm's ``benchmark.py`` does (``decay_batch_step``:
64, 48, 32, 24, 16, ...) and the batch that fit is recorded. Any other error is the cell's
answer: recorded with its class and message, not retried.

On the CPU, a batch that does not fit does not fail when tried: Linux overcommits, so the
worker grows until the machine swaps or the OOM killer ends it. There every batch is first
checked by the host-memory estimate (``search_batch`` of ``visprof.profile``, which on the CPU
estimates and tries nothing), and a batch it refuses, before anything is allocated, ends the
cell: a failure of kind ``oom`` whose message names the batch that should fit, as ``visprof
profile`` says it. Decaying instead ran the first step under all the available memory:
mobilenetv3_small_050 asked at batch 10^8 on a 23 GB machine went through 27 refused steps to
batch 8192, estimated at 20 GB of tensors (a user saw the worker at 17 GB), 75 s a forward and
533 s for the cell.

The outcome is plain JSON, sent back to the driver, which alone writes the store.
"""
from __future__ import annotations

import os
import socket
import time
import traceback
from typing import Any

from visprof.sweep.plan import Cell

__all__ = ["execute_cell", "worker_facts", "is_oom_error", "refused_by_estimate", "DETAIL_CHARS"]

DETAIL_CHARS = 4000  # how much of a traceback or a worker's stderr a failure keeps


def is_oom_error(error: BaseException) -> bool:
    """An out-of-memory error, also when wrapped (e.g. a ModelForwardError caused by one)."""
    from visprof.passes.batch_search import is_out_of_memory

    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if is_out_of_memory(error):
            return True
        error = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
    return False


def refused_by_estimate(error: BaseException) -> bool:
    """An OutOfMemoryError that the host-memory estimate raised (it names the batch that should
    fit, or says that not even batch 1 does): decaying further would only repeat it."""
    from visprof.base.errors import OutOfMemoryError

    return isinstance(error, OutOfMemoryError) and error.searched


def execute_cell(cell: Cell, device: str) -> dict[str, Any]:
    """Profiles ``cell`` on ``device`` (``cuda:0`` in a pinned worker, or ``cpu``).

    Returns ``{"status": "ok", "result": ProfileResult.to_dict(), ...}`` or
    ``{"status": "failed", "kind": "error"|"oom", "error_class", "message", "detail", ...}``;
    both carry ``batch_sizes_tried`` and ``wall_s`` (the whole cell: building the model, every
    pass, every batch tried)."""
    from timm.utils import check_batch_size_retry, decay_batch_step

    from visprof.passes.batch_search import release_cached_memory
    from visprof.profiler import profile

    start = time.perf_counter()
    tried: list[int] = []
    batch = cell.batch_size
    last_oom = ""
    # Each cell starts from an empty allocator cache, as timm's benchmark.py empties it before
    # each model: a reused worker's earlier models neither fragment it nor count as reserved.
    release_cached_memory()
    host = not device.startswith("cuda")
    while batch:
        tried.append(batch)
        failure = None
        kwargs = cell.profile_kwargs(batch, device)
        if host:  # the host-memory estimate, before any allocation (see the module docstring)
            kwargs["search_batch"] = True
        try:
            result = profile(cell.model, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every error is the cell's answer
            message = str(exc)
            if host and refused_by_estimate(exc):
                failure = _failure("oom", exc, tried, start)
            elif is_oom_error(exc) and check_batch_size_retry(message):
                last_oom = f"{type(exc).__name__}: {message}"
            else:
                failure = _failure("error", exc, tried, start)
        else:
            return {"status": "ok", "result": result.to_dict(), "batch_sizes_tried": tried,
                    "wall_s": time.perf_counter() - start}
        # Outside the except block: the error's frames (and the tensors they hold) are gone.
        if failure is not None:
            return failure
        release_cached_memory()
        batch = decay_batch_step(batch)
    return {"status": "failed", "kind": "oom", "error_class": "OutOfMemoryError",
            "message": f"out of memory at every batch size tried ({', '.join(map(str, tried))}); last: {last_oom}",
            "detail": "", "batch_sizes_tried": tried, "wall_s": time.perf_counter() - start}


def _failure(kind: str, exc: BaseException, tried: list[int], start: float) -> dict[str, Any]:
    detail = "".join(traceback.format_exception(exc))[-DETAIL_CHARS:]
    return {"status": "failed", "kind": kind, "error_class": type(exc).__name__, "message": str(exc),
            "detail": detail, "batch_sizes_tried": tried, "wall_s": time.perf_counter() - start}


def worker_facts(device: str) -> dict[str, Any]:
    """Who is measuring: versions, host, process, the CPU (``hardware.cpu_identity``) and the
    GPU (name, uuid) or None."""
    from visprof.base import hardware
    from visprof.store.versions import SoftwareVersions

    gpu = None
    if device.startswith("cuda"):
        identity = hardware.gpu_identity(int(device.partition(":")[2] or 0))
        if identity is not None:
            gpu = {"name": identity.get("name"), "uuid": identity.get("uuid"),
                   "pci_bus_id": identity.get("pci_bus_id")}
    return {"versions": SoftwareVersions.current().to_dict(), "host": socket.gethostname(), "pid": os.getpid(),
            "device": device, "gpu": gpu, "cpu": hardware.cpu_identity(),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
