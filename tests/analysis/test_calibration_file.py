"""visprof.analysis.calibration_file: a calibration saved, loaded and applied to a profile it never saw."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from recorded_results import recorded_result
from saved_calibration import BASE_FILL, saved_calibration
from visprof.analysis import sources
from visprof.analysis.calibrate import COVARIATE_SCALE, make_fleet
from visprof.analysis.calibration_buckets import buckets_of
from visprof.analysis.calibration_fleet import BASE_COVARIATE, profile_covariates, spec_at_own_batch
from visprof.analysis.calibration_file import SCHEMA, SavedCalibration
from visprof.analysis.gpus import gpu_table
from visprof.base.errors import BadInputError


@pytest.fixture(scope="module")
def profile():
    return sources.from_result(recorded_result("deit_small_patch16_224"), "test", gpu_table())


def saved_for(profile, fitted=("deit_small_patch16_224.fb_in1k",)) -> SavedCalibration:
    return saved_calibration(profile.result, fitted=fitted)


def by_hand(saved: SavedCalibration, profile, spec: float, base_over: float = BASE_FILL) -> tuple[float, float, float]:
    shares = buckets_of(profile.result)
    time, intensity = profile_covariates(profile.result)
    raw = {"spec": math.log(spec), "profile_time_per_sample": time, "profile_flops_per_byte": intensity,
           BASE_COVARIATE: base_over}
    x = [(raw[f[4:]] - saved.covariate_scales[f[4:]][0]) / saved.covariate_scales[f[4:]][1] * COVARIATE_SCALE
         if f.startswith("cov:") else shares.get(f, 0.0) for f in saved.fit.features]
    mid = math.log(spec) + saved.fit.intercept + float(np.dot(x, saved.fit.delta))
    z = np.array([1.0, *x])
    scale = math.sqrt(1 + saved.fit.c * (z @ saved.fit.A_inv @ z))  # the band widens with the leverage
    return math.exp(mid), math.exp(mid + saved.fit.q_low * scale), math.exp(mid + saved.fit.q_high * scale)


def test_a_profile_is_calibrated_as_the_fit_predicts_and_the_file_keeps_it(profile, tmp_path):
    saved = saved_for(profile)
    got = saved.predict(profile, gpu_table(), spec=1.5)
    assert (got.calibrated, got.low, got.high) == pytest.approx(by_hand(saved, profile, 1.5), rel=1e-12)
    assert got.low < got.calibrated < got.high and got.spec_speedup == 1.5
    assert got.fitted  # the fit saw it, under its pretrained tag
    assert not saved_for(profile, fitted=("vit_base_patch16_224",)).predict(profile, gpu_table(), spec=1.5).fitted
    saved.save(tmp_path / "cal.json")
    back = SavedCalibration.load(tmp_path / "cal.json")
    again = back.predict(profile, gpu_table(), spec=1.5)
    assert (again.calibrated, again.low, again.high) == pytest.approx((got.calibrated, got.low, got.high), rel=1e-8)
    assert back.describe() == ("calibration rtx4090 -> rtx5090, fitted on 1 published models of 1 families; families "
                               "held out: Spearman 0.700, median error 4.0%, 80% band holding 80.0%")
    assert repr(back) == f"<SavedCalibration {back.describe()}>"


def test_without_a_spec_speed_up_it_is_made_at_the_published_batch(profile):
    """At the batch the fit was made at (the file keeps it), not at the profile's (64): there the
    band held a sixth of the published speed-ups (tests/analysis/test_calibration_batch.py)."""
    table = gpu_table()
    saved = saved_for(profile)
    assert saved.batch_size == 1024 != profile.batch_size
    _, _, spec = spec_at_own_batch(profile, table.get("rtx4090"), table.get("rtx5090"), table, "fp16", 1024)
    got = saved.predict(profile, table)
    assert spec > 1 and got.spec_speedup == pytest.approx(spec)
    assert got.calibrated == pytest.approx(by_hand(saved, profile, spec)[0], rel=1e-12)


def test_at_a_batch_the_user_names_the_spec_speed_up_is_made_there(profile):
    """predict --batch-size N --calibration: the calibrated speed-up at N, whatever the file's batch."""
    table = gpu_table()
    saved = saved_for(profile)
    _, _, at_1024 = spec_at_own_batch(profile, table.get("rtx4090"), table.get("rtx5090"), table, "fp16", 1024)
    _, _, at_own = spec_at_own_batch(profile, table.get("rtx4090"), table.get("rtx5090"), table, "fp16")
    assert profile.batch_size == 64 and at_1024 != pytest.approx(at_own, rel=1e-3)
    got = saved.predict(profile, table, batch_size=1024)
    assert got.spec_speedup == pytest.approx(at_1024, rel=1e-12)
    assert got.calibrated == pytest.approx(by_hand(saved, profile, at_1024)[0], rel=1e-12)
    assert saved.predict(profile, table, batch_size=64).spec_speedup == pytest.approx(at_own, rel=1e-12)


