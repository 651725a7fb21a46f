"""What an architecture runs: GPU time per aten op type and per kernel family.

Coarse categories do not say why two models of one category scale differently between GPUs
(a group norm and a batch norm are both "normalization"; a depthwise and a dense convolution
both "convolution"). These tables keep what each model runs, as ``torch.profiler``'s
``key_averages()`` and ``nsys stats --report cuda_gpu_kern_sum`` do:

* op types: the aten op, with convolutions split by kind (dense, depthwise, pointwise,
  grouped) and GEMMs by arithmetic-intensity class (``low`` < 64 FLOP/byte <= ``mid`` < 256 <=
  ``high``), with calls, kernels, GPU time, FLOPs, bytes and category per iteration;
* kernel families: the kernel name with template arguments, parameter lists and tile
  configurations stripped (``nvjet_tst_128x256_64x4_2x1_v_bz_TNT`` -> ``nvjet_tst``), with
  calls, GPU time and the category most of its time went to.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import re
from collections import defaultdict
from functools import lru_cache

import numpy as np

from visprof.attribution.attribute import Attribution, durations_ns
from visprof.attribution.categories import conv_kind
from visprof.native.records import KIND_MEMCPY, KIND_MEMSET
from visprof.result import KernelFamilyRow, OpTypeRow

__all__ = ["op_type_rows", "kernel_family_rows", "kernel_family", "op_type", "GEMM_OPS"]

GEMM_OPS = re.compile(r"^aten\.(mm|addmm|bmm|baddbmm|matmul|linear|_addmm_activation|addbmm|_scaled_mm)\.")
CONV_OPS = re.compile(r"^aten\.(convolution|_convolution|conv[123]d|cudnn_convolution\w*|mkldnn_convolution)\.")
# FLOP/byte boundaries of the GEMM classes: below the first, even a GPU with a low ridge point
# is memory-bound; above the second, tensor-bound on every GPU in visprof/data/gpus.toml.
INTENSITY_CLASSES = ((64.0, "low"), (256.0, "mid"))
_TILE = re.compile(r"_(?:tilesize)?\d+x\d+.*$")
_TRANSFER_NAMES = {KIND_MEMCPY: "[memcpy]", KIND_MEMSET: "[memset]"}


def op_type(name: str, attrs: dict | None, flops: float, nbytes: float) -> str:
    """The op's type: its aten name, with the kind of convolution or the GEMM's class."""
    if CONV_OPS.search(name):
        attrs = attrs or {}
        kind = conv_kind(attrs)
        groups, channels = attrs.get("groups") or 1, attrs.get("in_channels")
        if kind == "dense" and groups > 1 and groups != channels:
            kind = "grouped"
        return f"{name} [{kind or 'unknown kind'}]"
    if GEMM_OPS.search(name):
        if not flops or not nbytes:
            return f"{name} [intensity unknown]"
        intensity = flops / nbytes
        label = next((cls for bound, cls in INTENSITY_CLASSES if intensity < bound), "high")
        return f"{name} [{label} intensity]"
    return name


@lru_cache(maxsize=None)
def _cxa_demangle():
    """libstdc++'s demangler (CUPTI reports kernels by their mangled names), or None."""
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
        fn = lib.__cxa_demangle
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_int)]
    return fn


