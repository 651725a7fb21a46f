"""Attribution: which op, module and category each recorded row belongs to, and the totals.

Plain functions over a ``CapturedTrace``: ``attribute`` joins kernels -> ops -> modules ->
categories once and returns an ``Attribution``; the aggregation functions below read it.

Conventions (docs/result-schema.md):

* Everything is per iteration: totals are divided by ``trace.iterations``.
* The time of a row is its duration. Kernels that overlap on several streams each count in
  full, so category times add up to the kernel-time sum, not to the wall time; shares are
  fractions of the activity time (kernels + memcpy + memset).
* A row is attributed by its op when its external id names a recorded op ("op"), else by
  a kernel-name/kind rule ("kernel-name"), else not at all ("none": unattributed).
  memcpy/memset rows try the row rules first: a copy-engine transfer is memory traffic
  whichever op issued it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from visprof.attribution.categories import UNATTRIBUTED_ROW, CategoryTable, Classification, OTHER, UNATTRIBUTED
from visprof.attribution.named_attention import attention_by_name_only
from visprof.native.records import KIND_CPU_OP, KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, CapturedTrace, ModuleRecord
from visprof.native.records import busy_time_ns as union_time_ns  # union of row intervals, summed over devices
from visprof.result import AttributionSummary, CategoryRow, MemorySummary, ModuleRow, NamedTime

HOW_NONE, HOW_OP, HOW_KERNEL_NAME = 0, 1, 2
HOW_LABELS = ("none", "op", "kernel-name")
# Rows that count as "kernel time": GPU kernels, or host-timed ops on the CPU path.
COMPUTE_KINDS = (KIND_KERNEL, KIND_CPU_OP)
# ATen's own pointwise kernels. Inside a GEMM/conv/attention op they are not its library work:
# a convolution with a bias adds it in a second kernel (an eager ConvNeXt-T on the H200 runs two
# kernels per depthwise convolution, 36 for 18; CoAtNet-0's bias adds take 0.85 ms), which a
# compiled graph fuses elsewhere. ATen's own convolution kernels (conv_depthwise2d) do not match.
ATEN_POINTWISE_KERNEL = re.compile(r"^_ZN2at6native\d+(?:vectorized_|unrolled_)?elementwise_kernel")
TRANSFER_KINDS = (KIND_MEMCPY, KIND_MEMSET)
NS_PER_MS = 1e6


@dataclass
class Attribution:
    """Per-row attribution of one trace. Arrays have one entry per ``trace.kernels`` row."""

    trace: CapturedTrace
    table: CategoryTable
    classes: list[Classification]  # distinct classifications; index 0 is unattributed
    kernel_class: np.ndarray  # int32 index into ``classes``
    op_index: np.ndarray  # int32 index into trace.ops, -1 when the row has no known op
    module_index: np.ndarray  # int32 index into trace.modules, -1 when none
    how: np.ndarray  # uint8: HOW_NONE / HOW_OP / HOW_KERNEL_NAME
    op_class: np.ndarray  # int32 index into ``classes``, one per trace.ops entry

    def classification(self, row: int) -> Classification:
        return self.classes[int(self.kernel_class[row])]

    def op_classification(self, op: int) -> Classification:
        return self.classes[int(self.op_class[op])]

    def categories(self) -> np.ndarray:
        """Category id per row (object array)."""
        return np.array([c.category for c in self.classes], dtype=object)[self.kernel_class]

    # helpers the orchestration calls; the logic lives in the module-level functions
    def category_rows(self, memory: MemorySummary | None = None) -> list[CategoryRow]:
        return category_rows(self, memory)

    def module_rows(self, top: int | None = 15, include_root: bool = False) -> list[ModuleRow]:
        return module_rows(self, top, include_root)

    def summary(self, top: int = 10) -> AttributionSummary:
        return summarize(self, top)


# --- the join ----------------------------------------------------------------------------
def module_chains(modules: Sequence[ModuleRecord], renamed: dict[int, str] | None = None) -> list[tuple[str, ...]]:
    """Class names from each module up to the root, innermost first; ``renamed`` gives some
    modules the name their rules see instead of their class's."""
    renamed = renamed or {}
    chains: list[tuple[str, ...] | None] = [None] * len(modules)

    def chain(i: int) -> tuple[str, ...]:
        pending = []
        while i >= 0 and chains[i] is None:
            pending.append(i)
            i = modules[i].parent
        tail = chains[i] if i >= 0 else ()
        for j in reversed(pending):
            tail = chains[j] = (renamed.get(j, modules[j].cls), *tail)
        return tail

    return [chain(i) for i in range(len(modules))]


