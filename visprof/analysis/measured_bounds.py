"""Bounds measured by Nsight Compute, per kernel family, reused for every profile that runs the family.

A profile's roofline places each op by its tensor sizes and FLOPs (``visprof.analysis.roofline``);
``visprof ncu`` measures what the kernels did (SM and DRAM throughput, tensor pipe, % of peak).
Where they disagree the counters win, but ncu costs minutes a model. So the counters of a few
models are pooled into a library keyed by what a profile records of every kernel, its family
(``visprof.attribution.op_types.kernel_family``) and category; a profile of any model on the same
GPU then takes the measured bound for every family the library has, and keeps the estimate for
the rest. ``coverage()`` says how much of the profile's kernel time rests on which.

A family the library lacks can still have a bound that needs no counters: one whose launches have
fewer thread blocks than the GPU has SMs (the profile's recorded launch shape, median by time)
leaves SMs idle, so neither bandwidth nor compute peak can bind it. Its time counts as
latency-bound from its launch size (e.g. efficientformerv2's bilinear upsample, one block a launch:
85% of its H200 time).

A family's kernels differ by shape (a GEMM tile runs compute- or memory-bound by its sizes); an
entry keeps the range of its measured DRAM throughput, so a wide range shows where the family is
too coarse a key.
"""
from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from visprof.attribution.op_types import TRANSFER_FAMILIES, kernel_family
from visprof.base.errors import BadInputError
from visprof.base.inputs import describe_value, load_json_file
from visprof.result import SCHEMA as RESULT_SCHEMA

LATENCY_BOUND_PCT = 40.0  # neither SM nor DRAM past this share of peak: latency/launch bound
FORMAT = "visprof.bounds/1"
BOUNDS = ("compute", "memory", "latency")  # what counter_bound names


def gpu_name(result) -> str | None:
    """The name of the GPU a ProfileResult ran on (its ``gpu`` record), None for a CPU run."""
    return (result.gpu or {}).get("name") if isinstance(result.gpu, dict) else None


def counter_bound(sm_pct: float | None, dram_pct: float | None) -> str | None:
    """"compute", "memory" or "latency" (neither unit past LATENCY_BOUND_PCT of its peak) from the
    speed-of-light percentages; None without both."""
    if sm_pct is None or dram_pct is None:
        return None
    if max(sm_pct, dram_pct) < LATENCY_BOUND_PCT:
        return "latency"
    return "compute" if sm_pct >= dram_pct else "memory"


@dataclass
class BoundEntry:
    family: str
    category: str
    models: list[str]  # whose ncu runs measured it
    launches: int  # kernel launches ncu profiled
    weight_ns: float  # measured kernel time per iteration it stands for (launches x their weight)
    sm_pct: float | None  # time-weighted means over the launches
    dram_pct: float | None
    tensor_pct: float | None
    dram_pct_range: tuple[float, float] | None  # lowest and highest kernel mean
    bound: str | None

    @property
    def key(self) -> tuple[str, str]:
        return self.family, self.category


