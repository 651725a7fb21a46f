"""The roofline section of the text report: time by bound, and each category against the roof.

Kept apart from table.py so that the two can change independently; ``render`` calls
``roofline_section``. Results without a roofline (older files) get no section.
"""
from __future__ import annotations

from visprof.result import ProfileResult

BOUND_ORDER = ("tensor", "memory", "compute", "unknown", "launch")
LABELS = {"tensor": "tensor-core", "memory": "memory-bandwidth", "compute": "other-compute",
          "unknown": "unknown (no bytes recorded)", "launch": "launch/host (idle)"}
SHORT = {"tensor": "tensor", "memory": "memory", "compute": "compute", "unknown": "unknown"}


def _num(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def roofline_section(result: ProfileResult, width: int | None = None) -> list[str]:
    """Lines of the section (with a blank line first), or [] when there is nothing to show."""
    roof = result.roofline
    if roof is None or roof.gpu is None or not roof.shares:
        return []
    from visprof.report.text_table import format_table

    c = roof.ceilings
    gpu = (result.gpu or {}).get("name") or roof.gpu
    lines = ["", f"Roofline on {gpu} (spec row {roof.gpu}: {c.get('tensor_tflops', 0):g} tensor TFLOP/s, "
                 f"{c.get('fp32_tflops', 0):g} FP32 TFLOP/s, {c.get('bandwidth_gbs', 0):g} GB/s)"]
    basis = "of latency" if roof.basis == "latency" else "of kernel time"
    parts = [f"{LABELS[b]} {roof.shares[b] * 100:.1f}%" for b in BOUND_ORDER if roof.shares.get(b)]
    lines.append(f"Time by bound ({basis}): " + ", ".join(parts))
    headers = ["category", "GPU ms", "GFLOP", "MB", "FLOP/B", "TFLOP/s", "GB/s", "% of roof", "bound"]
    rows = []
    for p in roof.categories:
        if p.time_ms <= 0:
            continue
        of_roof = p.tflops / p.attainable_tflops * 100 if p.tflops and p.attainable_tflops else None
        if of_roof is None and p.gbps and p.bound == "memory":
            of_roof = p.gbps / c["bandwidth_gbs"] * 100 if c.get("bandwidth_gbs") else None
        rows.append([p.category, f"{p.time_ms:.3f}", _num(p.flops / 1e9 if p.flops else None, ".2f"),
                     _num(p.bytes / 1e6 if p.bytes else None, ".1f"), _num(p.intensity, ".1f"),
                     _num(p.tflops, ".1f"), _num(p.gbps, ".0f"), _num(of_roof, ".0f"),
                     SHORT.get(p.bound or "", "-")])
    lines += format_table(headers, rows, width)
    return lines


__all__ = ["roofline_section"]
