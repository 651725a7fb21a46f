"""A variant of the calibration band's leverage coefficient, judged by bench/band_quartiles.py: ``c`` is
the one of LEVERAGE_C_GRID whose band covers each quartile of the inner residuals' leverage nearest 80%
(the smallest worst-quartile miss; ties to the smaller ``c``), instead of the Laplace-likelihood one.

    python bench/band_coverage_c_variant.py --pair /tmp/pair1.db rtx3090 rtx4090 \\
        --pair /tmp/pair2.db rtx4090 rtx5090 --store /tmp/profiles.db

Arguments: band_quartiles's own. The rule and why: bench/results/band-coverage-c-2026-12-05/prereg.md.
It replaces ``calibration_band.leverage_coefficient`` for the run instead of changing it.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import visprof.analysis.calibration_band as calibration_band

sys.path.insert(0, str(Path(__file__).resolve().parent))
import band_quartiles  # noqa: E402


def quartile_miss(res: np.ndarray, h: np.ndarray, w: np.ndarray, c: float) -> float:
    """The largest |coverage - COVERAGE| over the quartiles of ``h`` of the band built with ``c`` from
    the residuals ``res`` themselves (weighted by ``w``, as the band's quantiles are)."""
    z = res / np.sqrt(1.0 + c * h)
    low, high = calibration_band.band_quantiles(z, w)
    inside = (z >= low) & (z <= high)
    bins = np.digitize(h, np.quantile(h, [0.25, 0.5, 0.75]))
    misses = [abs(float(np.sum(w[bins == b] * inside[bins == b]) / np.sum(w[bins == b])) - calibration_band.COVERAGE)
              for b in range(4) if np.sum(w[bins == b]) > 0]
    return max(misses)


def coverage_coefficient(res: np.ndarray, h: np.ndarray, w: np.ndarray) -> float:
    """The ``c`` of LEVERAGE_C_GRID with the smallest worst-quartile miss; ties to the smaller ``c``."""
    return min(calibration_band.LEVERAGE_C_GRID, key=lambda c: (round(quartile_miss(res, h, w, c), 12), c))


def main(argv=None) -> int:
    calibration_band.leverage_coefficient = coverage_coefficient  # read by band_from_residuals
    return band_quartiles.main(argv)


if __name__ == "__main__":
    sys.exit(main())