def test_a_profile_without_roofline_groups_is_not_predicted(profile):
    import copy

    bare = copy.deepcopy(profile)
    bare.result.roofline = None
    assert saved_for(profile).predict(bare, gpu_table()) is None


def test_the_fleet_keeps_the_covariate_scales_it_standardized_with():
    fleet = make_fleet(["a", "b", "c"], ["f", "g", "h"], [{"idle": 1.0}] * 3, [1.0, 2.0, 3.0], [1.0, 2.0, 3.0],
                       features=["idle"], covariates={"spec": [0.0, 1.0, 2.0]})
    mean, sd = fleet.covariate_scales["spec"]
    assert (mean, sd) == pytest.approx((1.0, math.sqrt(2 / 3)))
    assert fleet.X[:, 1] == pytest.approx(np.array([-1.0, 0.0, 1.0]) / math.sqrt(2 / 3) * COVARIATE_SCALE)


def test_a_profile_of_a_family_the_fit_saw_gets_that_band_and_the_file_keeps_it(profile, tmp_path):
    import dataclasses

    saved = saved_for(profile)
    plain = saved.predict(profile, gpu_table(), spec=1.5)
    assert not plain.family_seen  # a file without the second band: the band of unseen families
    fit = dataclasses.replace(saved.fit, q_low_seen=-0.03, q_high_seen=0.02,
                              families=frozenset({"deit", "resnet"}))
    kin = dataclasses.replace(saved, fit=fit)
    got = kin.predict(profile, gpu_table(), spec=1.5)  # deit_small_patch16_224: timm's deit module
    as_unseen = dataclasses.replace(fit, q_low=-0.03, q_high=0.02, c=fit.c_seen)  # that band, by its own c
    _, low, high = by_hand(dataclasses.replace(kin, fit=as_unseen), profile, 1.5)
    assert got.family_seen and (got.low, got.high) == pytest.approx((low, high), rel=1e-12)
    assert got.calibrated == pytest.approx(plain.calibrated, rel=1e-12) and got.high / got.low < plain.high / plain.low
    kin.save(tmp_path / "cal.json")
    back = SavedCalibration.load(tmp_path / "cal.json")
    assert (back.fit.q_low_seen, back.fit.q_high_seen, back.fit.families) == (-0.03, 0.02, fit.families)
    assert (back.fit.c, back.fit.c_seen) == (4.0, 2.0)
    again = back.predict(profile, gpu_table(), spec=1.5)
    assert again.family_seen and (again.low, again.high) == pytest.approx((got.low, got.high), rel=1e-8)
    other = dataclasses.replace(kin, fit=dataclasses.replace(fit, families=frozenset({"resnet"})))
    assert not other.predict(profile, gpu_table(), spec=1.5).family_seen