def op_index_of_rows(trace: CapturedTrace) -> np.ndarray:
    """Index into ``trace.ops`` of each row's op (by external id), -1 for none or unknown.

    External ids are unique per op; if a recording repeats one, the first op wins.
    """
    ext = np.fromiter((op.external_id for op in trace.ops), dtype=np.uint64, count=len(trace.ops))
    row_ext = trace.kernels["external_id"]
    if len(ext) == 0:
        return np.full(len(row_ext), -1, dtype=np.int32)
    order = np.argsort(ext, kind="stable")
    sorted_ext = ext[order]
    pos = np.minimum(np.searchsorted(sorted_ext, row_ext), len(ext) - 1)
    found = (sorted_ext[pos] == row_ext) & (row_ext != 0)
    return np.where(found, order[pos], -1).astype(np.int32)


def attribute(trace: CapturedTrace, table: CategoryTable | None = None) -> Attribution:
    """Attribute every row of ``trace`` to an op, a module and a category."""
    table = table or CategoryTable.default()
    classes: list[Classification] = [UNATTRIBUTED_ROW]
    class_ids: dict[Classification, int] = {UNATTRIBUTED_ROW: 0}

    def class_id(c: Classification) -> int:
        if c not in class_ids:
            class_ids[c] = len(classes)
            classes.append(c)
        return class_ids[c]

    # Ops: one classification each; the table's cache makes repeats of a layer free. An op
    # that carries the category decided when it ran (imported from NVTX ranges) keeps it.
    ran = ((op.name, op.module) for op in trace.ops)
    chains = module_chains(trace.modules, attention_by_name_only(trace.modules, ran, table))

    def classify(op) -> Classification:
        if op.category is not None:
            category, _, subcategory = op.category.partition("/")
            return Classification(category, subcategory or None, "recorded")
        return table.classify_op(op.name, chains[op.module] if op.module >= 0 else (), op.attrs)

    op_class = np.fromiter((class_id(classify(op)) for op in trace.ops), dtype=np.int32, count=len(trace.ops))
    op_module = np.fromiter((op.module for op in trace.ops), dtype=np.int32, count=len(trace.ops))

    rows = trace.kernels
    op_index = op_index_of_rows(trace)
    has_op = op_index >= 0
    kernel_class = np.zeros(len(rows), dtype=np.int32)
    how = np.full(len(rows), HOW_NONE, dtype=np.uint8)
    kernel_class[has_op] = op_class[op_index[has_op]]
    how[has_op] = HOW_OP
    module_index = np.full(len(rows), -1, dtype=np.int32)
    module_index[has_op] = op_module[op_index[has_op]]

    # Row rules: for rows without an op, and first for memcpy/memset rows. Each distinct
    # (name, kind) is classified once.
    by_name = np.flatnonzero(~has_op | np.isin(rows["kind"], TRANSFER_KINDS))
    if len(by_name):
        keys = np.stack([rows["name_id"][by_name].astype(np.int64), rows["kind"][by_name].astype(np.int64)], axis=1)
        distinct, inverse = np.unique(keys, axis=0, return_inverse=True)
        matched = [table.classify_kernel(trace.kernel_names[int(n)], int(k)) for n, k in distinct]
        ids = np.array([-1 if c is None else class_id(c) for c in matched], dtype=np.int32)[inverse.reshape(-1)]
        hit = ids >= 0
        kernel_class[by_name[hit]] = ids[hit]
        how[by_name[hit]] = HOW_KERNEL_NAME

    return Attribution(trace, table, classes, kernel_class, op_index, module_index, how, op_class)


# --- time totals -------------------------------------------------------------------------
def durations_ns(trace: CapturedTrace) -> np.ndarray:
    """Duration of each row in ns (int64; a row that ends before it starts counts 0)."""
    k = trace.kernels
    return np.maximum(k["end_ns"].astype(np.int64) - k["start_ns"].astype(np.int64), 0)


def _kind_mask(trace: CapturedTrace, kinds: Iterable[int]) -> np.ndarray:
    return np.isin(trace.kernels["kind"], tuple(kinds))


def kernel_time_ns(trace: CapturedTrace, kinds: Iterable[int] = COMPUTE_KINDS, per_iteration: bool = True) -> float:
    """Sum of row durations of the given kinds (default: kernels; memcpy/memset excluded)."""
    total = float(durations_ns(trace)[_kind_mask(trace, kinds)].sum())
    return total / trace.iterations if per_iteration else total


