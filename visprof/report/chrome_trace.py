"""Export an attributed trace as Chrome Trace Event Format JSON (chrome://tracing, Perfetto).

Tracks:

* one process per GPU ("GPU <device>") with one thread per stream ("stream <n>"): one
  complete ("X") event per kernel, memcpy and memset, coloured by category, with args
  {category, subcategory, op, module, external_id, grid, block, attributed_by};
* the host process "CPU (host clock)": thread "modules and ops" holds nested X events, a
  range per module invocation (first op start to last op end) around the op ranges; on the
  CPU path, the host-timed pseudo-kernels go on their own thread.

The GPU and host clocks are different clocks. Unless ``trace.meta["host_to_gpu_offset_ns"]``
says how to map host time onto GPU time, each clock is shifted so that its first event
starts at 0, and the two sides line up only roughly. Timestamps are microseconds (floats),
as the format requires.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from visprof.attribution import HOW_LABELS, Attribution, module_category_ns
from visprof.base.outputs import atomic_write_json
from visprof.native.records import KIND_CPU_OP, CapturedTrace

# Colour names the Chrome trace viewer reserves (catapult's color_scheme); "cname" must be one.
RESERVED_CNAMES = frozenset({
    "thread_state_uninterruptible", "thread_state_iowait", "thread_state_running",
    "thread_state_runnable", "thread_state_sleeping", "thread_state_unknown",
    "background_memory_dump", "light_memory_dump", "detailed_memory_dump",
    "vsync_highlight_color", "generic_work", "good", "bad", "terrible", "black", "grey",
    "white", "yellow", "olive", "rail_response", "rail_animation", "rail_idle", "rail_load",
    "startup", "heap_dump_stack_frame", "heap_dump_object_type",
    "heap_dump_child_node_highlight", "cq_build_running", "cq_build_passed", "cq_build_failed",
    "cq_build_abandoned", "cq_build_attempt_runnig", "cq_build_attempt_passed",
    "cq_build_attempt_failed",
})
HOST_PID = 0
HOST_OPS_TID = 0
HOST_PSEUDO_TID = 1  # CPU path: host-timed pseudo-kernels


def _cname(attr: Attribution, category: str) -> str:
    try:
        name = attr.table.category(category).cname
    except KeyError:
        return "generic_work"
    return name if name in RESERVED_CNAMES else "generic_work"


def _us(ns: float) -> float:
    return ns / 1000.0


def _meta(kind: str, pid: int, tid: int, name: str) -> dict[str, Any]:
    return {"name": kind, "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}


def _row_track(device: int, stream: int, kind: int) -> tuple[int, int]:
    if kind == KIND_CPU_OP or device < 0:
        return HOST_PID, HOST_PSEUDO_TID
    return device + 1, stream


def _row_events(trace: CapturedTrace, attr: Attribution, gpu_origin: int, host_origin: int) -> list[dict[str, Any]]:
    k = trace.kernels
    # Plain Python lists: indexing a structured array row by row is ~10x slower.
    cols = {name: k[name].tolist() for name in ("kind", "name_id", "start_ns", "end_ns", "device", "stream", "external_id", "grid", "block", "bytes")}
    classes = [(c.category, c.subcategory, _cname(attr, c.category)) for c in attr.classes]
    op_names = [op.name for op in trace.ops]
    paths = [m.path for m in trace.modules]
    events = []
    for i, (cls, op, module, how) in enumerate(zip(attr.kernel_class.tolist(), attr.op_index.tolist(), attr.module_index.tolist(), attr.how.tolist())):
        category, subcategory, cname = classes[cls]
        kind, start, end = cols["kind"][i], cols["start_ns"][i], cols["end_ns"][i]
        pid, tid = _row_track(cols["device"][i], cols["stream"][i], kind)
        args = {
            "category": category,
            "subcategory": subcategory,
            "op": op_names[op] if op >= 0 else None,
            "module": paths[module] if module >= 0 else None,
            "external_id": cols["external_id"][i],
            "grid": cols["grid"][i],
            "block": cols["block"][i],
            "attributed_by": HOW_LABELS[how],
        }
        if cols["bytes"][i]:
            args["bytes"] = cols["bytes"][i]
        origin = host_origin if kind == KIND_CPU_OP else gpu_origin
        events.append({
            "name": trace.kernel_names[cols["name_id"][i]], "cat": category, "ph": "X",
            "ts": _us(start - origin), "dur": _us(max(end - start, 0)),
            "pid": pid, "tid": tid, "cname": cname, "args": args,
        })
    return events


def _ancestries(trace: CapturedTrace) -> list[tuple[int, ...]]:
    """For each module, the module indices from the root down to it."""
    out: list[tuple[int, ...]] = []
    for m in range(len(trace.modules)):
        chain = []
        while m >= 0:
            chain.append(m)
            m = trace.modules[m].parent
        out.append(tuple(reversed(chain)))
    return out


def _host_events(trace: CapturedTrace, attr: Attribution, origin: int) -> list[dict[str, Any]]:
    """Op ranges, nested inside one range per contiguous run of each enclosing module."""
    pairs, module_ns = module_category_ns(attr)
    dominant = [pairs[int(np.argmax(row))][0] if row.sum() > 0 else None for row in module_ns]
    ancestries = _ancestries(trace)
    class_cnames = [_cname(attr, c.category) for c in attr.classes]
    ops = trace.ops
    order = sorted(range(len(ops)), key=lambda i: (ops[i].iteration, ops[i].cpu_start_ns))
    events: list[dict[str, Any]] = []
    stack: list[tuple[int, int]] = []  # (module, start_ns) of the open module ranges
    last_end = 0

    def close_to(depth: int) -> None:
        # Op ends are clamped to be non-decreasing, so an open range ends with the last op.
        while len(stack) > depth:
            m, start = stack.pop()
            rec = trace.modules[m]
            events.append({
                "name": f"{rec.cls} {rec.path}".strip(), "cat": "module", "ph": "X",
                "ts": _us(start - origin), "dur": _us(last_end - start), "pid": HOST_PID, "tid": HOST_OPS_TID,
                "cname": _cname(attr, dominant[m]) if dominant[m] else "generic_work",
                "args": {"path": rec.path, "cls": rec.cls, "dominant_category": dominant[m]},
            })

    previous_iteration = None
    for n, i in enumerate(order):
        op = ops[i]
        start = max(op.cpu_start_ns, last_end) if op.iteration == previous_iteration else op.cpu_start_ns
        # Ops run one after another on the host; clamp so a late end cannot break nesting.
        end = max(start, op.cpu_end_ns)
        if n + 1 < len(order) and ops[order[n + 1]].iteration == op.iteration:
            end = min(end, max(start, ops[order[n + 1]].cpu_start_ns))
        chain = ancestries[op.module] if op.module >= 0 else ()
        common = 0
        if op.iteration == previous_iteration:
            while common < min(len(stack), len(chain)) and stack[common][0] == chain[common]:
                common += 1
        close_to(common)
        stack += [(m, start) for m in chain[common:]]
        last_end = end
        previous_iteration = op.iteration
        c = attr.classes[int(attr.op_class[i])]
        events.append({
            "name": op.name, "cat": c.category, "ph": "X", "ts": _us(start - origin), "dur": _us(end - start),
            "pid": HOST_PID, "tid": HOST_OPS_TID, "cname": class_cnames[int(attr.op_class[i])],
            "args": {"category": c.category, "subcategory": c.subcategory, "rule": c.rule, "external_id": op.external_id,
                     "module": trace.modules[op.module].path if op.module >= 0 else None, "flops": op.flops,
                     "iteration": op.iteration},
        })
    close_to(0)
    return events


def _origins(trace: CapturedTrace) -> tuple[int, int]:
    """Zero points of the GPU and host clocks (ns), shared when the offset is known."""
    rows = trace.kernels
    host_rows = rows["kind"] == KIND_CPU_OP
    gpu_starts = rows["start_ns"][~host_rows]
    host_starts = [op.cpu_start_ns for op in trace.ops] + [int(x) for x in rows["start_ns"][host_rows]]
    gpu_origin = int(gpu_starts.min()) if len(gpu_starts) else 0
    host_origin = min(host_starts) if host_starts else 0
    offset = trace.meta.get("host_to_gpu_offset_ns")
    if offset is None:
        return gpu_origin, host_origin
    common = min(gpu_origin, host_origin + int(offset)) if len(gpu_starts) else host_origin + int(offset)
    return common, common - int(offset)


def chrome_trace_events(trace: CapturedTrace, attribution: Attribution) -> dict[str, Any]:
    """The trace as a Trace Event Format object (not written anywhere)."""
    gpu_origin, host_origin = _origins(trace)
    events = [_meta("process_name", HOST_PID, 0, f"CPU (host clock, {trace.measurement} measurement)"),
              _meta("thread_name", HOST_PID, HOST_OPS_TID, "modules and ops")]
    k = trace.kernels
    tracks = sorted({_row_track(int(d), int(s), int(kind)) for d, s, kind in zip(k["device"], k["stream"], k["kind"])})
    events += [_meta("process_name", pid, 0, f"GPU {pid - 1}") for pid in sorted({p for p, _ in tracks} - {HOST_PID})]
    events += [_meta("thread_name", pid, tid, "host-timed ops (pseudo-kernels)" if pid == HOST_PID else f"stream {tid}")
               for pid, tid in tracks]
    events += _host_events(trace, attribution, host_origin)
    events += _row_events(trace, attribution, gpu_origin, host_origin)
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"producer": "visprof", "measurement": trace.measurement, "iterations": trace.iterations},
    }


def to_chrome_trace(trace: CapturedTrace, attribution: Attribution, path: str | Path | None = None) -> dict[str, Any]:
    """Build the Trace Event Format JSON; write it to ``path`` (gzipped for ``.gz``) if given,
    atomically: an interrupted or failed write leaves the previous file, or none."""
    data = chrome_trace_events(trace, attribution)
    if path is not None:
        # dumps (the C encoder) then one write: json.dump's pure-Python encoder is ~5x slower.
        atomic_write_json(path, json.dumps(data, separators=(",", ":"), allow_nan=False), kind="chrome-trace")
    return data
