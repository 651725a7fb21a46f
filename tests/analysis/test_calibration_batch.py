"""At which batch a calibration predicts the models its published table lacks: the table's, where
the fit and its band were made. At each profile's own batch (64 in the H200 store) the 80% band
held 15% of the published 3090 -> 4090 speed-ups and the median error was +11%."""
from __future__ import annotations

import dataclasses
import json
import math

import pytest

from recorded_results import recorded_result
from saved_calibration import saved_calibration
from visprof.analysis import sources
from visprof.analysis.calibrate import MIN_MODELS, fit_calibration, unpublished_predictions
from visprof.analysis.calibration_ratios import ratio_table
from visprof.analysis.calibration_file import SavedCalibration
from visprof.analysis.calibration_fleet import fleet_from_comparison, spec_at_own_batch
from visprof.analysis.calibration_sentences import sentences
from visprof.analysis.compare import compare
from visprof.analysis.gpus import gpu_table
from visprof.analysis.sources import Measurement
from visprof.cli.calibration import calibrated_section

PUBLISHED_BATCH = 1024


def _reference(model, gpu, samples):
    return Measurement(model=model, img_size=224, gpu_name=gpu, gpu_id=gpu, batch_size=PUBLISHED_BATCH,
                       precision="fp16", samples_per_s=samples, source="test", kind="reference")


@pytest.fixture(scope="module")
def fleet_and_profile():
    table = gpu_table()
    profile = sources.from_result(recorded_result("deit_small_patch16_224"), "h200.json", table)
    assert profile.batch_size != PUBLISHED_BATCH
    import timm

    # timm names of two families (the fit holds families out); one profile's buckets for all
    names = timm.list_models("resnet*")[:MIN_MODELS // 2] + timm.list_models("convnext*")[:MIN_MODELS - MIN_MODELS // 2 + 1]
    assert len(set(names)) == MIN_MODELS + 1
    profiles = [dataclasses.replace(profile, model=name) for name in names]
    rates = [3000.0 + 100.0 * i for i in range(MIN_MODELS)]  # the last model is on neither table
    refs = [_reference(n, "rtx4090", r) for n, r in zip(names, rates)]
    refs += [_reference(n, "rtx5090", (1.2 + 0.01 * i) * r) for i, (n, r) in enumerate(zip(names, rates))]
    comparison = compare([*profiles, *refs], base="rtx4090", target="rtx5090", table=table)
    fleet, _ = fleet_from_comparison(comparison, profiles, table)
    return fleet, profiles[-1], comparison, table


def test_a_model_the_table_lacks_is_predicted_at_the_published_batch(fleet_and_profile):
    fleet, unpublished, comparison, table = fleet_and_profile
    assert fleet.batch_size == PUBLISHED_BATCH
    at = {batch: spec_at_own_batch(unpublished, comparison.base_spec, comparison.target_spec, table, "fp16", batch)[2]
          for batch in (PUBLISHED_BATCH, unpublished.batch_size)}
    assert at[PUBLISHED_BATCH] != pytest.approx(at[unpublished.batch_size], rel=1e-3)  # the batch matters here
    assert math.exp(fleet.log_spec[-1]) == pytest.approx(at[PUBLISHED_BATCH], rel=1e-12)
    fit = fit_calibration(fleet, lam=1.0)
    rows = unpublished_predictions(fit, fleet)
    assert [(r["model"], r["img_size"], r["batch_size"]) for r in rows] == \
        [(unpublished.model, 224, PUBLISHED_BATCH)]


def test_one_prediction_has_one_band(fleet_and_profile):
    """Its sentence (calibrate --json's "sentences") had the band of a model with a published base
    number, its "unpublished" entry that of one without: two bands for one prediction."""
    fleet, unpublished, _, _ = fleet_and_profile
    fit = fit_calibration(fleet, lam=1.0)
    row = unpublished_predictions(fit, fleet)[0]
    sentence = sentences(fit, fleet, [unpublished.model])[0]
    assert (sentence.low, sentence.calibrated, sentence.high) == \
        pytest.approx((row["low"], row["calibrated"], row["high"]), rel=1e-12)


def test_the_models_column_counts_the_fitted_models(fleet_and_profile):
    fleet, *_ = fleet_and_profile
    fit = fit_calibration(fleet, lam=1.0)
    assert max(b.models for b in ratio_table(fit, fleet)) == MIN_MODELS  # not the predicted one too


def test_a_saved_calibration_predicts_at_its_published_batch_and_says_so(fleet_and_profile, tmp_path):
    _, profile, _, table = fleet_and_profile
    saved = saved_calibration(profile.result, batch_size=PUBLISHED_BATCH)
    path = tmp_path / "cal.json"
    saved.save(path)
    loaded = SavedCalibration.load(path)
    assert loaded.batch_size == PUBLISHED_BATCH
    default = loaded.predict(profile, table)
    assert default.spec_speedup == pytest.approx(loaded.predict(profile, table, batch_size=PUBLISHED_BATCH).spec_speedup)
    own = loaded.predict(profile, table, batch_size=profile.batch_size)
    assert own.spec_speedup != pytest.approx(default.spec_speedup, rel=1e-3)
    text, _ = calibrated_section(loaded, table, [profile])
    assert f"at the published batch {PUBLISHED_BATCH} and" in text
    text, _ = calibrated_section(loaded, table, [profile], batch_size=64)
    assert f"at batch 64 (the band's coverage was measured at the published batch {PUBLISHED_BATCH} only)" in text


def test_a_file_written_before_the_batch_was_kept_predicts_at_each_profiles_batch(fleet_and_profile, tmp_path):
    _, profile, _, table = fleet_and_profile
    doc = saved_calibration(profile.result, batch_size=None).to_dict()
    doc.pop("batch_size")
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    old = SavedCalibration.load(path)
    assert old.batch_size is None
    assert old.predict(profile, table).spec_speedup == \
        pytest.approx(old.predict(profile, table, batch_size=profile.batch_size).spec_speedup)
    assert "each profile at its own batch" in calibrated_section(old, table, [profile])[0]


@pytest.mark.parametrize("batch", [0, -4, 2.5, "64", True])
def test_a_damaged_batch_is_one_line(fleet_and_profile, tmp_path, batch):
    _, profile, _, _ = fleet_and_profile
    doc = {**saved_calibration(profile.result).to_dict(), "batch_size": batch}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    from visprof.base.errors import BadInputError

    with pytest.raises(BadInputError, match="batch_size is not a positive whole number"):
        SavedCalibration.load(path)
