"""Agreement between predictions and published measurements: rank correlation and ratio errors."""
from __future__ import annotations

import statistics
from typing import Sequence

import numpy as np


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank (as scipy.stats.rankdata)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float:
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("pearson needs two sequences of the same length >= 2")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return float("nan")
    return sxy / (sxx * syy) ** 0.5


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Spearman's rank correlation (Pearson's of the ranks, ties averaged)."""
    return pearson(ranks(xs), ranks(ys))


def ratio_errors(predicted: Sequence[float], published: Sequence[float]) -> dict[str, float]:
    """|predicted / published - 1|: median, mean, 90th percentile (interpolated between ranks, as NumPy
    and the result's latency percentiles do; it had taken the rank above, the largest error of ten);
    and the median signed error."""
    signed = [p / q - 1 for p, q in zip(predicted, published)]
    absolute = [abs(e) for e in signed]
    return {"median_abs": statistics.median(absolute), "mean_abs": statistics.fmean(absolute),
            "p90_abs": float(np.percentile(absolute, 90)), "median_signed": statistics.median(signed),
            "count": len(signed)}


__all__ = ["pearson", "ranks", "ratio_errors", "spearman"]
