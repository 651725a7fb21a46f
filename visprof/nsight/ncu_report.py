"""The text of `visprof ncu`'s counters section (ProfileResult.counters)."""
from __future__ import annotations

from visprof.result import CounterSummary


def _num(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def format_counters(counters: CounterSummary, top_kernels: int = 8) -> str:
    from visprof.report.text_table import format_table

    lines = [f"Nsight Compute counters by category ({counters.tool}, --clock-control {counters.clock_control}, "
             f"{counters.samples_per_kind} ops of each kind profiled, {counters.kernels_profiled} kernels; "
             f"filter {' , '.join(counters.nvtx_filters)})"]
    headers = ["category", "profiled", "kernels/iter", "coverage", "SM %", "DRAM %", "occupancy %", "tensor %",
               "DRAM MB/iter", "FLOP/byte", "DRAM GB/s", "bound"]
    rows = [[c.category, str(c.kernels_profiled), _num(c.kernels_per_iteration, "g"), f"{c.time_coverage:.0%}",
             _num(c.sm_throughput_pct, ".1f"), _num(c.dram_throughput_pct, ".1f"), _num(c.achieved_occupancy_pct, ".1f"),
             _num(c.tensor_pipe_pct, ".1f"), _num(c.dram_bytes and c.dram_bytes / 1e6, ".1f"),
             _num(c.arithmetic_intensity, ".1f"), _num(c.dram_gbps, ".0f"), c.bound or "-"]
            for c in counters.categories]
    lines += format_table(headers, rows)
    if counters.kernels and top_kernels:
        lines += ["", "Costliest profiled kernels (mean per launch)"]
        ranked = sorted(counters.kernels, key=lambda k: -(k.metrics.get("duration") or 0.0) * k.weight)[:top_kernels]
        lines += format_table(["kernel", "category", "launches", "us", "SM %", "DRAM %", "tensor %"],
                              [[k.name, k.category, str(k.launches), _num((k.metrics.get("duration") or 0) / 1e3, ".1f"),
                                _num(k.metrics.get("sm"), ".1f"), _num(k.metrics.get("dram"), ".1f"),
                                _num(k.metrics.get("tensor"), ".1f")] for k in ranked], width=140)
    lines += [f"warning: {w}" for w in counters.warnings]
    lines.append("metrics: " + ", ".join(f"{role}={name}" for role, name in counters.metrics.items()))
    return "\n".join(lines)