@dataclass
class BoundLibrary:
    gpu: str
    tool: str
    entries: list[BoundEntry] = field(default_factory=list)

    def lookup(self) -> dict[tuple[str, str], BoundEntry]:
        return {e.key: e for e in self.entries}

    def to_dict(self) -> dict:
        return {"format": FORMAT, "gpu": self.gpu, "tool": self.tool, "entries": [asdict(e) for e in self.entries]}

    @classmethod
    def from_dict(cls, doc: Any, source: str = "bound library") -> "BoundLibrary":
        """The library of a parsed JSON document, every field checked: BadInputError starting with
        ``source`` (``load`` names the file) and naming the first field that does not fit."""
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise BadInputError(f"{source} {_not_a_library(doc)}")
        _check_fields(doc, _LIBRARY_FIELDS, source)
        if not doc["entries"]:  # every profile would read 0% measured, as if no family matched
            raise BadInputError(f"{source} has no entries: nothing measured to look up (visprof bounds build "
                                f"NCU_RESULT ... -o LIBRARY makes one from visprof ncu results)")
        entries, seen = [], {}
        for i, e in enumerate(doc["entries"]):
            where = f"entries[{i}]"
            if not isinstance(e, dict):
                raise BadInputError(f"{source}: {where}: expected an object, got {describe_value(e)}")
            _check_fields(e, _ENTRY_FIELDS, source, where + ".")
            entry = BoundEntry(**{**{k: e[k] for k in _ENTRY_FIELDS},
                                  "dram_pct_range": tuple(e["dram_pct_range"]) if e["dram_pct_range"] else None})
            if entry.key in seen:  # lookup() would keep one of the two unseen
                raise BadInputError(f"{source}: {where}: {entry.family} ({entry.category}) is listed twice "
                                    f"(also entries[{seen[entry.key]}])")
            seen[entry.key] = i
            entries.append(entry)
        return cls(gpu=doc["gpu"], tool=doc["tool"], entries=entries)

    def save(self, path: str | Path) -> None:
        from visprof.base.outputs import atomic_write_json

        atomic_write_json(path, json.dumps(self.to_dict(), indent=1) + "\n", kind="bounds")

    @classmethod
    def load(cls, path: str | Path) -> "BoundLibrary":
        from visprof.base.output_paths import is_sqlite_file

        if is_sqlite_file(path):  # a store, which `bounds coverage` reads as a SOURCE: the arguments swapped
            raise BadInputError(f"bound library {path} is a visprof results store, not a bound library; the library "
                                "comes first: visprof bounds coverage LIBRARY SOURCE ...")
        return cls.from_dict(load_json_file(path, "bound library"), f"bound library {path}")


def _not_a_library(doc: Any) -> str:
    """What a document that is not a bound library is instead, for its one-line refusal."""
    if not isinstance(doc, dict):
        return f"is not a visprof bound library (its JSON is {describe_value(doc)}, not an object)"
    if doc.get("schema") == RESULT_SCHEMA:  # `bounds coverage` given its arguments the other way round
        return ("is a visprof profile result, not a visprof bound library; the library comes first: "
                "visprof bounds coverage LIBRARY SOURCE ...")
    found = doc.get("format")
    found = repr(found) if isinstance(found, str) else describe_value(found)
    return f"is not a visprof bound library (its format is {found}, this visprof reads {FORMAT!r})"


