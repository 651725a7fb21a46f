"""bench/band_coverage_c_variant.py: the band's leverage coefficient chosen for even coverage over leverage."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import visprof.analysis.calibration_band as calibration_band

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import band_coverage_c_variant as variant  # noqa: E402


def residuals(growth: float, n: int = 4000, seed: int = 0):
    """Residuals whose spread is sqrt(1 + growth h), Laplace (heavy-tailed, as the fit's are)."""
    rng = np.random.default_rng(seed)
    h = rng.uniform(0.0, 1.0, n)
    return rng.laplace(0.0, 0.05, n) * np.sqrt(1.0 + growth * h), h, np.ones(n)


def test_spread_that_grows_with_leverage_gets_a_c_that_covers_each_quartile_alike():
    res, h, w = residuals(growth=8.0)
    c = variant.coverage_coefficient(res, h, w)
    assert 4.0 <= c <= 16.0
    assert variant.quartile_miss(res, h, w, c) < 0.03
    # no leverage factor leaves the highest quartile short
    assert variant.quartile_miss(res, h, w, 0.0) > variant.quartile_miss(res, h, w, c) + 0.03


def test_constant_spread_keeps_the_band_flat():
    res, h, w = residuals(growth=0.0)
    assert variant.coverage_coefficient(res, h, w) <= 0.5


def test_the_run_replaces_the_coefficient_the_band_reads(monkeypatch):
    called = []
    monkeypatch.setattr(variant.band_quartiles, "main", lambda argv=None: called.append(argv) or 0)
    monkeypatch.setattr(calibration_band, "leverage_coefficient", calibration_band.leverage_coefficient)
    assert variant.main(["--x"]) == 0 and called == [["--x"]]
    assert calibration_band.leverage_coefficient is variant.coverage_coefficient
    res, h, w = residuals(growth=8.0)
    c, low, high = calibration_band.band_from_residuals(res, h, w)
    assert c == variant.coverage_coefficient(res, h, w) and low < 0 < high