def busy_time_ns(trace: CapturedTrace, kinds: Iterable[int] = COMPUTE_KINDS, per_iteration: bool = True) -> dict[int, float]:
    """Per device: time during which at least one row of the given kinds ran."""
    k = trace.kernels[_kind_mask(trace, kinds)]
    out = {}
    for device in np.unique(k["device"]):
        busy = float(union_time_ns(k[k["device"] == device]))
        out[int(device)] = busy / trace.iterations if per_iteration else busy
    return out


def span_ns(trace: CapturedTrace, kinds: Iterable[int] = COMPUTE_KINDS) -> int:
    """First start to last end of the given kinds, over the whole recording."""
    k = trace.kernels[_kind_mask(trace, kinds)]
    if len(k) == 0:
        return 0
    return int(k["end_ns"].max()) - int(k["start_ns"].min())


# --- aggregation -------------------------------------------------------------------------
def _buckets(attr: Attribution) -> tuple[list[tuple[str, str | None]], np.ndarray]:
    """Distinct (category, subcategory) pairs, and the bucket of each class."""
    pairs: list[tuple[str, str | None]] = []
    of_class = np.empty(len(attr.classes), dtype=np.int32)
    for i, c in enumerate(attr.classes):
        pair = (c.category, c.subcategory)
        if pair not in pairs:
            pairs.append(pair)
        of_class[i] = pairs.index(pair)
    return pairs, of_class


def _split_key(key: str) -> tuple[str, str | None]:
    cat, _, sub = key.partition("/")
    return cat, sub or None


def library_rows(trace: CapturedTrace) -> np.ndarray:
    """Rows that can be an op's library work (bool per row): compute rows, not memsets, copies
    or ATen's own pointwise kernels (a bias add or layout copy inside a GEMM or convolution)."""
    pointwise_names = np.array([bool(ATEN_POINTWISE_KERNEL.match(n)) for n in trace.kernel_names] or [False])
    return np.isin(trace.kernels["kind"], COMPUTE_KINDS) & ~pointwise_names[trace.kernels["name_id"]]


def category_rows(attr: Attribution, memory: MemorySummary | None = None) -> list[CategoryRow]:
    """One row per (category, sub-category) that has time or FLOPs, in table order.

    Memory fields come from ``memory``, keyed "category/subcategory" (or "category" for a
    category without sub-category rows). A category-level figure for a category that has
    sub-category rows belongs to its total (``ProfileResult.category_totals``), not to a
    row. A key with no time gets a row of its own (e.g. memory held by "other" ops).
    """
    trace, it = attr.trace, attr.trace.iterations
    pairs, of_class = _buckets(attr)
    dur = durations_ns(trace)
    bucket = of_class[attr.kernel_class]
    time_ns = np.bincount(bucket, weights=dur, minlength=len(pairs))
    count = np.bincount(bucket, minlength=len(pairs))
    op_flops = np.fromiter((op.flops for op in trace.ops), dtype=np.float64, count=len(trace.ops))
    flops = np.bincount(of_class[attr.op_class], weights=op_flops, minlength=len(pairs))
    op_bytes = np.fromiter((op.bytes for op in trace.ops), dtype=np.float64, count=len(trace.ops))
    moved = np.bincount(of_class[attr.op_class], weights=op_bytes, minlength=len(pairs))
    has_op = attr.op_index >= 0
    of_flop_op = np.zeros(len(dur), dtype=bool)
    of_flop_op[has_op] = op_flops[attr.op_index[has_op]] > 0
    of_flop_op &= library_rows(trace)
    flop_time_ns = np.bincount(bucket[of_flop_op], weights=dur[of_flop_op], minlength=len(pairs))
    total = float(dur.sum())

    measured = {pairs[i]: i for i in np.flatnonzero((count > 0) | (flops > 0))}
    keyed = list(measured)
    memory_keys = [] if memory is None else [*memory.by_category_at_peak, *memory.transient_peak_by_category,
                                             *memory.reserved_by_category_at_peak]
    for key in memory_keys:
        cat, sub = _split_key(key)
        if (cat, sub) not in keyed and (sub is not None or all(c != cat for c, _ in keyed)):
            keyed.append((cat, sub))

    def memory_of(table: dict[str, int] | None, cat: str, sub: str | None) -> int | None:
        return None if table is None else table.get(f"{cat}/{sub}" if sub else cat)

    fused = _fused_ms(attr, bucket, pairs, dur)
    rows = []
    for cat, sub in keyed:
        i = measured.get((cat, sub))
        t_ns = float(time_ns[i]) if i is not None else 0.0
        t = t_ns / it
        f = float(flops[i]) / it if i is not None else 0.0
        nbytes = float(moved[i]) / it if i is not None else 0.0
        rows.append(
            CategoryRow(
                category=cat,
                subcategory=sub,
                time_ms=t / NS_PER_MS,
                share=t_ns / total if total > 0 else 0.0,
                kernel_count=float(count[i]) / it if i is not None else 0.0,
                flops=f,
                # flop/ns = 1e9 flop/s, so /1e3 gives TFLOP/s; None where no FLOPs are counted
                tflops=f / t / 1e3 if t > 0 and f > 0 else None,
                live_bytes_at_peak=memory_of(memory and memory.by_category_at_peak, cat, sub),
                transient_peak_bytes=memory_of(memory and memory.transient_peak_by_category, cat, sub),
                reserved_bytes_at_peak=memory_of(memory and memory.reserved_by_category_at_peak, cat, sub),
                fused=fused.get(i, {}) if i is not None else {},
                bytes=nbytes,
                gbps=nbytes / t if t > 0 and nbytes > 0 else None,  # t is in ns here, and byte/ns = GB/s
                flop_time_ms=float(flop_time_ns[i]) / it / NS_PER_MS if i is not None else 0.0,
            )
        )
    rows.sort(key=lambda r: attr.table.sort_key(r.category, r.subcategory))
    return rows


