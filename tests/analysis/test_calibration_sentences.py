"""Each model's calibrated speed-up told from the fitted ratios (visprof/analysis/calibration_sentences.py)."""
from __future__ import annotations

import math

import pytest

from test_calibrate import OFFSET, TRUE, synthetic
from visprof.analysis.calibrate import fit_calibration
from visprof.analysis.calibration_sentences import bucket_label, model_sentence, sentences


def test_the_factors_a_sentence_names_multiply_to_the_calibrated_over_the_spec_speed_up():
    fleet = synthetic(noise=0.01)
    fit = fit_calibration(fleet, lam=0.01)
    for s in sentences(fit, fleet)[:50]:
        product = s.offset * s.rest * math.prod(c.factor for c in s.contributions)
        assert product == pytest.approx(s.calibrated / s.spec_speedup, rel=1e-9)
        assert s.low <= s.calibrated <= s.high


def test_a_group_norm_model_is_told_by_its_group_norm():
    fleet = synthetic(noise=0.01)
    fit = fit_calibration(fleet, lam=0.01)
    # family0 runs group norm (f % 4 == 0): its normalization group is led by group norm's own bucket
    column = fleet.features.index("sub:normalization/group")
    index = max((i for i, m in enumerate(fleet.models) if m.startswith("m0_")), key=lambda i: fleet.X[i, column])
    s = model_sentence(fit, fleet, index, top=10)
    first = next(c for c in s.contributions if c.group == "normalization")
    share = fleet.X[index, fleet.features.index("cat:normalization")]
    assert first.group == "normalization" and first.share == pytest.approx(share)
    assert first.lead == "sub:normalization/group"
    assert first.lead_rate == pytest.approx(math.exp(OFFSET + TRUE["sub:normalization/group"]), rel=0.08)
    d = dict(zip(fit.features, fit.delta))
    assert first.factor == pytest.approx(math.exp(share * (d["cat:normalization"] + d["sub:normalization/group"])))
    assert first.factor < 1  # group norm slows this pair down
    assert s.published == pytest.approx(math.exp(fleet.log_obs[index]))
    text = s.text()
    assert text.startswith(f"{s.model}: x{s.calibrated:.2f}")
    assert f"normalization, {share:.0%} of its time: x{first.factor:.2f} (most: normalization/group, at x" in text


def test_names_select_models_and_labels_read_as_words():
    fleet = synthetic()
    fit = fit_calibration(fleet, lam=0.3)
    assert [s.model for s in sentences(fit, fleet, ["m3_1", "no_such_model", "m1_0"])] == ["m1_0", "m3_1"]
    assert bucket_label("op:normalization/group/group_norm") == "normalization/group/group_norm"
    assert bucket_label("op:elementwise/-/add") == "elementwise/add"
    assert bucket_label("kf:memory/cast/at::native::unrolled_elementwise_kernel") == \
        "kernels memory/cast/at::native::unrolled_elementwise_kernel"
    assert bucket_label("cov:profile_time_per_sample") == "its profile time per sample (covariate)"
    assert bucket_label("cov:base_time_over_predicted") == \
        "its published base time over its profile's prediction there (covariate)"
    assert bucket_label("idle") == "idle (launch-bound) time"


def test_the_cli_tells_named_models_and_says_which_it_does_not_hold():
    from visprof.cli.analysis import _explained

    fleet = synthetic()
    fleet.models[0] = "resnetv2_50d_gn.a1h_in1k"  # a published row keeps its pretrained tag
    fit = fit_calibration(fleet, lam=0.3)
    text = _explained(fit, fleet, ["resnetv2_50d_gn", "m1_0", "vit_nothing", "vit_unprofiled"],
                      {"resnetv2_50d_gn", "m1_0", "vit_unprofiled"})
    lines = text.splitlines()
    assert len(lines) == 5 and lines[0].startswith("told from the fit on all models of the pair (in sample")
    assert lines[1].strip().startswith("resnetv2_50d_gn.a1h_in1k: x") and lines[2].strip().startswith("m1_0: x")
    assert lines[3].strip() == ("vit_nothing: not among the calibrated models (not published on both GPUs, and its profile "
                                "gives no spec prediction)")
    assert lines[4].strip() == ("vit_unprofiled: not among the calibrated models (published on both GPUs, but no profile at "
                                "a published image size or no spec prediction)")
    # a tagged name finds the model under another tag, or none; an exact name only itself
    for name in ("resnetv2_50d_gn.other_tag", "resnetv2_50d_gn.a1h_in1k"):
        told = _explained(fit, fleet, [name], set()).splitlines()
        assert len(told) == 2 and told[1].strip().startswith("resnetv2_50d_gn.a1h_in1k: x"), told


def test_a_group_of_one_bucket_is_told_once():
    from visprof.analysis.calibration_sentences import Contribution

    assert Contribution("idle", 0.39, 1.02, "idle", 1.04).phrase() == \
        "idle (launch-bound) time, 39% of its time: x1.02 (at x1.04 of its spec ratio)"
    assert Contribution("memory", 0.13, 0.89, "cat:memory", 0.9).phrase() == \
        "memory, 13% of its time: x0.89 (at x0.90 of its spec ratio)"


def test_a_models_note_about_its_published_runs_ends_its_sentence():
    fleet = synthetic()
    assert fleet.notes == [""] * len(fleet.models)  # make_fleet: no notes, one empty per model
    fleet.notes[1] = "its two published runs took different paths: the RTX 5090 run held >= x2.00 ..."
    fit = fit_calibration(fleet, lam=0.3)
    noted, plain = model_sentence(fit, fleet, 1), model_sentence(fit, fleet, 0)
    assert noted.text().endswith("; its two published runs took different paths: the RTX 5090 run held >= x2.00 ...")
    assert noted.row()["note"] == fleet.notes[1]
    assert "different paths" not in plain.text() and plain.row()["note"] == ""


def test_one_model_at_two_sizes_is_told_apart_by_its_image_size():
    """calibrate --explain resnet50 printed four 'resnet50:' lines with different numbers, nothing
    to tell which profile each was."""
    fleet = synthetic()
    fleet.models[0] = fleet.models[1] = "resnet50"
    fleet.img_sizes = [224, 288] + [None] * (len(fleet.models) - 2)
    fit = fit_calibration(fleet, lam=0.3)
    told = sentences(fit, fleet, ["resnet50"])
    assert [s.text().split(":")[0] for s in told] == ["resnet50 @224", "resnet50 @288"]
    assert [s.row()["img_size"] for s in told] == [224, 288]
    assert model_sentence(fit, fleet, 2).text().split(":")[0] == fleet.models[2]  # no size known: none said
