"""Recorded data that flows from the native layer into attribution.

This is the contract between capture (what ran) and attribution (where the time went).
Attribution, reports and the test fixtures under ``tests/data/`` read only these types,
never live profiler state, so every analysis can be replayed on CPU from a recording.

A ``CapturedTrace`` holds, for one attributed pass:

* ``kernels``: a NumPy structured array (``KERNEL_DTYPE``), one row per GPU kernel, memcpy
  or memset (or, on the CPU path, one pseudo-kernel per op timed by the host clock).
* ``kernel_names``: the string table that ``kernels["name_id"]`` indexes.
* ``ops``: one ``OpRecord`` per operator call; its ``external_id`` is what the native tracer
  pushed as CUPTI external correlation id while the op ran, so it equals
  ``kernels["external_id"]`` of every kernel the op launched.
* ``modules``: the ``nn.Module`` tree that was active; ops point into it by index.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

TRACE_SCHEMA = "visprof.trace/1"

# Kind of activity a kernel row stands for.
KIND_KERNEL = 0
KIND_MEMCPY = 1
KIND_MEMSET = 2
KIND_CPU_OP = 3  # CPU path: one row per op, timed by the host clock

KERNEL_DTYPE = np.dtype(
    [
        ("kind", np.uint8),
        ("name_id", np.uint32),
        ("start_ns", np.uint64),
        ("end_ns", np.uint64),
        ("device", np.int32),  # -1 on the CPU path
        ("stream", np.uint32),
        ("correlation_id", np.uint32),
        ("external_id", np.uint64),  # 0: no op was open when it was launched
        ("grid", np.int32, (3,)),
        ("block", np.int32, (3,)),
        ("registers", np.uint16),
        ("shared_mem", np.int32),  # static + dynamic bytes per block
        ("bytes", np.uint64),  # memcpy/memset size, 0 for kernels
    ]
)

# One CUDA runtime/driver API call, as the tracer's RUNTIME/DRIVER activity reports it.
API_DTYPE = np.dtype(
    [
        ("domain", np.uint8),  # 0 runtime, 1 driver
        ("cbid", np.uint32),
        ("start_ns", np.uint64),
        ("end_ns", np.uint64),
        ("thread_id", np.uint32),
        ("correlation_id", np.uint32),
        ("external_id", np.uint64),
    ]
)


@dataclass
class ModuleRecord:
    path: str  # "" for the root, else "blocks.0.attn.qkv"
    cls: str  # class name, e.g. "Linear"
    parent: int  # index into CapturedTrace.modules, -1 for the root
    attrs: dict[str, Any] = field(default_factory=dict)  # e.g. Conv2d groups/kernel_size


@dataclass
class OpRecord:
    external_id: int
    name: str  # aten overload, e.g. "aten.convolution.default"
    module: int  # index into CapturedTrace.modules of the innermost module, -1 if none
    iteration: int = 0
    cpu_start_ns: int = 0  # host clock (time.perf_counter_ns) around the op
    cpu_end_ns: int = 0
    flops: float = 0.0  # from torch.utils.flop_counter formulas; 0 where none applies
    attrs: dict[str, Any] = field(default_factory=dict)  # shape-derived facts (conv groups, ...)
    # "category/subcategory" (or "category") decided when the op ran, for ops read back from a
    # report rather than captured (visprof nsys import reads it from the op's NVTX range);
    # None: attribution classifies the op by its name, modules and attrs.
    category: str | None = None
    # From the op's tensors (visprof.capture.op_costs.OpCost); 0/None in recordings made before them.
    bytes: int = 0  # inputs read once + outputs written once; 0 for views
    param_bytes: int = 0  # the part of `bytes` that is weights: it does not grow with the batch
    tensor_core: str | None = None  # tensor-core precision of its FLOPs ("bf16", "tf32", ...), or None


@dataclass
class CapturedTrace:
    kernels: np.ndarray
    kernel_names: list[str]
    ops: list[OpRecord]
    modules: list[ModuleRecord]
    measurement: str = "gpu"  # "gpu" (CUPTI kernel times) or "cpu" (host clock per op)
    iterations: int = 1
    meta: dict[str, Any] = field(default_factory=dict)

    def kernel_name(self, row: int) -> str:
        return self.kernel_names[int(self.kernels["name_id"][row])]

    def __repr__(self) -> str:
        # The dataclass's repr would print every kernel and op record: 280 kB for a recording of ResNet-50.
        return (f"<CapturedTrace {self.measurement}: {len(self.kernels):,} kernels, {len(self.ops):,} ops, "
                f"{len(self.modules):,} modules, {self.iterations} iteration(s)>")

    # --- (de)serialization for fixtures and replays ---------------------------------------
    def to_dict(self) -> dict[str, Any]:
        columns = {}
        for name in KERNEL_DTYPE.names:
            columns[name] = self.kernels[name].tolist()
        return {
            "schema": TRACE_SCHEMA,
            "measurement": self.measurement,
            "iterations": self.iterations,
            "meta": self.meta,
            "kernel_names": self.kernel_names,
            "kernels": columns,
            "ops": [asdict(op) for op in self.ops],
            "modules": [asdict(m) for m in self.modules],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CapturedTrace":
        if data.get("schema") != TRACE_SCHEMA:
            from visprof.base.errors import BadInputError  # a ValueError too, as this had raised
            from visprof.base.json_documents import CHROME_TRACE, described, mark_of

            unread = "; it is not read back" if mark_of(data) == CHROME_TRACE else ""
            raise BadInputError(f"not a {TRACE_SCHEMA} recording (schema={data.get('schema')!r}){described(data)}{unread}")
        columns = data["kernels"]
        n = len(columns["start_ns"])
        kernels = np.zeros(n, dtype=KERNEL_DTYPE)
        for name in KERNEL_DTYPE.names:
            if name in columns:
                kernels[name] = np.asarray(columns[name], dtype=KERNEL_DTYPE[name].base).reshape(
                    kernels[name].shape
                )
        return cls(
            kernels=kernels,
            kernel_names=list(data["kernel_names"]),
            ops=[OpRecord(**op) for op in data["ops"]],
            modules=[ModuleRecord(**m) for m in data["modules"]],
            measurement=data.get("measurement", "gpu"),
            iterations=int(data.get("iterations", 1)),
            meta=dict(data.get("meta", {})),
        )

    def save(self, path: str | Path) -> None:
        """Writes the recording (gzipped for ``.gz``) atomically: complete, or the previous file."""
        from visprof.base.outputs import atomic_write_json

        atomic_write_json(path, json.dumps(self.to_dict(), separators=(",", ":")), kind="recording")

    @classmethod
    def load(cls, path: str | Path) -> "CapturedTrace":
        """Reads a recording written by ``save`` (plain or gzipped); an unreadable file is a
        BadInputError naming it."""
        from visprof.base.inputs import load_json_file

        from visprof.base.errors import BadInputError

        data = load_json_file(path, "recording")
        if not isinstance(data, dict):
            raise BadInputError(f"recording {path}: expected a JSON object at the top level")
        try:
            return cls.from_dict(data)
        except BadInputError as exc:
            raise BadInputError(f"recording {path}: {exc}") from None


def busy_time_ns(rows: np.ndarray) -> int:
    """Time during which at least one of `rows` ran (union of their intervals), summed over
    devices. Overlapping kernels on several streams count once, unlike their duration sum."""
    total = 0
    for device in np.unique(rows["device"]):
        on_device = rows[rows["device"] == device]
        order = np.argsort(on_device["start_ns"], kind="stable")
        starts = on_device["start_ns"][order].astype(np.int64)
        ends = np.maximum.accumulate(on_device["end_ns"][order].astype(np.int64))
        # A new busy stretch starts where a kernel begins after everything before it ended.
        gaps = np.concatenate(([True], starts[1:] > ends[:-1]))
        first = np.flatnonzero(gaps)
        last = np.concatenate((first[1:] - 1, [len(starts) - 1]))
        total += int((ends[last] - starts[first]).sum())
    return total


def rows_by_iteration(rows: np.ndarray, bounds: list[tuple[int, int]]) -> list[np.ndarray]:
    """The rows that started inside each [begin, end) host-clock interval. Exact for loops
    that synchronize at the end of every iteration, since tracer timestamps are on the host
    clock (CLOCK_MONOTONIC)."""
    return [rows[(rows["start_ns"] >= begin) & (rows["start_ns"] < end)] for begin, end in bounds]


def duration_sum_ns(rows: np.ndarray) -> int:
    return int((rows["end_ns"] - rows["start_ns"]).sum())