def _fused_ms(attr: Attribution, bucket: np.ndarray, pairs: list, dur: np.ndarray) -> dict[int, dict[str, float]]:
    """Per bucket: ms per iteration of its kernels whose op records work fused into them
    (``attrs["fused"]``, set for compiled kernels), by the fused work's category key."""
    ops = attr.trace.ops
    fused_of = {i: tuple(op.attrs["fused"]) for i, op in enumerate(ops) if op.attrs.get("fused")}
    out: dict[int, dict[str, float]] = {}
    if not fused_of:
        return out
    rows = np.flatnonzero(np.isin(attr.op_index, np.fromiter(fused_of, dtype=np.int32, count=len(fused_of))))
    it = attr.trace.iterations
    for row in rows:
        keys = fused_of[int(attr.op_index[row])]
        own = pairs[int(bucket[row])]
        own_key = f"{own[0]}/{own[1]}" if own[1] else own[0]
        target = out.setdefault(int(bucket[row]), {})
        for key in keys:
            if key != own_key:
                target[key] = target.get(key, 0.0) + float(dur[row]) / it / NS_PER_MS
    return out


def _inclusive(per_module: np.ndarray, modules: Sequence[ModuleRecord]) -> np.ndarray:
    """Add each module's values into all its ancestors (deepest modules first)."""
    depth = np.array([len(c) for c in module_chains(modules)], dtype=np.int64)
    out = per_module.astype(np.float64, copy=True)
    for m in np.argsort(-depth, kind="stable"):
        parent = modules[m].parent
        if parent >= 0:
            out[parent] += out[m]
    return out


def module_category_ns(attr: Attribution) -> tuple[list[tuple[str, str | None]], np.ndarray]:
    """Inclusive time (ns, whole recording) per module and bucket: shape (modules, buckets)."""
    pairs, of_class = _buckets(attr)
    nm = len(attr.trace.modules)
    in_module = attr.module_index >= 0
    flat = attr.module_index[in_module].astype(np.int64) * len(pairs) + of_class[attr.kernel_class[in_module]]
    self_ns = np.bincount(flat, weights=durations_ns(attr.trace)[in_module], minlength=nm * len(pairs))
    return pairs, _inclusive(self_ns.reshape(nm, len(pairs)), attr.trace.modules)


def module_rows(attr: Attribution, top: int | None = 15, include_root: bool = False) -> list[ModuleRow]:
    """Modules by inclusive time, largest first. The root is left out by default: it is the total."""
    trace, it = attr.trace, attr.trace.iterations
    nm = len(trace.modules)
    in_module = attr.module_index >= 0
    idx = attr.module_index[in_module]
    dur = durations_ns(trace)
    self_ns = np.bincount(idx, weights=dur[in_module], minlength=nm)
    self_count = np.bincount(idx, minlength=nm)
    incl_ns = _inclusive(self_ns, trace.modules)
    incl_count = _inclusive(self_count, trace.modules)
    total = float(dur.sum())
    candidates = [m for m in range(nm) if incl_count[m] > 0 and (include_root or trace.modules[m].parent >= 0)]
    candidates.sort(key=lambda m: (-incl_ns[m], trace.modules[m].path))
    return [
        ModuleRow(
            path=trace.modules[m].path,
            cls=trace.modules[m].cls,
            time_ms=float(incl_ns[m]) / it / NS_PER_MS,
            self_time_ms=float(self_ns[m]) / it / NS_PER_MS,
            share=float(incl_ns[m]) / total if total > 0 else 0.0,
            kernel_count=float(incl_count[m]) / it,
        )
        for m in candidates[:top]
    ]


