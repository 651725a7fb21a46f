"""Small helpers of the analysis: rank correlation, ratio errors, ImageNet accuracy lookup."""
from __future__ import annotations

import math

import pytest

from visprof.analysis.accuracy import top1
from visprof.analysis.metrics import ranks, ratio_errors, spearman


def test_ranks_average_ties():
    assert ranks([10, 20, 20, 5]) == [2.0, 3.5, 3.5, 1.0]


def test_spearman_known_values():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # monotone but not linear: still 1
    assert spearman([1, 2, 3, 4, 5], [1, 4, 9, 16, 100]) == pytest.approx(1.0)
    # one swap among five: 1 - 6 * 2 / (5 * 24) = 0.9
    assert spearman([1, 2, 3, 4, 5], [1, 2, 3, 5, 4]) == pytest.approx(0.9)
    assert math.isnan(spearman([1, 2, 3], [7, 7, 7]))


def test_ratio_errors():
    e = ratio_errors([1.1, 0.8, 1.0, 2.0], [1.0, 1.0, 1.0, 1.0])
    assert e["median_abs"] == pytest.approx(0.15) and e["median_signed"] == pytest.approx(0.05)
    assert e["mean_abs"] == pytest.approx((0.1 + 0.2 + 0 + 1.0) / 4) and e["count"] == 4
    # p90 between ranks: of ten errors 0.01 .. 0.09 and 0.5 it is 0.09 + 0.1 * 0.41, not the largest (0.5)
    ten = ratio_errors([1 + e for e in (0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.5)], [1.0] * 10)
    assert ten["p90_abs"] == pytest.approx(0.09 + 0.1 * 0.41)


def test_accuracy_of_tagged_and_untagged_names():
    assert top1("eva02_large_patch14_448.mim_m38m_ft_in22k_in1k", 448) == pytest.approx(90.056)
    # untagged: the best pretrained tag at that size; other sizes unknown
    assert top1("resnet50", 224) is not None and top1("resnet50", 224) >= top1("resnet50.tv_in1k", 224)
    assert top1("resnet50", 1000) is None
    assert top1("not_a_model", 224) is None
