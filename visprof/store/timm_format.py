"""timm's benchmark CSV format (``benchmark.py --bench inference``), both ways.

Columns: model, infer_img_size, infer_samples_per_sec, infer_step_time (ms per batch),
infer_batch_size, param_count (millions), infer_gmacs (per sample), infer_macts (millions of
activations). ``to_timm_row`` turns a store row into one, so a sweep joins timm's published
CSVs on (model, infer_img_size); ``reference_from_timm_row`` reads one into a ``Reference``.
"""
from __future__ import annotations

from typing import Any, Mapping

__all__ = ["TIMM_COLUMNS", "to_timm_row", "reference_from_timm_row"]

TIMM_COLUMNS = ("model", "infer_img_size", "infer_samples_per_sec", "infer_step_time", "infer_batch_size",
                "param_count", "infer_gmacs", "infer_macts")


def _round(value: Any, digits: int) -> float | None:
    return round(float(value), digits) if isinstance(value, (int, float)) and value == value else None


def to_timm_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A store row (``ResultStore.rows()``) in timm's columns; None where visprof has no figure.

    GMACs per sample come from the attributed pass's FLOPs (a multiply-add is 2 FLOPs);
    activations are not counted by visprof, so ``infer_macts`` stays empty."""
    batch = row.get("batch_size")
    flops = row.get("flops")
    params = row.get("param_count")
    return {
        "model": row.get("model"),
        "infer_img_size": row.get("img_height") if row.get("img_height") == row.get("img_width")
        else f"{row.get('img_height')}x{row.get('img_width')}",
        "infer_samples_per_sec": _round(row.get("samples_per_s"), 2),
        "infer_step_time": _round(row.get("latency_median_ms"), 3),
        "infer_batch_size": batch,
        "param_count": _round(params / 1e6, 2) if isinstance(params, (int, float)) else None,
        "infer_gmacs": _round(flops / 2 / batch / 1e9, 2) if flops and batch else None,
        "infer_macts": None,
    }


def _float(text: Any) -> float | None:
    if text is None:
        return None
    text = str(text).replace(",", "").strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def reference_from_timm_row(row: Mapping[str, Any], *, source: str, gpu_name: str, precision: str):
    """A ``Reference`` from one row (a dict, as ``csv.DictReader`` gives) of a timm benchmark
    CSV; columns other than timm's go into ``extra``."""
    from visprof.base.errors import BadInputError
    from visprof.store.references import Reference

    missing = [c for c in ("model", "infer_img_size", "infer_batch_size") if not str(row.get(c) or "").strip()]
    if missing:
        raise BadInputError(f"{source}: a row lacks timm's column(s) {', '.join(missing)}: {dict(row)}")
    size, batch = _float(row["infer_img_size"]), _float(row["infer_batch_size"])
    if size is None or batch is None:
        raise BadInputError(f"{source}: infer_img_size and infer_batch_size must be numbers: {dict(row)}")
    return Reference(
        source=source, gpu_name=gpu_name, model=str(row["model"]).strip(), img_size=int(size), batch_size=int(batch),
        precision=precision, samples_per_s=_float(row.get("infer_samples_per_sec")),
        step_time_ms=_float(row.get("infer_step_time")), param_count_m=_float(row.get("param_count")),
        gmacs=_float(row.get("infer_gmacs")), macts_m=_float(row.get("infer_macts")),
        extra={k: v for k, v in row.items() if k not in TIMM_COLUMNS and k is not None},
    )
