"""The calibration's 80% band: from the cross-validation residuals to a band for any model.

A prediction's band is ``exp(mid + q * sqrt(1 + c h))``. ``h = x' A^-1 x`` is the ridge's
predictive-variance factor (``calibrate.Fit.leverage``): large for a model whose time lies in
buckets the fit saw little of. ``q`` are the 10th and 90th percentiles of held-out residuals divided
by their own ``sqrt(1 + c h)``.

``c`` says how much faster than the noise the error grows with ``h``. ``c = 1`` would hold if the
only error were the noise the fit was fitted to. A model of a family the fit never saw also errs
by how its family differs, and that grows with how far its buckets are from the fit's. With
``c = 1``, the quarter of held-out models with the highest ``h`` were covered 74% (3090 -> 4090) and
70% (4090 -> 5090), and the lowest quarter 85% and 89%. So ``c`` is estimated from the same
residuals the quantiles come from (bench/results/band-leverage-2026-12-05, a rule committed before
its run).
"""
from __future__ import annotations

import math

import numpy as np

COVERAGE = 0.80  # the band's nominal coverage: 10th to 90th percentile
# The leverage coefficients tried, fixed before the run that adopted them; 1 was the band before.
LEVERAGE_C_GRID = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)


def band_quantiles(z: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """The band's 10th and 90th percentiles of standardized held-out residuals ``z``, each
    weighted as the fit weighs its model (``w``). Unweighted, the families of 31 or more models
    (half the rows, and well predicted) set the width, and a held-out family of a few models was
    covered as a large one is: 66-70% for families of 4-9 models on every pair
    (bench/results/band-weights-2026-12-04)."""
    lo_q, hi_q = (1 - COVERAGE) / 2, 1 - (1 - COVERAGE) / 2
    low, high = np.quantile(z, [lo_q, hi_q], weights=w, method="inverted_cdf")
    return float(low), float(high)


def leverage_coefficient(res: np.ndarray, h: np.ndarray, w: np.ndarray) -> float:
    """The ``c`` of LEVERAGE_C_GRID under which the residuals ``res`` are most likely as Laplace
    with scale ``b sqrt(1 + c h)``, ``b`` at its weighted maximum-likelihood value for each ``c``,
    weights ``w``. Laplace because the residuals are heavy-tailed (the fit is robust for the same
    reason)."""
    best, best_ll = 1.0, -math.inf
    for c in LEVERAGE_C_GRID:
        s = np.sqrt(1.0 + c * h)
        b = float(np.sum(w * np.abs(res) / s) / np.sum(w))
        if b <= 0:
            continue
        # the log-likelihood up to a constant: at this b, the sum of w |r| / (b s) is sum(w)
        ll = -float(np.sum(w * np.log(b * s)))
        if ll > best_ll:
            best, best_ll = c, ll
    return best


def band_from_residuals(res: np.ndarray, h: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """``c`` and the band's two quantiles from held-out residuals ``res``, their leverages ``h`` and
    weights ``w`` (``leverage_coefficient``, ``band_quantiles``)."""
    c = leverage_coefficient(res, h, w)
    low, high = band_quantiles(res / np.sqrt(1.0 + c * h), w)
    return c, low, high


__all__ = ["COVERAGE", "LEVERAGE_C_GRID", "band_from_residuals", "band_quantiles", "leverage_coefficient"]
