"""A calibration buckets a profile's kernel families the way the profiles it was fitted on had them.

Profiles made since c543069 keep each kernel family's time by the category each of its kernels ran as
(``by_category``), and ``calibration_buckets.buckets_of`` counts each part in its own bucket. A fit of older
profiles (every H200 profile of the consolidated store) has one bucket per family, under the row's
label: fed a split profile, the parts outside that label would land in buckets it never saw and lose
their correction. So the fleet records whether its published models were split, the saved file
keeps it, and a prediction buckets the profile the same way.

The profile is a real one: ``tests/data/h100-result-vit_base_patch16_224.json``, ViT-B/16 at batch 64,
bf16, from the H100 store (``bench/results/h100-profiles/``, run 10, visprof b537c49), whose
``nvjet_sm90_tst`` GEMM family ran as attention projections (1.12 ms) and as linear layers (2.01 ms).
"""
from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from visprof.analysis import sources
from visprof.analysis.calibrate import MIN_MODELS, Fit
from visprof.analysis.calibration_buckets import buckets_of, splits_families
from visprof.analysis.calibration_file import SavedCalibration
from visprof.analysis.calibration_fleet import fleet_from_comparison
from visprof.analysis.compare import compare
from visprof.analysis.gpus import gpu_table
from visprof.analysis.sources import Measurement
from visprof.base.errors import BadInputError
from visprof.result import ProfileResult

DATA = Path(__file__).resolve().parents[1] / "data"
GEMM = "nvjet_sm90_tst"
AS_LINEAR, AS_PROJECTION = f"kf:linear/-/{GEMM}", f"kf:attention/projections/{GEMM}"


def vit() -> ProfileResult:
    return ProfileResult.load(DATA / "h100-result-vit_base_patch16_224.json")


def unsplit(result: ProfileResult) -> ProfileResult:
    bare = copy.deepcopy(result)
    for row in bare.kernel_families:
        row.by_category = None
    return bare


def saved(split_families: bool) -> SavedCalibration:
    """Corrections on the GEMM family's two buckets only: x1.5 for the linear part, x0.5 for the
    projections', so the bucketing decides the prediction."""
    fit = Fit([AS_LINEAR, AS_PROJECTION], 0.1, 0.0, np.log([1.5, 0.5]), np.eye(3) * 0.01, q_low=-0.05, q_high=0.05)
    return SavedCalibration("rtx4090", "rtx5090", "fp16", fit, {}, split_families=split_families)


def test_the_recorded_profile_splits_its_gemm_family():
    result = vit()
    gemm = next(k for k in result.kernel_families if k.family == GEMM)
    assert gemm.category == "linear" and set(gemm.by_category) == {"linear", "attention/projections"}
    assert splits_families(result) and not splits_families(unsplit(result))
    split, whole = buckets_of(result), buckets_of(result, split_families=False)
    assert split[AS_PROJECTION] > 0.05 and AS_PROJECTION not in whole
    assert whole[AS_LINEAR] == pytest.approx(split[AS_LINEAR] + split[AS_PROJECTION], rel=1e-12)
    assert whole == pytest.approx(buckets_of(unsplit(result)), rel=1e-12)  # as if it had no split at all


@pytest.mark.parametrize("split_families", [False, True])
def test_a_saved_fit_predicts_a_split_profile_with_the_buckets_it_was_fitted_on(split_families):
    table = gpu_table()
    profile = sources.from_result(vit(), "h100.json", table)
    bare = dataclasses.replace(profile, result=unsplit(profile.result))
    cal = saved(split_families)
    got, as_unsplit = cal.predict(profile, table, spec=1.4), cal.predict(bare, table, spec=1.4)
    shares = buckets_of(profile.result)
    if split_families:  # each part at its own correction
        expected = 1.4 * 1.5 ** shares[AS_LINEAR] * 0.5 ** shares[AS_PROJECTION]
        assert got.calibrated == pytest.approx(expected, rel=1e-12)
        assert got.calibrated < as_unsplit.calibrated
    else:  # the whole family at the linear correction, as the fit saw every profile
        assert got.calibrated == pytest.approx(as_unsplit.calibrated, rel=1e-15)
        assert got.calibrated == pytest.approx(1.4 * 1.5 ** (shares[AS_LINEAR] + shares[AS_PROJECTION]), rel=1e-12)


def test_the_file_keeps_it_and_an_older_file_reads_as_unsplit(tmp_path):
    for flag in (True, False):
        saved(flag).save(tmp_path / f"{flag}.json")
        assert SavedCalibration.load(tmp_path / f"{flag}.json").split_families is flag
    doc = json.loads((tmp_path / "True.json").read_text())
    del doc["split_families"]  # a file of before the key: its profiles had no split
    (tmp_path / "old.json").write_text(json.dumps(doc))
    assert SavedCalibration.load(tmp_path / "old.json").split_families is False
    doc["split_families"] = "yes"
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(BadInputError, match=r"bad\.json: not a visprof calibration \(split_families is not true"):
        SavedCalibration.load(tmp_path / "bad.json")


def reference(model, gpu, samples):
    return Measurement(model=model, img_size=224, gpu_name=gpu, gpu_id=gpu, batch_size=1024, precision="fp16",
                       samples_per_s=samples, source="test", kind="reference")


@pytest.mark.parametrize("split_published, expected", [(0, False), (1, True)])
def test_the_fleet_says_whether_its_published_models_were_split(split_published, expected):
    """Only the published models count: a split profile the fit merely predicts does not make it split,
    and is bucketed as they were (as a saved fit would bucket it)."""
    table = gpu_table()
    profile = sources.from_result(unsplit(vit()), "h100.json", table)
    split_profile = sources.from_result(vit(), "h100.json", table)
    names = [f"vit_base_patch16_224_v{i}" for i in range(MIN_MODELS + 1)]  # the last: on neither table
    profiles = [dataclasses.replace(split_profile if i < split_published or i == MIN_MODELS else profile, model=n)
                for i, n in enumerate(names)]
    refs = [reference(n, gpu, r * (1.3 if gpu == "rtx5090" else 1.0))
            for n, r in zip(names[:-1], range(900, 900 + 10 * MIN_MODELS, 10)) for gpu in ("rtx4090", "rtx5090")]
    comparison = compare([*profiles, *refs], base="rtx4090", target="rtx5090", table=table)
    fleet, missing = fleet_from_comparison(comparison, profiles, table)
    assert missing == 0 and len(fleet.models) == MIN_MODELS + 1
    assert fleet.split_families is expected
    shares = buckets_of(vit(), split_families=expected)
    unpublished = fleet.models.index(names[-1])
    assert np.isnan(fleet.log_obs[unpublished])
    assert fleet.X[unpublished, fleet.features.index(AS_LINEAR)] == pytest.approx(shares[AS_LINEAR], rel=1e-12)
