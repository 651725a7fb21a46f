"""Find the largest batch size that fits in GPU memory.

Memory, not compute, is often the first wall a model hits; when a requested batch does
not fit, the useful answer is the largest one that does. The search is pure logic around
a caller-supplied ``try_batch``, so it is tested on CPU with fake callables.
"""
from __future__ import annotations

import gc
import sys
from typing import Callable

# Texts of CUDA allocation failures that reach Python as plain RuntimeErrors (cuBLAS and
# cuDNN workspace allocations, older torch versions, errors raised from extensions).
OOM_MARKERS = ("out of memory", "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED")
# torch's refusal of a tensor too large for any memory (an absurd --img-size), on any device: no
# batch fits, which is an out-of-memory answer (exit 3), not the model failing (exit 1).
OVERFLOW_MARKER = "Storage size calculation overflowed"


def is_out_of_memory(error: BaseException) -> bool:
    """True for a CUDA out-of-memory error in any of the forms it takes."""
    from visprof.base.errors import OutOfMemoryError

    if isinstance(error, OutOfMemoryError):  # visprof's own, e.g. from the memory pass or the CPU estimate
        return True
    torch = sys.modules.get("torch")  # torch's own OOM type exists only if torch is loaded
    if torch is not None and isinstance(error, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(error, RuntimeError) and any(marker in str(error) for marker in (*OOM_MARKERS, OVERFLOW_MARKER))


def release_cached_memory() -> None:
    """Hand cached blocks back to the driver, so the next try starts from a clean pool.

    The failed try's tensors are still referenced by its traceback's frames until
    collected; gc first, then ``empty_cache``. Nothing to do if CUDA was never used.
    """
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return
    gc.collect()
    torch.cuda.empty_cache()


def largest_fitting_batch(
    try_batch: Callable[[int], None],
    start: int,
    *,
    is_oom: Callable[[BaseException], bool] = is_out_of_memory,
    on_result: Callable[[int, bool], None] | None = None,
) -> int | None:
    """The largest batch <= ``start`` for which ``try_batch`` does not run out of memory.

    Tries ``start``, then halves until a batch fits, then binary-searches between the
    largest batch that fitted and the smallest that failed. Returns None if batch 1 fails.
    Errors that ``is_oom`` rejects propagate. ``on_result(batch, fitted)`` is called after
    each try (for progress lines). Assumes that fitting is monotonic in the batch size.
    """
    if isinstance(start, bool) or not isinstance(start, int) or start < 1:
        raise ValueError(f"start must be an integer >= 1, got {start!r}")

    def fits(batch: int) -> bool:
        try:
            try_batch(batch)
        except Exception as error:
            if not is_oom(error):
                raise
            fitted = False
        else:
            fitted = True
        # After the except block, so the error and its frames are unreachable when freed.
        release_cached_memory()
        if on_result is not None:
            on_result(batch, fitted)
        return fitted

    failed = None  # smallest batch known not to fit
    batch = start
    while batch >= 1 and not fits(batch):
        failed = batch
        batch //= 2
    if batch < 1:
        return None
    if failed is None:
        return batch  # start itself fits
    fitted = batch
    while failed - fitted > 1:
        middle = (fitted + failed) // 2
        if fits(middle):
            fitted = middle
        else:
            failed = middle
    return fitted
