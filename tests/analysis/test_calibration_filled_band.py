"""The band of a calibrated prediction made without the model's published base number.

Such a prediction takes the fleet's median for the base covariate, and errs by what that number
would have told; its band is estimated with the held-out models predicted the same way
(bench/results/baseless-band-2026-12-05: on 4090 -> 5090 the band of predictions with the number
held 74% of base-less ones, the band estimated this way 80%)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from visprof.analysis.calibrate import Fit, fit_calibration, make_fleet
from visprof.analysis.calibration_file import SavedCalibration
from visprof.base.errors import BadInputError


def fleet_with_a_base_number(seed=4, n_families=30, per_family=10, strength=0.15):
    """Speed-ups that a covariate read from a published number explains (``strength`` per unit of
    it), beside two buckets; a model without the number takes the fleet's median."""
    rng = np.random.default_rng(seed)
    models, fams, rows, spec, obs, base = [], [], [], [], [], []
    for f in range(n_families):
        for m in range(per_family):
            conv = rng.uniform(0.2, 0.8)
            b = rng.normal(0, 1)
            s = math.exp(rng.normal(0.4, 0.1))
            models.append(f"m{f}_{m}")
            fams.append(f"family{f}")
            rows.append({"cat:convolution": conv, "idle": 1 - conv})
            spec.append(s)
            base.append(b)
            obs.append(s * math.exp(-0.2 * (1 - conv) + strength * b + rng.normal(0, 0.01)))
    return make_fleet(models, fams, rows, spec, obs, features=["cat:convolution", "idle"],
                      covariates={"base": base}, covariate_fills={"base": float(np.median(base))})


def test_a_prediction_without_the_number_gets_a_band_as_wide_as_its_error():
    fleet = fleet_with_a_base_number()
    fit = fit_calibration(fleet, lam=0.01)
    assert set(fit.filled_bands) == {False, True}
    c, low, high = fit.filled_bands[False]
    # the number explains 0.15 per sd: without it the error spreads by about that, the noise by 0.01
    assert high - low > 5 * (fit.q_high - fit.q_low)
    # held out, its band holds the stated share of the base-less predictions
    column = fleet.features.index("cov:base")
    x = fleet.X.copy()
    x[:, column] = np.median(fleet.X[:, column])
    mid, lo, hi = fit.predict(x, fleet.log_spec, None, [True] * len(x))
    obs = np.exp(fleet.log_obs)
    assert 0.7 <= np.mean((obs >= lo) & (obs <= hi)) <= 0.9
    _, lo_with, hi_with = fit.predict(x, fleet.log_spec)  # the band of predictions made with the number
    assert np.mean((obs >= lo_with) & (obs <= hi_with)) < 0.3
    assert np.all(lo < lo_with) and np.all(hi > hi_with)


def test_a_fleet_without_a_covariate_that_can_be_missing_has_no_filled_band():
    fleet = fleet_with_a_base_number()
    plain = make_fleet(fleet.models, fleet.families, [{"cat:convolution": v} for v in fleet.X[:, 0]],
                       np.exp(fleet.log_spec), np.exp(fleet.log_obs), features=["cat:convolution"])
    assert fit_calibration(plain, lam=0.01).filled_bands == {}


def saved(filled_bands) -> SavedCalibration:
    fit = Fit(["idle", "cov:base_time_over_predicted"], 0.1, 0.0, np.array([0.1, 0.2]), np.eye(3) * 0.01,
              q_low=-0.05, q_high=0.05, filled_bands=filled_bands)
    return SavedCalibration("rtx4090", "rtx5090", "fp16", fit, {"base_time_over_predicted": (0.0, 1.0)},
                            covariate_fills={"base_time_over_predicted": 0.0})


def test_the_file_keeps_the_filled_bands_and_an_older_file_has_none(tmp_path):
    bands = {False: (4.0, -0.2, 0.25), True: (2.0, -0.1, 0.12)}
    saved(bands).save(tmp_path / "cal.json")
    assert SavedCalibration.load(tmp_path / "cal.json").fit.filled_bands == bands
    doc = json.loads((tmp_path / "cal.json").read_text())
    assert doc["filled_bands"] == {"unseen": [4.0, -0.2, 0.25], "seen": [2.0, -0.1, 0.12]}
    del doc["filled_bands"]
    (tmp_path / "old.json").write_text(json.dumps(doc))
    assert SavedCalibration.load(tmp_path / "old.json").fit.filled_bands == {}
    doc["filled_bands"] = {"unseen": [-1.0, -0.2, 0.2]}
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(BadInputError, match=r"bad\.json: not a visprof calibration \(filled_bands: each band"):
        SavedCalibration.load(tmp_path / "bad.json")


def test_a_profile_alone_gets_the_filled_band_and_one_with_its_number_the_other(monkeypatch):
    from types import SimpleNamespace

    import visprof.analysis.calibration_file as calibration_file
    from visprof.analysis.gpus import gpu_table

    # a stand-in profile: all of its time idle, its covariates at 0
    monkeypatch.setattr(calibration_file, "buckets_of", lambda result, split=True: {"idle": 1.0})
    monkeypatch.setattr(calibration_file, "profile_covariates", lambda result: (0.0, 0.0))
    profile = SimpleNamespace(result=SimpleNamespace(), model="resnet50", gpu_id="h200")
    cal = saved({False: (0.0, -0.3, 0.3)})
    alone = cal.predict(profile, gpu_table(), spec=1.4)
    with_number = cal.predict(profile, gpu_table(), spec=1.4, base_over=0.0)
    assert alone.calibrated == pytest.approx(with_number.calibrated, rel=1e-12)  # the same point
    assert alone.high / alone.calibrated == pytest.approx(math.exp(0.3), rel=1e-12)  # c = 0: no widening
    # the band with the number: q 0.05, c 1, leverage h = 0.01 (intercept) + 0.01 (idle) at covariate 0
    assert with_number.high / with_number.calibrated == pytest.approx(math.exp(0.05 * math.sqrt(1.02)), rel=1e-12)
