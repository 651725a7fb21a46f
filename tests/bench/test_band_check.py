"""bench/band_check.py: the band's coverage of held-out families by their size."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import band_check  # noqa: E402


def predictions(tmp_path: Path, name="held-out-rtx4090-rtx5090.csv.gz") -> Path:
    """One family of 40 models all inside, ten families of 4 with one of four inside."""
    rows = [{"model": f"big{i}", "family": "big", "speedup": 1.2, "low": 1.1, "high": 1.3} for i in range(40)]
    for f in range(10):
        for i in range(4):
            rows.append({"model": f"s{f}_{i}", "family": f"small{f}", "speedup": 1.2 if i == 0 else 1.5,
                         "low": 1.0, "high": 1.44})
    path = tmp_path / name
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_coverage_by_family_size_and_over_families(tmp_path):
    frame = band_check.load(predictions(tmp_path))
    assert frame.inside.mean() == pytest.approx(50 / 80)
    assert band_check.coverage_by_size(frame) == {"4-9": (0.25, 40), "31+": (1.0, 40)}
    assert frame.groupby("family").inside.mean().mean() == pytest.approx((1.0 + 10 * 0.25) / 11)
    # half-widths: 1.3 / 1.1 and 1.44 / 1.0, 40 models each: the median of their logs is between
    assert band_check.half_width(frame) == pytest.approx(((1.3 / 1.1) ** 0.5 * 1.44 ** 0.5) ** 0.5 - 1)


def test_the_exact_inside_flag_wins_over_rounded_numbers(tmp_path):
    # rounded to 4 digits, 1.2 sits on the band's edge; the exact flag says it was just outside
    path = tmp_path / "held-out-a-b.csv.gz"
    pd.DataFrame({"family": ["f", "f"], "speedup": [1.2, 1.2], "low": [1.2, 1.0], "high": [1.3, 1.3],
                  "inside": [False, True]}).to_csv(path, index=False)
    assert band_check.load(path).inside.tolist() == [False, True]
    pd.DataFrame({"family": ["f", "f"], "speedup": [1.2, 1.2], "low": [1.2, 1.0], "high": [1.3, 1.3]}).to_csv(path, index=False)
    assert band_check.load(path).inside.tolist() == [True, True]


def test_family_draws_count_whole_families(tmp_path):
    frame = band_check.load(predictions(tmp_path))
    # every draw of all 11 families is the whole set
    p5, p50, low = band_check.family_draws(frame, 11, 50, at_or_below=0.5)
    assert p5 == p50 == pytest.approx(50 / 80) and low == 0.0
    # two families: either two small ones (2 of 8 inside) or the big one and a small one (41 of 44)
    p5, p50, low = band_check.family_draws(frame, 2, 2000, at_or_below=0.5)
    assert p5 == pytest.approx(0.25) and p50 == pytest.approx(0.25)
    assert low == pytest.approx(9 / 11, abs=0.03)  # a draw misses the big family 45 of 55 times
    with pytest.raises(ValueError, match="12 families asked for, 11 held out"):
        band_check.family_draws(frame, 12, 10, 0.5)


def test_report_lines_per_pair_and_run(tmp_path, capsys):
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir(), after.mkdir()
    predictions(before), predictions(after), predictions(after, "held-out-rtx3090-rtx4090.csv.gz")
    assert band_check.main(["--run", "before", str(before), "--run", "after", str(after), "--draws", "100"]) == 0
    out = capsys.readouterr().out
    assert out.index("rtx3090 -> rtx4090") < out.index("rtx4090 -> rtx5090")
    table = out.split("rtx4090 -> rtx5090")[1]
    assert table.count("| before | 80 | 62.5% | 31.8% |") == 1 and table.count("| after |") == 1
    assert out.count("| before |") == 1  # before has no 3090 -> 4090 file


def test_bad_input_is_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit):
        band_check.main(["--run", "x", str(tmp_path / "nowhere")])
    assert "nowhere: not a folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        band_check.main(["--run", "x", str(tmp_path)])
    assert "no held-out-*.csv.gz" in capsys.readouterr().err
    pd.DataFrame({"model": ["m"]}).to_csv(tmp_path / "held-out-a-b.csv.gz", index=False)
    with pytest.raises(SystemExit):
        band_check.main(["--run", "x", str(tmp_path)])
    assert "not a held-out predictions file" in capsys.readouterr().err