def _amount(value: Any) -> bool:
    """A finite number >= 0 (JSON reads 1e999 as infinity)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _amount_or_null(value: Any) -> bool:
    return value is None or _amount(value)


def _name(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


# What each field of a library must hold, as (fits, what it must be). A damaged or hand-edited
# file would otherwise print "weird 99%", or add a null weight as nothing.
_LIBRARY_FIELDS = {
    "gpu": (_name, "the GPU's name"),
    "tool": (lambda v: isinstance(v, str), "a string (the ncu version)"),
    "entries": (lambda v: isinstance(v, list), "a list of kernel families"),
}
_ENTRY_FIELDS = {
    "family": (_name, "a kernel family name"),
    "category": (_name, "a category name"),
    "models": (lambda v: isinstance(v, list) and all(map(_name, v)), "a list of model names"),
    "launches": (lambda v: isinstance(v, int) and _amount(v), "a whole number >= 0"),
    "weight_ns": (_amount, "a number >= 0"),
    "sm_pct": (_amount_or_null, "a number >= 0 or null"),
    "dram_pct": (_amount_or_null, "a number >= 0 or null"),
    "tensor_pct": (_amount_or_null, "a number >= 0 or null"),
    "dram_pct_range": (lambda v: v is None or isinstance(v, list) and len(v) == 2 and all(map(_amount, v)),
                       "[lowest, highest] or null"),
    "bound": (lambda v: v is None or v in BOUNDS, f"one of {', '.join(BOUNDS)} or null"),
}


def _check_fields(doc: dict, fields: dict, source: str, prefix: str = "") -> None:
    """BadInputError for the first of ``fields`` that ``doc`` lacks or holds in a form it cannot take,
    its path written as visprof.base.typed_json writes it (``entries[3].bound``)."""
    for key, (fits, what) in fields.items():
        if key not in doc:
            raise BadInputError(f"{source}: {prefix}{key}: missing ({what})")
        if not fits(doc[key]):
            raise BadInputError(f"{source}: {prefix}{key}: expected {what}, got {describe_value(doc[key])}")


def weighted_mean(pairs: list[tuple[float, float | None]]) -> float | None:
    """Mean of the values weighted by their weights, leaving out missing values and weights <= 0."""
    pairs = [(w, v) for w, v in pairs if v is not None and w > 0]
    total = sum(w for w, _ in pairs)
    return sum(w * v for w, v in pairs) / total if total > 0 else None


@dataclass
class CounterSet:
    """The per-kernel counters of one `visprof ncu` run (``ProfileResult.counters.kernels``)."""

    model: str
    gpu: str
    tool: str
    kernels: list  # visprof.result.KernelCounters


def counter_set(result) -> CounterSet:
    """A `visprof ncu` result's counters; a profile without them is refused in one line."""
    if result.counters is None or not result.counters.kernels:
        raise BadInputError(f"{result.model.name}: no Nsight Compute counters (make it with `visprof ncu --json`)")
    gpu = gpu_name(result)
    if not gpu:  # a library is of one named GPU (load refuses one without)
        raise BadInputError(f"{result.model.name}: the result names no GPU, and a bound library is of one GPU")
    return CounterSet(model=result.model.name, gpu=gpu, tool=result.counters.tool,
                      kernels=list(result.counters.kernels))


def build_library(sets: Iterable[CounterSet]) -> BoundLibrary:
    """Pools the per-kernel counters of `visprof ncu` runs on one GPU by (kernel family, category)."""
    pooled: dict[tuple[str, str], list[tuple[str, object]]] = defaultdict(list)
    gpus, tools = set(), set()
    for one in sets:
        gpus.add(one.gpu)
        tools.add(one.tool)
        for kernel in one.kernels:
            pooled[(kernel_family(kernel.name), kernel.category)].append((one.model, kernel))
    if len(gpus) > 1:
        raise BadInputError(f"a bound library is of one GPU; these results are of {len(gpus)}: {', '.join(sorted(gpus))}")
    entries = []
    for (family, category), kernels in pooled.items():
        # each profiled kernel stands for `weight` launches of its duration per iteration
        weighted = [(k.weight * (k.metrics.get("duration") or 0.0), k.metrics) for _, k in kernels]
        sm = weighted_mean([(w, m.get("sm")) for w, m in weighted])
        dram = weighted_mean([(w, m.get("dram")) for w, m in weighted])
        drams = [m["dram"] for _, m in weighted if m.get("dram") is not None]
        entries.append(BoundEntry(family=family, category=category, models=sorted({name for name, _ in kernels}),
                                  launches=sum(k.launches for _, k in kernels), weight_ns=sum(w for w, _ in weighted),
                                  sm_pct=sm, dram_pct=dram, tensor_pct=weighted_mean([(w, m.get("tensor")) for w, m in weighted]),
                                  dram_pct_range=(min(drams), max(drams)) if drams else None,
                                  bound=counter_bound(sm, dram)))
    entries.sort(key=lambda e: (-e.weight_ns, e.family, e.category))
    return BoundLibrary(gpu=gpus.pop() if gpus else "", tool=", ".join(sorted(tools)), entries=entries)


