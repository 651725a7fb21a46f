"""The Nsight Compute metrics of `visprof ncu`: a small set, one role each, with fallbacks.

Names are those of ncu 2023-2025 on Hopper (GH100) and Ampere; each role lists candidates
in order of preference. `choose()` keeps, per role, the first candidate that the GPU's ncu
lists (``ncu --query-metrics``), and `fallback()` drops a candidate that ncu rejected at run
time ("Failed to find metric ..."), so an older or newer ncu still gets the nearest metric.

Roles (all per kernel):

============  =====================================================  =========================
duration      gpu__time_duration.sum                                 ns
sm            sm__throughput.avg.pct_of_peak_sustained_elapsed       % of peak (compute SOL)
dram          dram__throughput.avg.pct_of_peak_sustained_elapsed     % of peak (DRAM SOL)
occupancy     sm__warps_active.avg.pct_of_peak_sustained_active      achieved occupancy, %
tensor        sm__pipe_tensor_op_gmma_cycles_active...               tensor pipe busy, % (Hopper
              (warpgroup MMA) and ..._hmma_... (mma.sync)            kernels use one or the other:
                                                                     the role takes the larger)
dram_bytes    dram__bytes.sum (or read + write)                      bytes
============  =====================================================  =========================
"""
from __future__ import annotations

import re

# role -> candidates; a candidate is one metric, or a tuple of metrics combined by COMBINE[role]
CANDIDATES: dict[str, list] = {
    "duration": ["gpu__time_duration.sum"],
    "sm": ["sm__throughput.avg.pct_of_peak_sustained_elapsed"],
    "dram": ["dram__throughput.avg.pct_of_peak_sustained_elapsed",
             "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"],
    "occupancy": ["sm__warps_active.avg.pct_of_peak_sustained_active"],
    "tensor": [("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
                "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"),
               "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
               "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
               "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active"],
    "dram_bytes": ["dram__bytes.sum", ("dram__bytes_read.sum", "dram__bytes_write.sum")],
}
COMBINE = {"tensor": max, "dram_bytes": sum}
REQUIRED = ("duration",)  # without it nothing can be weighted


def metrics_of(candidate) -> tuple[str, ...]:
    return candidate if isinstance(candidate, tuple) else (candidate,)


def base_name(metric: str) -> str:
    """`dram__bytes.sum` -> `dram__bytes` (what `ncu --query-metrics` lists)."""
    return metric.split(".", 1)[0]


def available_base_names(query_output: str) -> set[str]:
    """Metric base names in the output of `ncu --query-metrics` (any of its layouts)."""
    return set(re.findall(r"\b([a-z0-9]+__[a-z0-9_]+)\b", query_output))


def choose(available: set[str] | None = None, rejected: set[str] = frozenset()) -> dict[str, object]:
    """Per role, the first candidate whose metrics are all available and none rejected;
    roles with no such candidate are left out. ``available=None``: not queried, take the first."""
    chosen = {}
    for role, candidates in CANDIDATES.items():
        for candidate in candidates:
            names = metrics_of(candidate)
            if any(name in rejected for name in names):
                continue
            if available is not None and not all(base_name(name) in available for name in names):
                continue
            chosen[role] = candidate
            break
    return chosen


def metric_list(chosen: dict[str, object]) -> list[str]:
    return sorted({name for candidate in chosen.values() for name in metrics_of(candidate)})


def rejected_metrics(ncu_output: str, requested: list[str]) -> set[str]:
    """The requested metrics ncu refused ("==ERROR== Failed to find metric <name>" and kin)."""
    bad = set()
    for line in ncu_output.splitlines():
        if "ERROR" in line and "metric" in line.lower():
            bad.update(name for name in requested if name in line or base_name(name) in line)
    return bad


def role_values(chosen: dict[str, object], metrics: dict[str, float | None]) -> dict[str, float | None]:
    """A kernel's value per role, from its metric values (None where ncu reported none)."""
    out = {}
    for role, candidate in chosen.items():
        values = [metrics.get(name) for name in metrics_of(candidate)]
        values = [v for v in values if v is not None]
        if not values:
            out[role] = None
        elif len(values) == 1:
            out[role] = values[0]
        else:
            out[role] = COMBINE.get(role, max)(values)
    return out