def test_a_file_saved_before_the_band_s_leverage_coefficient_keeps_its_band(profile, tmp_path):
    import dataclasses

    doc = saved_for(profile).to_dict()
    del doc["band_c"], doc["band_c_seen"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    old = SavedCalibration.load(path)
    assert (old.fit.c, old.fit.c_seen) == (1.0, 1.0)  # the band such a file was saved with: sqrt(1 + h)
    got = old.predict(profile, gpu_table(), spec=1.5)
    assert (got.low, got.high) == pytest.approx(by_hand(old, profile, 1.5)[1:], rel=1e-12)
    wider = saved_for(profile).predict(profile, gpu_table(), spec=1.5)  # c = 4 there
    assert wider.calibrated == pytest.approx(got.calibrated, rel=1e-12) and wider.high / wider.low > got.high / got.low
    assert dataclasses.replace(old.fit, c=4.0).c == saved_for(profile).fit.c


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(schema="visprof.profile/1"), "schema is 'visprof.profile/1'"),
    (lambda d: d["delta"].pop(), "corrections"),
    (lambda d: d["covariate_scales"].pop("spec"), "covariate scales missing or invalid (cov:spec)"),
    (lambda d: d["covariate_scales"].update(spec=[0.0, -1.0]), "a spread <= 0"),
    (lambda d: d.pop("covariate_fills"), f"covariate '{BASE_COVARIATE}' has no value for profiles without a published"),
    (lambda d: d["covariate_fills"].update({BASE_COVARIATE: "median"}), "fill is not a finite number"),
    (lambda d: d.update(q_low="low"), "q_low is not a finite number"),
    (lambda d: d.update(q_low_seen=-0.1, q_high_seen="x", fitted_families=[]), "q_high_seen is not a finite number"),
    (lambda d: d.update(q_low_seen=-0.1, q_high_seen=0.1) or d.pop("fitted_families"), "fitted_families"),
    (lambda d: d.pop("intercept"), "not a visprof calibration (no 'intercept')"),
    (lambda d: d.update(features=list(range(len(d["features"])))), "features are not all bucket names"),
    (lambda d: d.update(covariate_scales=[[0.0, 1.0]]), "covariate_scales is not a table of covariates"),
    (lambda d: d.clear() or d.update(ratios=[], held_out={}, sentences=[]),
     "that is `visprof calibrate --json` output: the file to apply is the one --save writes"),
    (lambda d: d.update(band_c="wide"), "band_c is not a finite number"),
    (lambda d: d.update(band_c_seen=-1.0), "a band cannot narrow with the leverage"),
])
def test_a_damaged_file_is_one_line_naming_it(profile, tmp_path, change, message):
    doc = saved_for(profile).to_dict()
    change(doc)
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(BadInputError) as caught:
        SavedCalibration.load(path)
    text = str(caught.value)
    assert "\n" not in text and text.startswith(f"calibration file {path}") and message in text
    assert doc.get("schema") != SCHEMA or "not a visprof calibration" in text


def test_the_published_base_number_moves_the_prediction_and_a_profile_alone_gets_the_median(profile, tmp_path):
    saved = saved_for(profile)
    assert saved.reads_base_number
    alone = saved.predict(profile, gpu_table(), spec=1.5)
    assert (alone.calibrated, alone.low, alone.high) == pytest.approx(by_hand(saved, profile, 1.5, BASE_FILL), rel=1e-12)
    slow_base = saved.predict(profile, gpu_table(), spec=1.5, base_over=0.2)  # ran 22% slower than predicted there
    assert (slow_base.calibrated, slow_base.low, slow_base.high) == pytest.approx(by_hand(saved, profile, 1.5, 0.2),
                                                                                   rel=1e-12)
    assert slow_base.calibrated > alone.calibrated  # its fitted correction is positive (0.3 per unit)
    saved.save(tmp_path / "cal.json")
    back = SavedCalibration.load(tmp_path / "cal.json")
    assert back.covariate_fills == {BASE_COVARIATE: BASE_FILL}
    again = back.predict(profile, gpu_table(), spec=1.5, base_over=0.2)
    assert again.calibrated == pytest.approx(slow_base.calibrated, rel=1e-8)


def test_a_file_of_the_method_before_the_base_number_still_predicts(profile, tmp_path):
    old = saved_calibration(profile.result, base_covariate=False)
    doc = old.to_dict()
    del doc["covariate_fills"]  # files saved before it had none
    (tmp_path / "old.json").write_text(json.dumps(doc))
    back = SavedCalibration.load(tmp_path / "old.json")
    assert not back.reads_base_number and back.covariate_fills == {}
    got = back.predict(profile, gpu_table(), spec=1.5, base_over=0.2)  # a base number it does not read
    assert got.calibrated == pytest.approx(by_hand(back, profile, 1.5)[0], rel=1e-12)
    assert got.calibrated == pytest.approx(back.predict(profile, gpu_table(), spec=1.5).calibrated, rel=1e-12)
