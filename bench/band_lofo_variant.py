"""A variant of the calibration band, judged by bench/band_quartiles.py: the band of families the fit never
saw takes its residuals and leverages from fits that leave out one training family at a time, instead of
from 5 inner folds of families. Each such fit has all the training rows but one family's, as the fit that
predicts new families has, so its leverages are on their scale.

    python bench/band_lofo_variant.py --pair /tmp/pair1.db rtx3090 rtx4090 \\
        --pair /tmp/pair2.db rtx4090 rtx5090 --store /tmp/profiles.db

Arguments: band_quartiles's own. The rule and why: bench/results/band-lofo-2026-12-05/prereg.md. It
wraps ``calibrate.fit_calibration`` for the run: the penalty, the fit and the band of models with
relatives are the function's own; only ``c``, ``q_low`` and ``q_high`` are made again.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import visprof.analysis.calibrate as calibrate
from visprof.analysis.calibration_band import band_from_residuals

sys.path.insert(0, str(Path(__file__).resolve().parent))
import band_quartiles  # noqa: E402

_fit_calibration = calibrate.fit_calibration


def fit_with_lofo_band(fleet, idx=None, lam=None, inner_folds=5):
    fit = _fit_calibration(fleet, idx, lam, inner_folds)
    if idx is None:
        idx = np.flatnonzero(np.isfinite(fleet.log_obs))
    idx = np.asarray(idx)
    names = sorted({fleet.families[i] for i in idx})
    family_fold = np.array([names.index(fleet.families[i]) for i in idx])
    res, h, _ = calibrate._cv_residuals(fleet, idx, fit.lam, len(names), folds=family_fold)
    ok = np.isfinite(res)
    fit.c, fit.q_low, fit.q_high = band_from_residuals(res[ok], h[ok], fleet.weights(idx)[ok])
    return fit


def main(argv=None) -> int:
    calibrate.fit_calibration = fit_with_lofo_band  # read by band_quartiles
    return band_quartiles.main(argv)


if __name__ == "__main__":
    sys.exit(main())
