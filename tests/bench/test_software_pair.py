"""bench/software_pair.py on the timm CSV subsets: the software speed-up and its correlation with a pair's."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[2]
TIMM = Path(__file__).resolve().parents[1] / "data" / "timm"
CSV_3090 = TIMM / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv"
CSV_4090 = TIMM / "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv"

sys.path.insert(0, str(REPO / "bench"))
import software_pair  # noqa: E402


def test_the_software_speed_up_and_each_pair_are_summarised_from_the_rows_of_every_csv(tmp_path, capsys):
    # A "newer software" table: the 4090's numbers with every ResNet 10% faster.
    newer = pd.read_csv(CSV_4090)
    newer.loc[newer["model"].str.startswith("resnet"), "infer_samples_per_sec"] *= 1.10
    newer_path = tmp_path / "benchmark-infer-amp-nchw-pt999-cu999-rtx4090.csv"
    newer.to_csv(newer_path, index=False)
    assert software_pair.main([str(CSV_4090), str(newer_path), "--pair", str(CSV_3090), str(CSV_4090),
                               "--models", "resnet50"]) == 0
    out = capsys.readouterr().out.splitlines()
    both = pd.concat({"a": software_pair.throughput(CSV_3090), "b": software_pair.throughput(CSV_4090)}, axis=1).dropna()
    assert out[0] == f"{len(both)} (model, size) rows in all 3 CSVs"
    resnets = both.index.get_level_values(0).str.startswith("resnet")
    expected = 1.10 if resnets.mean() > 0.5 else 1.0  # the median row is a ResNet or not
    assert f"software: pt240-cu124-rtx4090 -> pt999-cu999-rtx4090 median x{expected:.3f}" in out[1]
    pair = np.log(both["b"] / both["a"])
    assert f"median x{np.exp(pair.median()):.3f}" in out[2] and out[2].startswith("pt240-cu124-rtx3090 -> pt240-cu124-rtx4090")
    software = pd.Series(np.where(resnets, np.log(1.10), 0.0), index=both.index)
    assert f"rank corr. with software {software.rank().corr(pair.rank()):+.3f}" in out[2]
    assert any(line.startswith("  resnet50 @") and "software x1.100" in line for line in out[3:])
