"""The calibration's covariate from the base GPU's published number (calibration_fleet.BASE_COVARIATE):
how a model really ran on the base GPU against what its profile predicts there."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from recorded_results import recorded_result
from visprof.analysis import sources
from visprof.analysis.calibrate import COVARIATE_SCALE, MIN_MODELS
from visprof.analysis.calibration_fleet import BASE_COVARIATE, base_time_over_predicted, fleet_from_comparison
from visprof.analysis.compare import compare
from visprof.analysis.gpus import gpu_table
from visprof.analysis.sources import Measurement


def reference(model, gpu, samples):
    return Measurement(model=model, img_size=224, gpu_name=gpu, gpu_id=gpu, batch_size=1024, precision="fp16",
                       samples_per_s=samples, source="test", kind="reference")


@pytest.mark.parametrize("published, predicted, expected", [
    (1000.0, 1250.0, math.log(1.25)),  # the base ran slower than its profile says: positive
    (1000.0, 800.0, math.log(0.8)),
    (None, 800.0, None), (1000.0, None, None), (0.0, 800.0, None), (1000.0, -1.0, None)])
def test_it_is_the_log_of_published_over_predicted_time(published, predicted, expected):
    got = base_time_over_predicted(published, predicted)
    assert got == (None if expected is None else pytest.approx(expected, rel=1e-12))


def test_each_compared_model_gets_its_own_and_a_profile_without_a_published_pair_the_median():
    """The fleet's column is each model's log(published / predicted base time), standardized over the
    fleet; a profiled model outside the tables gets the median of the others, kept as the fill."""
    table = gpu_table()
    profile = sources.from_result(recorded_result("deit_small_patch16_224"), "h200.json", table)
    names = [f"deit_small_patch16_224_v{i}" for i in range(MIN_MODELS + 1)]
    profiles = [dataclasses.replace(profile, model=name) for name in names]
    base_rates = [3000.0 + 100.0 * i for i in range(MIN_MODELS)]  # the last model is on neither table
    refs = [reference(n, "rtx4090", r) for n, r in zip(names, base_rates)]
    refs += [reference(n, "rtx5090", 1.3 * r) for n, r in zip(names, base_rates)]
    comparison = compare([*profiles, *refs], base="rtx4090", target="rtx5090", table=table)
    fleet, missing = fleet_from_comparison(comparison, profiles, table)
    assert missing == 0 and len(fleet.models) == MIN_MODELS + 1
    by_model = {mc.model: mc for mc in comparison.models}
    raw = np.array([math.log(by_model[n].predicted_base_samples_per_s / r) for n, r in zip(names, base_rates)])
    fill = float(np.median(raw))
    assert fleet.covariate_fills == {BASE_COVARIATE: pytest.approx(fill, rel=1e-12)}
    column = np.array([raw[names.index(n)] if n in by_model else fill for n in fleet.models])
    assert np.isnan(fleet.log_obs[fleet.models.index(names[-1])])  # the unpublished one, at the fill
    assert fleet.covariate_filled == [n == names[-1] for n in fleet.models]  # so it gets the filled band
    mean, sd = fleet.covariate_scales[BASE_COVARIATE]
    assert (mean, sd) == pytest.approx((column.mean(), column.std()), rel=1e-12)
    got = fleet.X[:, fleet.features.index(f"cov:{BASE_COVARIATE}")]
    assert got == pytest.approx((column - mean) / sd * COVARIATE_SCALE, rel=1e-9)
    # the faster the base ran against its prediction, the lower the value
    published = [fleet.models.index(n) for n in names[:-1]]
    assert np.all(np.diff(got[published]) < 0)


def test_a_model_measured_on_the_base_only_is_predicted_from_that_number():
    """The user's case: a model's number on the GPU they have, none on the target. Its spec speed-up is
    made at that row's batch and its base covariate from that number, not the fleet's median."""
    from visprof.analysis.compare import on_base_and_target

    table = gpu_table()
    profile = sources.from_result(recorded_result("deit_small_patch16_224"), "h200.json", table)
    names = [f"deit_small_patch16_224_v{i}" for i in range(MIN_MODELS + 2)]
    profiles = [dataclasses.replace(profile, model=name) for name in names]
    base_rates = [3000.0 + 100.0 * i for i in range(MIN_MODELS + 1)]  # the last model: on neither table
    refs = [reference(n, "rtx4090", r) for n, r in zip(names, base_rates)]
    refs += [reference(n, "rtx5090", 1.3 * r) for n, r in zip(names[:MIN_MODELS], base_rates)]  # v20: base only
    comparison = compare([*profiles, *refs], base="rtx4090", target="rtx5090", table=table)
    assert set(comparison.base_only) == {(names[MIN_MODELS], 224)}
    fleet, _ = fleet_from_comparison(comparison, profiles, table)
    base_only, neither = fleet.models.index(names[MIN_MODELS]), fleet.models.index(names[MIN_MODELS + 1])
    assert np.isnan(fleet.log_obs[base_only]) and np.isnan(fleet.log_obs[neither])
    on = on_base_and_target(profiles[MIN_MODELS], comparison.base_only[(names[MIN_MODELS], 224)],
                            comparison.base_spec, comparison.target_spec, table)
    assert fleet.log_spec[base_only] == pytest.approx(math.log(on.speedup), rel=1e-12)  # at the row's batch 1024
    mean, sd = fleet.covariate_scales[BASE_COVARIATE]
    column = fleet.X[:, fleet.features.index(f"cov:{BASE_COVARIATE}")] / COVARIATE_SCALE * sd + mean
    assert column[base_only] == pytest.approx(math.log(on.base_samples_per_s / base_rates[MIN_MODELS]), rel=1e-9)
    assert column[neither] == pytest.approx(fleet.covariate_fills[BASE_COVARIATE], rel=1e-9)
    assert not fleet.covariate_filled[base_only] and fleet.covariate_filled[neither]
    assert len(fleet.models) == MIN_MODELS + 2  # both are predicted by the fit (no published speed-up)
