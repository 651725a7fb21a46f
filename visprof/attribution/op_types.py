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
  calls, GPU time, the category most of its time went to and its time by category (a kernel
  such as ATen's elementwise one serves several), the FLOPs and bytes of the ops that launched
  it, and its launch shape (thread blocks per launch, threads per block);
* launch sizes: kernel time by thread blocks per launch. How a kernel's time moves with a
  GPU's SM count depends on it: a launch of fewer blocks than the GPU has SMs cannot use them all.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import re
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from visprof.attribution.attribute import Attribution, durations_ns, library_rows
from visprof.attribution.categories import conv_kind
from visprof.native.records import KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET
from visprof.result import KernelFamilyRow, LaunchSizeRow, OpTypeRow

__all__ = ["op_type_rows", "kernel_family_rows", "launch_size_rows", "kernel_family", "op_type", "GEMM_OPS",
           "INTENSITY_CLASSES", "TRANSFER_FAMILIES"]

GEMM_OPS = re.compile(r"^aten\.(mm|addmm|bmm|baddbmm|matmul|linear|_addmm_activation|addbmm|_scaled_mm)\.")
CONV_OPS = re.compile(r"^aten\.(convolution|_convolution|conv[123]d|conv_transpose[123]d|cudnn_convolution\w*|mkldnn_convolution)\.")
# FLOP/byte boundaries of the GEMM classes: below the first, even a GPU with a low ridge point
# is memory-bound; above the second, tensor-bound on every GPU in visprof/data/gpus.toml.
INTENSITY_CLASSES = ((64.0, "low"), (256.0, "mid"))
# cuDNN's NCHW <-> NHWC copies around a convolution (mangled or demangled names).
LAYOUT_TRANSFORM = re.compile(r"nchwToNhwc|nhwcToNchw")
_TILE = re.compile(r"_(?:tilesize)?\d+x\d+.*$")
# the kernel-family rows of copies, which are no kernels (the bound library cannot measure them)
TRANSFER_FAMILIES = {KIND_MEMCPY: "[memcpy]", KIND_MEMSET: "[memset]"}


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
    _libc().free(ptr)


@lru_cache(maxsize=None)
def _libc():
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    libc.free.argtypes = [ctypes.c_void_p]
    return libc


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
    op_types = [op_type(op.name, op.attrs, op.flops, op.bytes) for op in trace.ops]
    # Rows an op launched take its type; the others (kernels without an op, copies) their family.
    labels = np.asarray(op_types + [""], dtype=object)[attr.op_index]
    unowned = attr.op_index < 0
    labels[unowned] = ["[kernel] " + f if f[0] != "[" else f for f in _row_families(trace)[unowned]]
    grouping = _grouped(attr, labels, extra_keys=op_types)
    keys, groups = grouping.keys, grouping.groups
    calls = np.zeros(len(keys)); flops = np.zeros(len(keys)); nbytes = np.zeros(len(keys))
    index = {key: i for i, key in enumerate(keys)}
    for op, key in zip(trace.ops, op_types):
        i = index[key]
        calls[i] += 1
        flops[i] += op.flops
        nbytes[i] += op.bytes
    # An op type that launched nothing keeps the class its ops were given.
    fallback = {key: int(attr.op_class[i]) for i, key in enumerate(op_types)}
    out = []
    for i, (key, (kernels, ns, share, cls)) in enumerate(zip(keys, groups)):
        if not ns and not flops[i]:
            continue  # views and other ops that run nothing
        c = attr.classes[cls if cls is not None else fallback[key]]
        out.append(OpTypeRow(op_type=key, category=c.category, subcategory=c.subcategory,
                             calls=float(calls[i] / iterations), kernels=kernels / iterations,
                             time_ms=ns / iterations / 1e6, share=share,
                             gflop=float(flops[i] / iterations / 1e9), mb=float(nbytes[i] / iterations / 1e6)))
    out.sort(key=lambda r: (-r.time_ms, r.op_type))
    return out


def kernel_family_rows(attr: Attribution) -> list[KernelFamilyRow]:
    """One row per kernel family (memcpy and memset as their own rows), costliest first, per
    iteration, with the FLOPs and bytes of the ops that launched it and its launch shape."""
    trace, iterations = attr.trace, max(attr.trace.iterations, 1)
    keys, groups, ids, dur, key_names, ns_by_key = _grouped(attr, _row_families(trace))
    flops, nbytes = _row_work(attr, dur)
    gflop = np.bincount(ids, weights=flops, minlength=len(keys)) / iterations / 1e9
    mb = np.bincount(ids, weights=nbytes, minlength=len(keys)) / iterations / 1e6
    launched = _is_launch(trace)
    blocks = _weighted_medians(ids, launched, trace.kernels["grid"], dur, len(keys))
    threads = _weighted_medians(ids, launched, trace.kernels["block"], dur, len(keys))
    by_category = _ms_by_key(key_names, ns_by_key / iterations / 1e6)
    out = [KernelFamilyRow(family=key, category=attr.classes[cls].category, subcategory=attr.classes[cls].subcategory,
                           calls=kernels / iterations, time_ms=ns / iterations / 1e6, share=share,
                           gflop=float(gflop[i]), mb=float(mb[i]), blocks=blocks[i], threads=threads[i],
                           by_category=by_category[i])
           for i, (key, (kernels, ns, share, cls)) in enumerate(zip(keys, groups))]
    out.sort(key=lambda r: (-r.time_ms, r.family))
    return out


def _ms_by_key(names: list[str], ms: np.ndarray) -> list[dict[str, float]]:
    """Per group (a row of the groups x keys matrix ``ms``), its keys with time, most first (ties
    by key)."""
    return [dict(sorted(((names[j], float(row[j])) for j in np.flatnonzero(row > 0)), key=lambda kv: (-kv[1], kv[0])))
            for row in ms]


def launch_size_rows(attr: Attribution, sm_count: int | None = None) -> list[LaunchSizeRow]:
    """Kernel time by thread blocks per launch, in power-of-two bins (1, 2-3, 4-7, ...), per
    iteration; only bins with launches. With ``sm_count``, launches of exactly that many blocks
    (persistent kernels sized to the GPU) are a row of their own, in order among the bins.
    Copies and host-timed ops have no launch shape."""
    trace, iterations = attr.trace, max(attr.trace.iterations, 1)
    launched = _is_launch(trace)
    if not launched.any():
        return []
    blocks = trace.kernels["grid"][launched].astype(np.int64).prod(axis=1)
    dur = durations_ns(trace).astype(np.float64)[launched]
    total = float(dur.sum()) or 1.0
    per_sm = blocks == sm_count if sm_count else np.zeros(len(blocks), dtype=bool)
    bins = np.floor(np.log2(np.maximum(blocks[~per_sm], 1))).astype(np.int64)
    counts, ns = np.bincount(bins), np.bincount(bins, weights=dur[~per_sm])
    rows = [LaunchSizeRow(blocks_min=2 ** b, blocks_max=2 ** (b + 1) - 1, kernels=float(counts[b] / iterations),
                          time_ms=float(ns[b] / iterations / 1e6), share=float(ns[b] / total))
            for b in np.flatnonzero(counts).tolist()]
    if per_sm.any():
        ns_per_sm = float(dur[per_sm].sum())
        rows.append(LaunchSizeRow(blocks_min=int(sm_count), blocks_max=int(sm_count),
                                  kernels=int(per_sm.sum()) / iterations, time_ms=ns_per_sm / iterations / 1e6,
                                  share=ns_per_sm / total, one_per_sm=True))
        rows.sort(key=lambda r: (r.blocks_min, r.one_per_sm))
    return rows


def _is_launch(trace) -> np.ndarray:
    """Rows that are kernel launches with a recorded grid (not copies, not host-timed ops)."""
    k = trace.kernels
    return (k["kind"] == KIND_KERNEL) & (k["grid"].min(axis=1) > 0) & (k["block"].min(axis=1) > 0)


def _row_work(attr: Attribution, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """FLOPs and bytes per row, from the op that launched it.

    Only rows of the op's own class take part: a convolution's memset (classed memory by its
    row rule) is not the convolution's work. An op none of whose rows has its class (a view-like
    op whose copy is classed memory) uses all of them. The bytes are split over those rows by
    time: each reads and writes the op's tensors. The FLOPs go to the longest of them that can
    be math: library work (not a copy, nor an ATen pointwise kernel such as a bias add) and not
    a cuDNN layout transform, which around a small convolution can outlast the GEMM; to the
    longest row when none can."""
    trace = attr.trace
    n_ops = len(trace.ops)
    flops, nbytes = np.zeros(len(dur)), np.zeros(len(dur))
    has_op = attr.op_index >= 0
    if not n_ops or not has_op.any():
        return flops, nbytes
    op_of = np.where(has_op, attr.op_index, 0)
    own = has_op & (attr.kernel_class == attr.op_class[op_of])
    ops_with_own = np.bincount(op_of[own], minlength=n_ops) > 0
    taking = has_op & (own | ~ops_with_own[op_of])
    rows = np.flatnonzero(taking)
    op_ns = np.bincount(op_of[rows], weights=dur[rows], minlength=n_ops)
    op_flops = np.fromiter((op.flops for op in trace.ops), dtype=np.float64, count=n_ops)
    op_bytes = np.fromiter((op.bytes for op in trace.ops), dtype=np.float64, count=n_ops)
    ops = op_of[rows]
    nbytes[rows] = np.divide(dur[rows] * op_bytes[ops], op_ns[ops], out=np.zeros(len(rows)), where=op_ns[ops] > 0)
    # the longest row of each op, math rows first: sorted by (op, can be math, duration), the last of each op
    names = np.array([not LAYOUT_TRANSFORM.search(n) for n in trace.kernel_names] or [True])
    math = library_rows(trace) & names[trace.kernels["name_id"]]
    order = rows[np.lexsort((dur[rows], math[rows], ops))]
    last = np.r_[op_of[order][1:] != op_of[order][:-1], True]
    flops[order[last]] = op_flops[op_of[order[last]]]
    return flops, nbytes


def _weighted_medians(ids: np.ndarray, mask: np.ndarray, dims: np.ndarray, weights: np.ndarray,
                      groups: int) -> list[float | None]:
    """Per group, the median of ``dims``' product (x * y * z) over the rows in ``mask``, each row
    weighted by ``weights`` (the value at which half the group's weight is reached); None for a
    group without such rows."""
    out: list[float | None] = [None] * groups
    rows = np.flatnonzero(mask)
    if not len(rows):
        return out
    values = dims[rows].astype(np.int64).prod(axis=1)
    group_of, w = ids[rows], weights[rows]
    for group in np.unique(group_of):
        mine = group_of == group
        # inverted_cdf: the smallest value whose launches reach half the group's time (all equal: the smallest)
        out[int(group)] = (float(np.quantile(values[mine], 0.5, weights=w[mine], method="inverted_cdf"))
                           if w[mine].sum() > 0 else float(values[mine].min()))
    return out


def _row_families(trace) -> np.ndarray:
    """The family of every row (object array): demangled and stripped once per distinct name."""
    kinds, name_ids = trace.kernels["kind"], trace.kernels["name_id"].astype(np.int64)
    families = np.empty(len(kinds), dtype=object)
    for name_id in np.unique(name_ids):
        name = trace.kernel_names[name_id] if 0 <= name_id < len(trace.kernel_names) else "?"
        families[name_ids == name_id] = kernel_family(name)
    for kind, label in TRANSFER_FAMILIES.items():
        families[kinds == kind] = label
    return families


class _Grouping(NamedTuple):
    keys: list[str]  # the labels, first seen first, then ``extra_keys`` not seen
    # per key: (rows, ns, share of all rows' time, a class of the category key that took most of
    # its time or None without rows)
    groups: list[tuple[int, float, float, int | None]]
    ids: np.ndarray  # each trace row's key index
    dur: np.ndarray  # each trace row's ns
    key_names: list[str]  # the category keys, in the class table's order
    ns_by_key: np.ndarray  # keys x category keys


def _grouped(attr: Attribution, labels: np.ndarray, extra_keys=()) -> _Grouping:
    """The trace's rows grouped by label (``_Grouping``)."""
    dur = durations_ns(attr.trace).astype(np.float64)
    index = {key: i for i, key in enumerate(dict.fromkeys([*labels.tolist(), *extra_keys]))}
    keys = list(index)
    ids = np.fromiter((index[k] for k in labels), dtype=np.int64, count=len(labels))
    counts = np.bincount(ids, minlength=len(keys))
    ns = np.bincount(ids, weights=dur, minlength=len(keys))
    names, first_class, by_key = _ns_by_key(attr, ids, dur, len(keys))
    total = float(dur.sum()) or 1.0
    # ties go to the key seen first in the class table
    groups = [(int(counts[i]), float(ns[i]), float(ns[i]) / total,
               int(first_class[by_key[i].argmax()]) if counts[i] else None) for i in range(len(keys))]
    return _Grouping(keys, groups, ids, dur, names, by_key)


def _ns_by_key(attr: Attribution, ids: np.ndarray, dur: np.ndarray, groups: int):
    """Per group of rows (``ids``), its ns by the key ("category" or "category/subcategory") of
    the class each row was attributed to: (the keys in the class table's order, the first class of
    each key, a groups x keys matrix). Classes of one key matched by different rules (attention/core
    by "sdpa" and by "inside-attention-module") are one key: a row's category is where most of its
    time went, not which rule took most of it."""
    class_keys = [c.key for c in attr.classes]
    names = list(dict.fromkeys(class_keys))
    key_of_class = np.array([names.index(k) for k in class_keys], dtype=np.int64)
    first_class = np.array([class_keys.index(n) for n in names], dtype=np.int64)
    ns = np.zeros((groups, len(names)))
    np.add.at(ns, (ids, key_of_class[attr.kernel_class]), dur)
    return names, first_class, ns
