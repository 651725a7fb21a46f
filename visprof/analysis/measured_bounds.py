"""Bounds measured by Nsight Compute, per kernel family, reused for every profile that runs the family.

A profile's roofline places each op by its tensor sizes and FLOPs (``visprof.analysis.roofline``);
``visprof ncu`` measures what the kernels did (SM and DRAM throughput, tensor pipe, % of peak).
Where they disagree the counters win, but ncu costs minutes a model. So the counters of a few
models are pooled into a library keyed by what a profile records of every kernel, its family
(``visprof.attribution.op_types.kernel_family``) and category; a profile of any model on the same
GPU then takes the measured bound for every family the library has, and keeps the estimate for
the rest. ``coverage()`` says how much of the profile's kernel time rests on which.

A family's kernels differ by shape (a GEMM tile runs compute- or memory-bound by its sizes); an
entry keeps the range of its measured DRAM throughput, so a wide range shows where the family is
too coarse a key.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

from visprof.attribution.op_types import kernel_family
from visprof.base.errors import BadInputError

LATENCY_BOUND_PCT = 40.0  # neither SM nor DRAM past this share of peak: latency/launch bound
FORMAT = "visprof.bounds/1"


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
    def from_dict(cls, doc: dict) -> "BoundLibrary":
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise BadInputError(f"not a visprof bound library (format={doc.get('format') if isinstance(doc, dict) else None!r})")
        try:
            entries = [BoundEntry(**{**e, "dram_pct_range": tuple(e["dram_pct_range"]) if e.get("dram_pct_range") else None})
                       for e in doc["entries"]]
            return cls(gpu=doc["gpu"], tool=doc["tool"], entries=entries)
        except (KeyError, TypeError) as exc:
            raise BadInputError(f"bound library: an entry does not fit ({type(exc).__name__}: {exc})") from None

    def save(self, path: str | Path) -> None:
        from visprof.base.outputs import atomic_write_text

        atomic_write_text(path, json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "BoundLibrary":
        from visprof.base.inputs import load_json_file

        return cls.from_dict(load_json_file(path, "bound library"))


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
    return CounterSet(model=result.model.name, gpu=gpu_name(result) or "", tool=result.counters.tool,
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
    unmeasured: list[tuple[str, str, float]]  # (family, category, ms), costliest first

    @property
    def measured_share(self) -> float:
        return self.measured_ms / self.kernel_ms if self.kernel_ms > 0 else 0.0

    def line(self) -> str:
        bounds = ", ".join(f"{b} {ms / self.kernel_ms:.0%}" for b, ms in sorted(self.by_bound_ms.items(), key=lambda x: -x[1]))
        return (f"bounds: {self.measured_share:.0%} of kernel time on bounds measured by Nsight Compute"
                + (f" ({bounds})" if bounds else "") + f", {1 - self.measured_share:.0%} estimated from tensor sizes")


def coverage(library: BoundLibrary, result) -> Coverage:
    """The share of ``result``'s kernel-family time whose bound the library measured, on the same GPU."""
    if gpu_name(result) != library.gpu:
        raise BadInputError(f"the bound library was measured on {library.gpu or 'no GPU'}; the profile ran on "
                            f"{gpu_name(result) or 'no GPU'}: bounds do not carry across GPUs")
    entries = library.lookup()
    total = measured = 0.0
    by_bound: dict[str, float] = defaultdict(float)
    unmeasured = []
    for row in result.kernel_families or []:
        total += row.time_ms
        entry = entries.get((row.family, row.category))
        if entry is not None and entry.bound is not None:
            measured += row.time_ms
            by_bound[entry.bound] += row.time_ms
        else:
            unmeasured.append((row.family, row.category, row.time_ms))
    unmeasured.sort(key=lambda x: -x[2])
    return Coverage(kernel_ms=total, measured_ms=measured, by_bound_ms=dict(by_bound), unmeasured=unmeasured)