@dataclass
class Coverage:
    """How much of a profile's kernel time rests on measured bounds."""

    kernel_ms: float  # the profile's kernel-family time per iteration
    measured_ms: float  # of it, in families the library measured
    by_bound_ms: dict[str, float]  # measured time by its measured bound
    unmeasured: list[tuple[str, str, float]]  # (family, category, ms), costliest first; not under_filled
    under_filled_ms: float = 0.0  # in families the library lacks, launched with fewer blocks than SMs
    sm_count: int | None = None  # of the profile's GPU; None where it did not record it
    copies_ms: float = 0.0  # memcpy and memset: no kernels for ncu, so neither measured nor to measure next
    # families shared by categories whose row keeps no split (a result made before rows kept one): all their
    # time takes the largest category's bound
    unsplit_shared: bool = False

    @property
    def measured_share(self) -> float:
        return self.measured_ms / self.kernel_ms if self.kernel_ms > 0 else 0.0

    @property
    def under_filled_share(self) -> float:
        return self.under_filled_ms / self.kernel_ms if self.kernel_ms > 0 else 0.0

    def line(self) -> str:
        # a bound under half a percent reads "latency 0%": left out
        bounds = ", ".join(f"{b} {ms / self.kernel_ms:.0%}" for b, ms in sorted(self.by_bound_ms.items(), key=lambda x: -x[1])
                           if ms >= 0.005 * self.kernel_ms)
        under = (f", {self.under_filled_share:.0%} latency-bound by launch size (fewer thread blocks than the "
                 f"GPU's {self.sm_count} SMs)" if self.under_filled_ms > 0 else "")
        copies = self.copies_ms / self.kernel_ms if self.kernel_ms > 0 else 0.0
        estimated = 1 - self.measured_share - self.under_filled_share - copies
        return (f"bounds: {self.measured_share:.0%} of kernel time on bounds measured by Nsight Compute"
                + (f" ({bounds})" if bounds else "") + under
                + (f", {copies:.0%} in memcpy/memset (no kernels for ncu)" if copies >= 0.005 else "")
                + f", {estimated:.0%} estimated from tensor sizes")


def _by_category(row) -> list[tuple[str, float]]:
    """(category, ms) of a kernel-family row's time, as the library is keyed: by family and category.
    A family that runs in several categories (nvjet GEMMs as attention projections and as linear, ATen's
    casts as activation and as memory) had taken its largest category's bound for all of its time.
    Older results keep one category per row."""
    if not row.by_category:
        return [(row.category, row.time_ms)]
    parts: dict[str, float] = defaultdict(float)
    for key, ms in row.by_category.items():
        parts[key.partition("/")[0]] += ms
    return list(parts.items())


def coverage(library: BoundLibrary, result) -> Coverage:
    """The share of ``result``'s kernel-family time whose bound the library measured, on the same GPU;
    of the rest, the time in families launched with fewer thread blocks than the GPU has SMs
    (where the counters would say the same, the counters are what it reports)."""
    if gpu_name(result) != library.gpu:
        raise BadInputError(f"the bound library was measured on {library.gpu or 'no GPU'}; the profile ran on "
                            f"{gpu_name(result) or 'no GPU'}: bounds do not carry across GPUs")
    entries = library.lookup()
    sm_count = result.sm_count
    total = measured = under_filled = copies = 0.0
    by_bound: dict[str, float] = defaultdict(float)
    unmeasured = []
    for row in result.kernel_families or []:
        if row.family in TRANSFER_FAMILIES.values():  # had led the list of what to give `visprof ncu` next, which cannot
            total += row.time_ms
            copies += row.time_ms
            continue
        for category, ms in _by_category(row):
            total += ms
            entry = entries.get((row.family, category))
            if entry is not None and entry.bound is not None:
                measured += ms
                by_bound[entry.bound] += ms
            elif sm_count and row.blocks is not None and row.blocks < sm_count:
                under_filled += ms
            else:
                unmeasured.append((row.family, category, ms))
    unmeasured.sort(key=lambda x: -x[2])
    shared = {family for family, n in Counter(family for family, _ in entries).items() if n > 1}
    unsplit = any(not row.by_category and row.family in shared for row in result.kernel_families or [])
    return Coverage(kernel_ms=total, measured_ms=measured, by_bound_ms=dict(by_bound), unmeasured=unmeasured,
                    under_filled_ms=under_filled, sm_count=sm_count, copies_ms=copies, unsplit_shared=unsplit)
