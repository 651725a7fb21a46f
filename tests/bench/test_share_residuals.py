"""bench/share_residuals.py: each profile's shares of time, ranked against what the predictions miss."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import share_residuals  # noqa: E402
from visprof.result import ProfileResult  # noqa: E402

RECORDED = REPO / "tests" / "data" / "h200-result-vit_base_patch16_224.json"


def result(op_types, kernel_families, launch_sizes):
    r = ProfileResult.load(RECORDED)
    r.op_types, r.kernel_families, r.launch_sizes = op_types, kernel_families, launch_sizes
    return r


def op(category, sub, ms):
    return SimpleNamespace(category=category, subcategory=sub, time_ms=ms)


def kernel(family, ms):
    return SimpleNamespace(family=family, time_ms=ms)


def launches(blocks_min, blocks_max, share, one_per_sm=False):
    return SimpleNamespace(blocks_min=blocks_min, blocks_max=blocks_max, share=share, one_per_sm=one_per_sm)


def test_shares_are_of_op_time_per_subcategory_and_of_kernel_time_per_kind():
    results = {
        "m1": result(op_types=[op("normalization", "layer", 1.0), op("normalization", "layer", 1.0),
                               op("linear", None, 2.0)],
                     kernel_families=[kernel("vectorized_layer_norm_kernel", 1.0),
                                      kernel("at::native::elementwise_kernel<128, 4>", 3.0)],
                     launch_sizes=[launches(1, 1, 0.05), launches(64, 127, 0.1), launches(132, 132, 0.3, True),
                                   launches(128, 255, 0.2), launches(256, 511, 0.35)]),
        "m2": result(op_types=[op("linear", None, 1.0)], kernel_families=[], launch_sizes=[]),
    }
    table = share_residuals.share_table(results).set_index("model")
    assert table.loc["m1", "normalization/layer"] == pytest.approx(0.5)  # two op types of one sub-category add up
    assert table.loc["m1", "linear/-"] == pytest.approx(0.5)
    assert table.loc["m1", "K:layer_norm"] == pytest.approx(0.25)
    assert table.loc["m1", "K:elementwise_kernel"] == pytest.approx(0.75)
    assert table.loc["m2", "normalization/layer"] == 0.0 and table.loc["m2", "linear/-"] == 1.0
    # launches of few blocks: the one-per-SM row (132 here) is not counted, though 132 < 256
    assert table.loc["m1", "L:blocks<128"] == pytest.approx(0.15)
    assert table.loc["m1", "L:blocks<256"] == pytest.approx(0.35)
    assert table.loc["m2", ["L:blocks<128", "L:blocks<256"]].isna().all()  # no launch sizes: unknown, not 0


def test_rank_corr_is_spearman():
    assert share_residuals.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert share_residuals.spearman([1, 2, 3, 4], [9, 1, 0.5, 0.1]) == pytest.approx(-1.0)


def test_missing_inputs_are_one_line(tmp_path, capsys):
    assert share_residuals.main([str(tmp_path / "none.db"), str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("share_residuals.py: not found:") and "none.db" in err[0]


def test_within_and_between_families():
    import pandas as pd
    # within each family the share and the residual rise together; the family means run the other way
    d = pd.DataFrame({"family": ["a", "a", "b", "b", "c", "c"],
                      "L": [0.1, 0.3, 0.35, 0.4, 0.5, float("nan")],
                      "residual": [0.9, 1.0, 0.5, 0.52, 0.1, 5.0]})
    within, between, families = share_residuals.split_by_family(d, "L")
    assert families == 3  # c's row without the share is left out, c with its other row stays
    assert within == pytest.approx(1.0)
    assert between == pytest.approx(-1.0)  # c's 5.0 residual would have made c's mean the largest
