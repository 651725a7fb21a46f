"""visprof.analysis.calibration_band: the band's quantiles and how fast it widens with the leverage."""
from __future__ import annotations

import numpy as np
import pytest

from visprof.analysis.calibration_band import LEVERAGE_C_GRID, band_from_residuals, band_quantiles, leverage_coefficient


def test_band_quantiles_weigh_residuals_as_the_fit_weighs_models():
    z = np.array([-2.0] * 5 + [-1.0] * 10 + [0.0] * 70 + [1.0] * 10 + [2.0] * 5)
    assert band_quantiles(z, np.ones(100)) == (-1.0, 1.0)
    # the outermost residuals' models weighing 4x: a family of few models that the fit misses
    assert band_quantiles(z, np.where(np.abs(z) == 2, 4.0, 1.0)) == (-2.0, 2.0)
    # the well-predicted ones weighing 10x: a large family
    assert band_quantiles(z, np.where(z == 0, 10.0, 1.0)) == (0.0, 0.0)


@pytest.mark.parametrize("c", [0.0, 1.0, 8.0, 32.0])
def test_the_coefficient_of_laplace_residuals_is_recovered(c):
    rng = np.random.default_rng(1)
    h = rng.uniform(0.0, 1.0, 20000)
    res = rng.laplace(0.0, 0.05 * np.sqrt(1.0 + c * h))
    assert leverage_coefficient(res, h, np.ones_like(h)) == c


def test_weights_decide_which_residuals_count():
    rng = np.random.default_rng(2)
    h = rng.uniform(0.0, 1.0, 20000)
    flat = rng.laplace(0.0, 0.05, h.size)  # c = 0 ...
    steep = rng.laplace(0.0, 0.05 * np.sqrt(1.0 + 16.0 * h))  # ... and c = 16
    res, w = np.concatenate([flat, steep]), np.concatenate([np.full(h.size, 1e-6), np.ones(h.size)])
    assert leverage_coefficient(res, np.concatenate([h, h]), w) == 16.0


def test_the_band_covers_as_stated_at_every_leverage():
    rng = np.random.default_rng(3)
    h = rng.uniform(0.0, 2.0, 40000)
    res = rng.laplace(0.0, 0.03 * np.sqrt(1.0 + 8.0 * h))
    train, test = slice(0, 20000), slice(20000, None)
    c, low, high = band_from_residuals(res[train], h[train], np.ones(20000))
    assert c == 8.0 and c in LEVERAGE_C_GRID
    scale = np.sqrt(1.0 + c * h[test])
    inside = (res[test] >= low * scale) & (res[test] <= high * scale)
    edges = np.quantile(h[test], [0.25, 0.5, 0.75])
    quartile = np.digitize(h[test], edges)
    assert all(0.78 <= inside[quartile == q].mean() <= 0.82 for q in range(4))
    # with the noise's own factor (c = 1) it is too wide where the leverage is low, too narrow where it is high
    low1, high1 = band_quantiles(res[train] / np.sqrt(1.0 + h[train]), np.ones(20000))
    scale1 = np.sqrt(1.0 + h[test])
    inside1 = (res[test] >= low1 * scale1) & (res[test] <= high1 * scale1)
    by_quartile = [inside1[quartile == q].mean() for q in range(4)]
    assert by_quartile[0] > 0.85 and by_quartile[3] < 0.78
