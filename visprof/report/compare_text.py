"""Text tables for ``visprof compare`` and ``visprof predict`` (and CSV rows for their files)."""
from __future__ import annotations

import csv
import io
from typing import Iterable, Sequence

from visprof.analysis.compare_explain import l2_ratio_text, spec_tensor_ratio
from visprof.base.options import TIME_GPU
from visprof.report.text_table import format_table

BOUND_SHORT = {"tensor": "tensor", "memory": "memory", "compute": "compute", "unknown": "unknown", "launch": "launch"}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _shares(shares: dict[str, float]) -> str:
    parts = [f"{BOUND_SHORT.get(b, b)} {v * 100:.0f}%" for b, v in sorted(shares.items(), key=lambda kv: -kv[1]) if v >= 0.005]
    return ", ".join(parts) or "-"


def _to_explain(models: list, shown: list, top: int | None) -> list:
    """The profiled models the table shows, then (up to 2 x top) the other profiled models farthest
    from the median either way, in the table's order: the least sensitive (those that lose on the
    target) are as much what a reader wants explained as the most."""
    profiled = [m for m in models if m.shares]
    first = [m for m in profiled if any(m is s for s in shown)]
    others = sorted((m for m in profiled if not any(m is f for f in first)), key=lambda m: -abs(m.sensitivity))
    chosen = first + others[:max(0, 2 * (top or 15) - len(first))] if top is not None else profiled
    return sorted(chosen, key=lambda m: -m.sensitivity)


def format_comparison(comparison, top: int | None = 15, width: int | None = None) -> str:
    """Header, the most and least sensitive models, then the aggregates."""
    c = comparison
    lines = [f"visprof compare: {c.base_name} -> {c.target_name}: {len(c.models)} models measured on both "
             f"(median speed-up x{c.median_speedup:.3f}{' in GPU busy time' if c.time == TIME_GPU else ''})"]
    if c.base_spec and c.target_spec:
        b, t = c.base_spec, c.target_spec
        key, tensor = spec_tensor_ratio(c)
        ratio = f"tensor ({key}) x{tensor:.2f}, " if tensor else ""
        lines.append(f"spec ratios {c.target_name} / {c.base_name}: {ratio}FP32 x{t.fp32_tflops / b.fp32_tflops:.2f}, "
                     f"bandwidth x{t.memory_bandwidth_gbs / b.memory_bandwidth_gbs:.2f}, L2 x{l2_ratio_text(t.l2_mb / b.l2_mb)}")
    if c.not_compared:
        lines.append(c.not_compared)
    lines += [f"note: {n}" for n in c.notes]
    models = c.models
    shown = models if top is None or len(models) <= 2 * top else models[:top] + models[-top:]
    headers = ["model", "img", "family", "speed-up", "sensitivity", "dominant", "time by bound (base)"]
    rows = [[m.model, str(m.img_size or "-"), m.family, f"x{m.speedup:.3f}", f"{m.sensitivity:+.1%}",
             m.dominant_category or "-", _shares(m.shares)] for m in shown]
    title = "Models, most sensitive first" if shown is models else f"The {top} most and {top} least sensitive models"
    lines += ["", title, *format_table(headers, rows, width)]
    explained = _to_explain(models, shown, top)
    if explained:
        lines += ["", "Why (profiled models)"]
        lines += [f"  {m.model} @{m.img_size}: {m.explanation}" for m in explained]
    for title, aggregates in (("By family (timm module)", c.by_family), ("By dominant category", c.by_category),
                              ("By dominant bound on the base GPU", c.by_bound)):
        if len(aggregates) == 1 and aggregates[0].key == "(no profile)":
            continue
        agg = aggregates if top is None or len(aggregates) <= 2 * top else aggregates[:top] + aggregates[-top:]
        rows = [[a.key, str(a.count), f"x{a.median_speedup:.3f}", f"{a.median_sensitivity:+.1%}",
                 f"x{a.min_speedup:.2f}-x{a.max_speedup:.2f}"] for a in agg]
        lines += ["", title, *format_table(["group", "models", "median speed-up", "sensitivity", "range"], rows, width)]
    return "\n".join(lines) + "\n"


def format_predictions(predictions: Sequence, target_name: str, skipped: Iterable[str] = (), width: int | None = None) -> str:
    models = len({p.model for p in predictions})
    profiles = "" if models == len(predictions) else f" from {len(predictions)} profiles (sizes, precisions, GPUs)"
    lines = [f"visprof predict: {models} model(s){profiles} on {target_name}"]
    headers = ["model", "img", "from", "batch", "measured ms", "predicted ms", "range ms", "samples/s",
               "time by bound", "fits"]
    rows = []
    for p in predictions:
        measured = "-" if p.measured_latency_ms is None else f"{p.measured_latency_ms:.3f}@{p.source_batch}"
        span = p.latency_range_ms
        source = f"{p.source_gpu} {p.source_precision}".strip()  # the profile: its GPU and precision
        rows.append([p.model, str(p.img_size or "-"), source, str(p.batch_size), measured,
                     f"{p.latency_ms:.3f}",
                     "-" if span is None else f"{span[0]:.3f}-{span[1]:.3f}", f"{p.samples_per_s:,.1f}", _shares(p.shares),
                     p.fits_text])
    lines += ["", *format_table(headers, rows, width)]
    if any(p.latency_range_ms for p in predictions):
        lines += ["", "range: the latency with the time its kernels spend far below their roof scaled by nothing "
                      "(latency-bound), the clock or SMs x clock; the prediction takes SMs x clock between GPUs of one "
                      "SM design (compute capability), else the clock; a wide range is a prediction the specs cannot decide"]
    # keyed as the rows are told apart: one model is often profiled at several sizes
    notes = [(f"{p.model} @{p.img_size}" if p.img_size else p.model, n) for p in predictions for n in p.notes]
    if notes:
        lines += ["", "Notes"] + [f"  {model}: {note}" for model, note in notes]
    skipped = list(skipped)
    if skipped:
        lines += ["", f"Not predicted ({len(skipped)})"] + [f"  {s}" for s in skipped]
    return "\n".join(lines) + "\n"


def rows_to_csv(rows: list[dict]) -> str:
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return out.getvalue()


__all__ = ["format_comparison", "format_predictions", "rows_to_csv"]
