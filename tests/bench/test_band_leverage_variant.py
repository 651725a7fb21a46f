"""bench/band_leverage_variant.py: the band's leverage coefficient estimated from the residuals."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from visprof.analysis.calibrate import Fit, fit_calibration, make_fleet

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import band_leverage_variant as variant  # noqa: E402


@pytest.mark.parametrize("c", [0.0, 1.0, 8.0, 32.0])
def test_the_coefficient_of_laplace_residuals_is_recovered(c):
    rng = np.random.default_rng(1)
    h = rng.uniform(0.0, 1.0, 20000)
    res = rng.laplace(0.0, 0.05 * np.sqrt(1.0 + c * h))
    assert variant.leverage_coefficient(res, h, np.ones_like(h)) == c


def test_weights_decide_which_residuals_count():
    rng = np.random.default_rng(2)
    h = rng.uniform(0.0, 1.0, 20000)
    flat = rng.laplace(0.0, 0.05, h.size)  # c = 0 ...
    steep = rng.laplace(0.0, 0.05 * np.sqrt(1.0 + 16.0 * h))  # ... and c = 16
    res, w = np.concatenate([flat, steep]), np.concatenate([np.full(h.size, 1e-6), np.ones(h.size)])
    assert variant.leverage_coefficient(res, np.concatenate([h, h]), w) == 16.0


def fleet(n=60, seed=0):
    rng = np.random.default_rng(seed)
    spec = np.exp(rng.normal(0.4, 0.1, n))
    shares = rng.uniform(0, 1, n)
    obs = spec * np.exp(0.2 * shares + rng.normal(0, 0.03, n))
    buckets = [{"cat:linear": s, "idle": 1 - s} for s in shares]
    return make_fleet([f"m{i}" for i in range(n)], [f"f{i % 12}" for i in range(n)], buckets, spec, obs,
                      features=["cat:linear", "idle"])


def test_at_c_1_the_band_is_todays_and_the_point_predictions_never_move():
    f = fleet()
    fit = fit_calibration(f)
    families = list(f.families[:10]) + ["new family"] * 5
    X, spec = f.X[:15], f.log_spec[:15]
    today = Fit.predict(fit, X, spec, families)
    assert np.allclose(variant.predict(fit, X, spec, families), today, rtol=1e-12)
    estimated = variant.with_estimated_band(fit_calibration)(f)
    mid, low, high = variant.predict(estimated, X, spec, families)
    assert np.allclose(mid, today[0], rtol=1e-12) and np.all(low <= mid) and np.all(mid <= high)
    assert estimated.c in variant.LEVERAGE_C_GRID and estimated.c_seen in variant.LEVERAGE_C_GRID