@lru_cache(maxsize=4096)
def demangle(name: str) -> str:
    """``_ZN2at6native...`` -> ``void at::native::...(...)``; other names as they are."""
    fn = _cxa_demangle()
    if fn is None or not name.startswith("_Z"):
        return name
    status = ctypes.c_int()
    ptr = fn(name.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not ptr:
        return name
    try:
        return ctypes.string_at(ptr).decode(errors="replace")
    finally:
        _libc_free(ptr)


def _libc_free(ptr: int) -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    libc.free.argtypes = [ctypes.c_void_p]
    libc.free(ptr)


def kernel_family(name: str) -> str:
    """A kernel's family: its (demangled) name without return type, template arguments,
    parameter list, anonymous namespaces or tile sizes. Generic launchers (``cutlass::Kernel2<K>``,
    ``cutlass::device_kernel<K>``) are named by the kernel they launch."""
    text = re.sub(r"^void\s+", "", demangle(name.strip()))
    text = re.sub(r"\(anonymous namespace\)::|_GLOBAL__N__\w+::", "", text)
    base, first_argument = _strip_templates(text)
    base = base.split("(", 1)[0].strip() or text  # parameter list
    if _LAUNCHER.search(base) and first_argument:
        return kernel_family(first_argument)
    return _TILE.sub("", base) or base


_LAUNCHER = re.compile(r"(^|::)(Kernel2?|device_kernel)$")


def _strip_templates(text: str) -> tuple[str, str]:
    """(text without anything inside <...>, the first top-level template argument)."""
    out, first, depth, in_first = [], [], 0, False
    for ch in text:
        if ch == "<":
            depth += 1
            in_first = depth == 1 and not first
            continue
        if ch == ">":
            depth = max(depth - 1, 0)
            in_first = in_first and depth > 0
            continue
        if depth == 0:
            out.append(ch)
        elif in_first:
            if depth == 1 and ch == ",":
                in_first = False
            else:
                first.append(ch)
    return "".join(out), "".join(first).strip()


def op_type_rows(attr: Attribution) -> list[OpTypeRow]:
    """One row per op type that launched kernels or counted FLOPs, costliest first, per iteration."""
    trace, iterations = attr.trace, max(attr.trace.iterations, 1)
    dur = durations_ns(trace)
    rows: dict[str, dict] = defaultdict(lambda: {"calls": 0, "kernels": 0, "ns": 0.0, "flops": 0.0, "bytes": 0.0,
                                                 "category": None})
    types = [op_type(op.name, op.attrs, op.flops, op.bytes) for op in trace.ops]
    for i, op in enumerate(trace.ops):
        row = rows[types[i]]
        row["calls"] += 1
        row["flops"] += op.flops
        row["bytes"] += op.bytes
        row.setdefault("classes", defaultdict(float))
    kinds = trace.kernels["kind"]
    for r in np.flatnonzero(attr.op_index >= 0):
        key = types[int(attr.op_index[r])]
        rows[key]["kernels"] += 1
        rows[key]["ns"] += float(dur[r])
        rows[key].setdefault("classes", defaultdict(float))[int(attr.kernel_class[r])] += float(dur[r])
    for r in np.flatnonzero(attr.op_index < 0):  # rows no op launched: by kernel family
        name = _TRANSFER_NAMES.get(int(kinds[r])) or "[kernel] " + kernel_family(_name(trace, r))
        rows[name]["kernels"] += 1
        rows[name]["ns"] += float(dur[r])
        rows[name].setdefault("classes", defaultdict(float))[int(attr.kernel_class[r])] += float(dur[r])
    for i, op in enumerate(trace.ops):  # ops without kernels keep the class they were given
        rows[types[i]].setdefault("classes", defaultdict(float))[int(attr.op_class[i])] += 0.0
    total = float(dur.sum()) or 1.0
    out = []
    for key, row in rows.items():
        if not row["ns"] and not row["flops"]:
            continue  # views and other ops that run nothing
        cls = attr.classes[max(row["classes"], key=lambda c: (row["classes"][c], -c))] if row["classes"] else None
        out.append(OpTypeRow(
            op_type=key, category=cls.category if cls else "other", subcategory=cls.subcategory if cls else None,
            calls=row["calls"] / iterations, kernels=row["kernels"] / iterations,
            time_ms=row["ns"] / iterations / 1e6, share=row["ns"] / total,
            gflop=row["flops"] / iterations / 1e9, mb=row["bytes"] / iterations / 1e6))
    out.sort(key=lambda r: (-r.time_ms, r.op_type))
    return out


def kernel_family_rows(attr: Attribution) -> list[KernelFamilyRow]:
    """One row per kernel family (memcpy and memset as their own rows), costliest first, per iteration."""
    trace, iterations = attr.trace, max(attr.trace.iterations, 1)
    dur = durations_ns(trace)
    kinds = trace.kernels["kind"]
    calls: dict[str, int] = defaultdict(int)
    ns: dict[str, float] = defaultdict(float)
    by_class: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    family_of_name: dict[int, str] = {}
    for r in range(len(trace.kernels)):
        kind = int(kinds[r])
        if kind in _TRANSFER_NAMES:
            family = _TRANSFER_NAMES[kind]
        else:
            name_id = int(trace.kernels["name_id"][r])
            family = family_of_name.get(name_id)
            if family is None:
                family = family_of_name[name_id] = kernel_family(_name(trace, r))
        calls[family] += 1
        ns[family] += float(dur[r])
        by_class[family][int(attr.kernel_class[r])] += float(dur[r])
    total = float(dur.sum()) or 1.0
    out = []
    for family in ns:
        classes = by_class[family]
        cls = attr.classes[max(classes, key=lambda c: (classes[c], -c))]
        out.append(KernelFamilyRow(family=family, category=cls.category, subcategory=cls.subcategory,
                                   calls=calls[family] / iterations, time_ms=ns[family] / iterations / 1e6,
                                   share=ns[family] / total))
    out.sort(key=lambda r: (-r.time_ms, r.family))
    return out


def _name(trace, row: int) -> str:
    name_id = int(trace.kernels["name_id"][row])
    return trace.kernel_names[name_id] if 0 <= name_id < len(trace.kernel_names) else "?"
