"""bench/band_lofo_variant.py: the band of unseen families from leave-one-family-out fits."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import visprof.analysis.calibrate as calibrate
from calibration_fleets import kin_fleet

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import band_lofo_variant as variant  # noqa: E402


def test_only_the_unseen_families_band_is_made_again():
    fleet = kin_fleet(n_families=20, per_family=6)
    idx = np.arange(len(fleet.models))[:90]
    before = calibrate.fit_calibration(fleet, idx)
    after = variant.fit_with_lofo_band(fleet, idx)
    assert after.lam == before.lam and np.allclose(after.delta, before.delta)  # the fit is the function's own
    assert (after.c_seen, after.q_low_seen, after.q_high_seen) == (before.c_seen, before.q_low_seen, before.q_high_seen)
    assert after.q_low < 0 < after.q_high


def test_the_band_comes_from_one_fit_per_left_out_family(monkeypatch):
    fleet = kin_fleet(n_families=12, per_family=5)
    calls = []
    real = calibrate._cv_residuals

    def spy(fleet_, idx, lam, k, folds=None, **options):
        calls.append((k, None if folds is None else np.asarray(folds).copy(), idx))
        return real(fleet_, idx, lam, k, folds=folds, **options)

    monkeypatch.setattr(calibrate, "_cv_residuals", spy)
    variant.fit_with_lofo_band(fleet)
    k, folds, idx = calls[-1]
    assert k == 12
    # one fold per family: every row of a family in one fold, and no two families share a fold
    pairs = {(fleet.families[i], f) for i, f in zip(idx, folds)}
    assert len(pairs) == 12 == len({f for _, f in pairs})


def test_the_run_replaces_the_fit_band_quartiles_reads(monkeypatch):
    monkeypatch.setattr(variant.band_quartiles, "main", lambda argv=None: 0)
    monkeypatch.setattr(calibrate, "fit_calibration", calibrate.fit_calibration)
    assert variant.main([]) == 0
    assert calibrate.fit_calibration is variant.fit_with_lofo_band
