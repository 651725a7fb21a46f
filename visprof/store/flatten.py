"""A ProfileResult, as a dict (``to_dict()``), flattened into the store's columns.

Reads the result document, not the dataclass, and treats every field as optional: a result
from an older or newer visprof (or a pass that did not run) gives NULLs, never an error.
"""
from __future__ import annotations

import json
from typing import Any, Iterator, Mapping

from visprof.store.schema import RESULT_FIGURES

__all__ = ["flatten_result", "category_rows", "memory_rows", "op_type_rows", "kernel_family_rows",
           "kernel_family_category_rows", "normalize_gpu_uuid", "total_flops"]


def _get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _integer(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def normalize_gpu_uuid(gpu: Mapping[str, Any] | None, cpu: Mapping[str, Any] | None = None) -> str:
    """The row's device id: the GPU's uuid without NVML's ``GPU-`` prefix, lower case; for a CPU
    row (``gpu`` None) the CPU's (``hardware.cpu_device_id``: "cpu" where ``cpu`` is unknown)."""
    from visprof.base.hardware import cpu_device_id, normalize_uuid

    uuid = _get(gpu, "uuid")
    if not uuid:
        return cpu_device_id(dict(cpu) if cpu else None) if gpu is None else f"unknown:{_get(gpu, 'name') or 'gpu'}"
    return normalize_uuid(uuid)


def total_flops(doc: Mapping[str, Any]) -> float | None:
    rows = doc.get("categories") or []
    values = [_number(row.get("flops")) for row in rows if isinstance(row, Mapping)]
    values = [v for v in values if v is not None]
    return sum(values) if values else None


def flatten_result(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The RESULT_FIGURES columns of one result document (the cell-level ones, such as
    ``batch_sizes_tried``, ``wall_s`` and ``attempts``, are left to the caller)."""
    latency = _get(doc, "timing", "latency_ms") or {}
    during = _get(doc, "gpu", "during_run") or {}
    shape = _get(doc, "model", "input_shape") or []
    checks = [c for c in doc.get("checks") or [] if isinstance(c, Mapping)]
    failed = [str(c.get("name")) for c in checks if c.get("passed") is False]
    passes = doc.get("passes") or {}
    row: dict[str, Any] = {
        "batch_size": _integer(_get(doc, "model", "batch_size")),
        "img_height": _integer(shape[2]) if len(shape) == 4 else None,
        "img_width": _integer(shape[3]) if len(shape) == 4 else None,
        "param_count": _integer(_get(doc, "model", "param_count")),
        "device": _get(doc, "config", "device"),
        "grad_mode": _get(doc, "config", "grad_mode"),
        "autocast": _get(doc, "config", "autocast"),
        "measurement": doc.get("measurement"),
        "samples_per_s": _number(_get(doc, "timing", "samples_per_s")),
        "timing_iterations": _integer(_get(doc, "timing", "iterations")),
        "busy_ms": _number(_get(doc, "timing", "busy_ms")),
        "idle_ms": _number(_get(doc, "timing", "idle_ms")),
        "max_memory_allocated_bytes": _integer(_get(doc, "timing", "max_memory_allocated_bytes")),
        "max_memory_reserved_bytes": _integer(_get(doc, "timing", "max_memory_reserved_bytes")),
        "peak_bytes": _integer(_get(doc, "memory", "peak_bytes")),
        "reserved_peak_bytes": _integer(_get(doc, "memory", "reserved_peak_bytes")),
        "alloc_count": _integer(_get(doc, "memory", "alloc_count")),
        "kernel_ms": _number(_get(doc, "attribution", "kernel_ms")),
        "activity_ms": _number(_get(doc, "attribution", "activity_ms")),
        "coverage": _number(_get(doc, "attribution", "coverage")),
        "weight_cast_ms": _number(_get(doc, "attribution", "weight_cast_ms")),
        "flops": total_flops(doc),
        "sm_clock_mhz_median": _number(_get(during, "sm_clock_mhz", "median")),
        "mem_clock_mhz_median": _number(_get(during, "mem_clock_mhz", "median")),
        "power_w_median": _number(_get(during, "power_w", "median")),
        "power_w_max": _number(_get(during, "power_w", "max")),
        "temperature_c_max": _number(_get(during, "temperature_c", "max")),
        "energy_j": _number(_get(during, "energy_j")),
        "throttle_reasons": ",".join(map(str, during.get("throttle_reasons") or [])) or None,
        "checks_failed": len(failed) if checks else None,
        "checks_failed_names": "; ".join(failed) or None,
        "warnings_count": len(doc.get("warnings") or []),
        "created_at": doc.get("created_at"),
    }
    for stat in ("median", "mean", "p10", "p90", "min", "max", "std"):
        row[f"latency_{stat}_ms"] = _number(latency.get(stat)) if isinstance(latency, Mapping) else None
    for name in ("timing", "trace_only", "attributed", "memory"):
        row[f"{name}_wall_s"] = _number(_get(passes, name, "wall_s"))
    known = {name for name, _ in RESULT_FIGURES}
    return {key: value for key, value in row.items() if key in known}


def category_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per (category, subcategory) of the result; subcategory "" when there is none."""
    rows = []
    for row in doc.get("categories") or []:
        if not isinstance(row, Mapping) or not row.get("category"):
            continue
        rows.append({
            "category": str(row["category"]),
            "subcategory": str(row.get("subcategory") or ""),
            "time_ms": _number(row.get("time_ms")),
            "share": _number(row.get("share")),
            "kernel_count": _number(row.get("kernel_count")),
            "flops": _number(row.get("flops")),
            "tflops": _number(row.get("tflops")),
            "live_bytes_at_peak": _integer(row.get("live_bytes_at_peak")),
            "transient_peak_bytes": _integer(row.get("transient_peak_bytes")),
        })
    return rows


def op_type_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The result's op-type table (empty for results made before it); subcategory "" when there is none."""
    return _table_rows(doc, "op_types", "op_type", ("calls", "kernels", "time_ms", "share", "gflop", "mb"))


def kernel_family_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The result's kernel-family table (empty for results made before it)."""
    return _table_rows(doc, "kernel_families", "family",
                       ("calls", "time_ms", "share", "gflop", "mb", "blocks", "threads"))


def kernel_family_category_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each kernel family's time by category key (its ``by_category``), one row per (family,
    category, subcategory); subcategory "" when there is none. No rows for results made before it."""
    rows = []
    for family in _unique_rows(doc, "kernel_families", "family"):
        by_category = family.get("by_category")
        if not isinstance(by_category, Mapping):
            continue
        seen = set()
        for key, time_ms in by_category.items():
            category, _, subcategory = str(key).partition("/")
            if not category or (category, subcategory) in seen:  # "a" and "a/" are one row of the table
                continue
            seen.add((category, subcategory))
            rows.append({"family": str(family["family"]), "category": category, "subcategory": subcategory,
                         "time_ms": _number(time_ms)})
    return rows


def _table_rows(doc: Mapping[str, Any], field: str, key: str, numbers: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{key: str(row[key]), "category": str(row.get("category") or ""),
             "subcategory": str(row.get("subcategory") or ""), **{name: _number(row.get(name)) for name in numbers}}
            for row in _unique_rows(doc, field, key)]


def _unique_rows(doc: Mapping[str, Any], field: str, key: str) -> Iterator[Mapping[str, Any]]:
    """The rows of the list ``doc[field]`` that have ``key``, the first of each (the table's primary key)."""
    seen = set()
    for row in doc.get(field) or []:
        if not isinstance(row, Mapping) or not row.get(key) or row[key] in seen:
            continue
        seen.add(row[key])
        yield row


def memory_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Memory by category key ("category" or "category/subcategory") at the peak."""
    memory = doc.get("memory")
    if not isinstance(memory, Mapping):
        return []
    allocated = memory.get("by_category_at_peak") or {}
    reserved = memory.get("reserved_by_category_at_peak") or {}
    transient = memory.get("transient_peak_by_category") or {}
    keys = dict.fromkeys([*allocated, *reserved, *transient])
    return [
        {"key": str(key), "allocated_at_peak": _integer(allocated.get(key)),
         "reserved_at_peak": _integer(reserved.get(key)), "transient_peak": _integer(transient.get(key))}
        for key in keys
    ]


def compact_json(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), sort_keys=True)