def _named_times(names: np.ndarray, dur: np.ndarray, iterations: int, top: int | None) -> list[NamedTime]:
    """Group rows by name; largest total time first."""
    if len(names) == 0:
        return []
    distinct, inverse = np.unique(names, return_inverse=True)
    inverse = inverse.reshape(-1)
    time_ns = np.bincount(inverse, weights=dur, minlength=len(distinct))
    count = np.bincount(inverse, minlength=len(distinct))
    order = sorted(range(len(distinct)), key=lambda i: (-time_ns[i], str(distinct[i])))[:top]
    return [NamedTime(str(distinct[i]), float(time_ns[i]) / iterations / NS_PER_MS, float(count[i]) / iterations) for i in order]


def unattributed_kernels(attr: Attribution, top: int | None = 10) -> list[NamedTime]:
    """The largest kernels that have neither an op nor a matching kernel rule."""
    rows = np.flatnonzero(attr.kernel_class == 0)
    names = np.array(attr.trace.kernel_names, dtype=object)[attr.trace.kernels["name_id"][rows]] if len(rows) else np.array([], dtype=object)
    return _named_times(names.astype(str), durations_ns(attr.trace)[rows], attr.trace.iterations, top)


def other_ops(attr: Attribution, top: int | None = None) -> list[NamedTime]:
    """Op names that no rule matched (category "other"), by the time of their kernels."""
    is_other = np.array([c.category == OTHER for c in attr.classes])[attr.kernel_class] & (attr.op_index >= 0)
    rows = np.flatnonzero(is_other)
    names = np.array([attr.trace.ops[i].name for i in attr.op_index[rows]], dtype=str)
    return _named_times(names, durations_ns(attr.trace)[rows], attr.trace.iterations, top)


def coverage(attr: Attribution) -> float | None:
    """Attributed share of the activity time; None for a recording with no time (an identity
    model): nothing was there to attribute, and a 0 would read as all of it missed."""
    dur = durations_ns(attr.trace)
    total = float(dur.sum())
    return 1.0 - float(dur[attr.kernel_class == 0].sum()) / total if total > 0 else None


def summarize(attr: Attribution, top: int = 10) -> AttributionSummary:
    trace, it = attr.trace, attr.trace.iterations
    dur = durations_ns(trace)
    per_it_ms = lambda ns: float(ns) / it / NS_PER_MS  # noqa: E731
    return AttributionSummary(
        kernel_ms=kernel_time_ns(trace) / NS_PER_MS,
        memcpy_ms=kernel_time_ns(trace, (KIND_MEMCPY,)) / NS_PER_MS,
        memset_ms=kernel_time_ns(trace, (KIND_MEMSET,)) / NS_PER_MS,
        activity_ms=per_it_ms(dur.sum()),
        busy_ms={str(d): ns / NS_PER_MS for d, ns in busy_time_ns(trace).items()},
        span_ms=span_ns(trace) / NS_PER_MS,
        coverage=coverage(attr),
        unattributed_ms=per_it_ms(dur[attr.kernel_class == 0].sum()),
        unattributed_kernels=unattributed_kernels(attr, top),
        other_ops=other_ops(attr, top),
        kernel_count=len(dur) / it,
        iterations=it,
        **weight_casts(attr),
        inductor_conv_layout=trace.meta.get("inductor_conv_layout"),
    )


def weight_casts(attr: Attribution) -> dict[str, float]:
    """Time (ms) and count of the rows launched by casts of parameters, per iteration: the
    cost of autocast re-casting fp32 weights every forward (capture marks such ops)."""
    trace = attr.trace
    marked = np.array([bool(op.attrs.get("weight_cast")) for op in trace.ops] + [False], dtype=bool)
    rows = marked[attr.op_index]  # index -1 (no op) reads the trailing False
    it = trace.iterations
    return {"weight_cast_ms": float(durations_ns(trace)[rows].sum()) / it / NS_PER_MS,
            "weight_cast_count": float(rows.sum()) / it}


__all__ = [
    "Attribution",
    "HOW_LABELS",
    "attribute",
    "busy_time_ns",
    "category_rows",
    "coverage",
    "durations_ns",
    "kernel_time_ns",
    "module_category_ns",
    "module_chains",
    "module_rows",
    "op_index_of_rows",
    "other_ops",
    "span_ns",
    "summarize",
    "unattributed_kernels",
    "weight_casts",
    "UNATTRIBUTED",
]
