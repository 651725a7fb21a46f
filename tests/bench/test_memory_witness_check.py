"""bench/memory_witness_check.py: the witnessed rows of two timm tables, counted and listed."""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import memory_witness_check  # noqa: E402

HEADER = "model,infer_img_size,infer_samples_per_sec,infer_step_time,infer_batch_size,param_count,infer_gmacs,infer_macts\n"


def table(path: Path, rows: list[tuple[str, float, int]]) -> Path:
    path.write_text(HEADER + "".join(f"{m},224,{s},{b / s * 1e3:.3f},{b},10,1,1\n" for m, s, b in rows))
    return path


def test_a_pair_counts_its_witnessed_rows_and_their_speed_up(tmp_path, capsys):
    base = table(tmp_path / "benchmark-infer-amp-nchw-pt291-cu128-4090.csv",
                 [("gn_net", 1000, 768), ("resnet50", 3000, 1024), ("vit_b", 1000, 512), ("convnext_t", 2000, 1024)])
    target = table(tmp_path / "benchmark-infer-amp-nchw-pt291-cu130-5090.csv",
                   [("gn_net", 700, 384), ("resnet50", 4200, 1024), ("vit_b", 1400, 768), ("convnext_t", 2800, 1024)])
    assert memory_witness_check.main(["--pair", str(base), str(target)]) == 0
    out = capsys.readouterr().out
    assert "(rtx4090, 24 GB) -> " in out and "(rtx5090, 32 GB): 4 rows, first batches 1024 / 1024; 2 rows below" in out
    # gn_net: the 5090 failed at 512 where the 4090 ran 768 (x2.0); vit_b: 512 -> 768 is what 32 GB buys
    assert "rows over other bars: >1: 1, >1.1: 1, >1.2: 1, >1.3: 1, >1.5: 1" in out
    assert "two paths witnessed: 1 rows (1 with the target's run the hungrier); published speed-up median x0.700 " \
           "against x1.400 for the other 3" in out
    assert "    gn_net @224: x0.700, batches 768 -> 384, the target's run >= x2.00 per sample" in out


def test_one_software_on_equal_gpus_witnesses_nothing(tmp_path, capsys):
    base = table(tmp_path / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv", [("a", 100, 768), ("b", 100, 1024)])
    target = table(tmp_path / "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv", [("a", 140, 512), ("b", 150, 1024)])
    assert memory_witness_check.main(["--pair", str(base), str(target)]) == 0
    assert "two paths witnessed: none (published speed-up median x1.450)" in capsys.readouterr().out


def test_a_missing_input_is_one_line(tmp_path, capsys):
    assert memory_witness_check.main(["--pair", str(tmp_path / "a.csv"), str(tmp_path / "b.csv")]) == 2
    assert capsys.readouterr().err.startswith("memory_witness_check: not found: ")
