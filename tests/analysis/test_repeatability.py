"""Identical work found from profiles, and the noise ceiling it puts on any speed-up predictor."""
from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest

from visprof.analysis.repeatability import identical_work_groups, repeatability, work_signature
from visprof.result import OpTypeRow, ProfileResult

DATA = Path(__file__).resolve().parents[1] / "data"


def vit_with_op_types() -> ProfileResult:
    """The recorded H200 ViT-B/16 profile with a two-row op-type table (the recording predates them)."""
    result = ProfileResult.load(DATA / "h200-result-vit_base_patch16_224.json")
    result.op_types = [
        OpTypeRow("aten.linear.default [high intensity]", "linear", None, 48.0, 48.0, 7.1, 0.40, 2101.3, 3120.2),
        OpTypeRow("aten.layer_norm.default", "normalization", "layer", 25.0, 25.0, 1.2, 0.07, 0.0, 1513.9),
    ]
    return result


def renamed(result: ProfileResult, name: str) -> ProfileResult:
    other = copy.deepcopy(result)
    other.model.name = name
    return other


def test_models_that_run_the_same_ops_on_the_same_tensors_group_together():
    vit = vit_with_op_types()
    deit = renamed(vit, "deit_base_patch16_224")
    more_calls = renamed(vit, "vit_base_patch16_more")
    more_calls.op_types[1].calls = 26.0  # one layer norm more: other work
    bigger = renamed(vit, "vit_base_patch16_240")
    bigger.model.img_size = 240
    untabled = renamed(vit, "vit_without_table")
    untabled.op_types = []
    results = {r.model.name: r for r in (vit, deit, more_calls, bigger, untabled)}
    assert work_signature(untabled) is None
    assert identical_work_groups(results) == [["deit_base_patch16_224", "vit_base_patch16_224"]]


def test_time_differences_do_not_make_work_differ():
    vit = vit_with_op_types()
    slower = renamed(vit, "vit_slower")
    slower.op_types[0].time_ms *= 1.3  # the time is what is measured, not what is run
    assert work_signature(slower) == work_signature(vit)


def test_a_profile_of_unknown_parameter_count_has_a_signature_of_its_ops():
    """A frozen TorchScript module's profile has param_count None: the signature raised a TypeError."""
    vit = vit_with_op_types()
    frozen = renamed(vit, "vit_frozen")
    frozen.model.param_count = None
    assert work_signature(frozen) != work_signature(vit) and work_signature(frozen)[2] == work_signature(vit)[2]


def test_pooled_within_group_spread_and_the_ceiling_it_leaves():
    log = {"a": math.log(1.10), "b": math.log(1.12), "c": math.log(1.50), "d": math.log(1.46),
           "e": math.log(0.80), "f": math.log(1.30)}
    rep = repeatability([["a", "b"], ["c", "d"], ["e", "unpublished"]], log)
    # two groups of two: each contributes (x1 - x2)^2 / 2 with one degree of freedom
    within = ((log["a"] - log["b"]) ** 2 / 2 + (log["c"] - log["d"]) ** 2 / 2) / 2
    values = list(log.values())
    mean = sum(values) / len(values)
    total = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    assert (rep.groups, rep.models) == (2, 4)
    assert rep.within_sd == pytest.approx(math.sqrt(within))
    assert rep.total_sd == pytest.approx(math.sqrt(total))
    assert rep.ceiling == pytest.approx(math.sqrt(1 - within / total))
    assert "2 groups, 4 models" in rep.line()


def test_noisy_published_numbers_lower_the_ceiling():
    quiet = {"a": 0.10, "b": 0.11, "c": 0.40, "d": 0.41, "e": 0.0}
    noisy = {"a": 0.10, "b": 0.30, "c": 0.40, "d": 0.20, "e": 0.0}
    groups = [["a", "b"], ["c", "d"]]
    assert repeatability(groups, quiet).ceiling > 0.95 > repeatability(groups, noisy).ceiling


def test_no_group_with_two_published_models_gives_no_figure():
    assert repeatability([["a", "b"]], {"a": 0.1, "b": math.nan, "c": 0.2}) is None
    assert repeatability([], {"a": 0.1}) is None
