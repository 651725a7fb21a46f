"""Projecting NVTX ranges onto GPU work, as NVIDIA's ``nvtx_gpu_proj_trace`` report does.

A range owns the GPU operations (kernels, memcpys, memsets) whose CUDA API call, matched by
``correlationId`` within the process, lies inside the range on the same thread. Ranges on
one thread nest (push/pop), so the ranges containing a call form a chain; the innermost one
owns it, and nothing is counted twice.
"""
from __future__ import annotations

import numpy as np


def innermost_ranges(range_start: np.ndarray, range_end: np.ndarray, range_tid: np.ndarray,
                     call_start: np.ndarray, call_end: np.ndarray, call_tid: np.ndarray) -> np.ndarray:
    """For each call, the index of the innermost range that contains [start, end] on the
    call's thread, or -1. Ranges must come ordered by (tid, start, end descending), which is
    how ``nsys_export.read_ranges`` returns them (parents before the children they contain)."""
    owner = np.full(len(call_start), -1, dtype=np.int64)
    if len(range_start) == 0 or len(call_start) == 0:
        return owner
    # One sweep per thread over its ranges and calls, both in start order.
    call_order = np.lexsort((call_start, call_tid))
    thread_of_range = {int(t): (int(a), int(b)) for t, a, b in _runs(range_tid)}
    ctid = call_tid[call_order]
    for tid, first, last in _runs(ctid):
        bounds = thread_of_range.get(int(tid))
        if bounds is None:
            continue
        lo, hi = bounds
        starts, ends = range_start[lo:hi].tolist(), range_end[lo:hi].tolist()
        calls = call_order[first:last]
        cstart, cend = call_start[calls].tolist(), call_end[calls].tolist()
        stack: list[int] = []
        j, n = 0, hi - lo
        for k in range(len(calls)):
            t0, t1 = cstart[k], cend[k]
            while j < n and starts[j] <= t0:
                while stack and ends[stack[-1]] < starts[j]:
                    stack.pop()
                stack.append(j)
                j += 1
            while stack and ends[stack[-1]] < t0:
                stack.pop()
            i = len(stack) - 1
            while i >= 0 and ends[stack[i]] < t1:  # a range that ends inside the call does not hold it
                i -= 1
            if i >= 0:
                owner[calls[k]] = lo + stack[i]
    return owner


def _runs(values: np.ndarray):
    """(value, first, last) of each run of equal values in a sorted array."""
    if len(values) == 0:
        return
    edges = np.flatnonzero(np.diff(values)) + 1
    firsts = np.concatenate(([0], edges))
    lasts = np.concatenate((edges, [len(values)]))
    for a, b in zip(firsts.tolist(), lasts.tolist()):
        yield values[a], a, b


def match_calls(row_pid: np.ndarray, row_correlation: np.ndarray, call_pid: np.ndarray,
                call_correlation: np.ndarray) -> np.ndarray:
    """For each GPU row, the index of the API call with the same (process, correlationId), or -1."""
    out = np.full(len(row_pid), -1, dtype=np.int64)
    if len(call_pid) == 0 or len(row_pid) == 0:
        return out
    call_keys = np.stack([call_pid, call_correlation], axis=1)
    order = np.lexsort((call_correlation, call_pid))
    sorted_keys = call_keys[order]
    # Binary search on the pair by searching the combined key within each pid block.
    for pid in np.unique(row_pid):
        rows = np.flatnonzero(row_pid == pid)
        block = np.flatnonzero(sorted_keys[:, 0] == pid)
        if len(block) == 0:
            continue
        correlations = sorted_keys[block, 1]
        pos = np.minimum(np.searchsorted(correlations, row_correlation[rows]), len(block) - 1)
        hit = (correlations[pos] == row_correlation[rows]) & (row_correlation[rows] != 0)
        out[rows[hit]] = order[block[pos[hit]]]
    return out
