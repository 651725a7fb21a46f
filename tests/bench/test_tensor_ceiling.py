"""bench/tensor_ceiling.py on two tiny timm-style CSVs with known rates."""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import tensor_ceiling  # noqa: E402

HEADER = "model,infer_img_size,infer_samples_per_sec,infer_step_time,infer_batch_size,param_count,infer_gmacs,infer_macts\n"


def csv(path: Path, rows: list[tuple[str, float, float]]) -> str:
    path.write_text(HEADER + "".join(f"{m},224,{sps},1.0,256,10.0,{gmacs},1.0\n" for m, sps, gmacs in rows))
    return str(path)


def test_rates_peaks_and_the_heaviest_rows_speed_up(tmp_path, capsys):
    # 3090 (71 TFLOP/s fp16) -> 4090 (165.2): "big" runs at 50 GMACs x 2 x 600/s = 60 TFLOP/s on the
    # 3090 and 120 on the 4090 (x2.0); "small" at 1 TFLOP/s and gains x1.5; "mid" 20 TFLOP/s, x1.2.
    base = csv(tmp_path / "benchmark-infer-amp-nchw-a.csv", [("big", 600, 50), ("small", 500, 1), ("mid", 1000, 10)])
    target = csv(tmp_path / "benchmark-infer-amp-nchw-b.csv", [("big", 1200, 50), ("small", 750, 1), ("mid", 1200, 10)])
    assert tensor_ceiling.main(["--pair", f"{base}@rtx3090", f"{target}@rtx4090", "--top", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "rtx3090 -> rtx4090: 3 rows; datasheet fp16 tensor ratio x2.33, fleet median speed-up x1.50"
    assert out[1] == "  rtx3090: highest end-to-end rate 60 TFLOP/s, 85% of its datasheet 71"
    assert out[2] == "  rtx4090: highest end-to-end rate 120 TFLOP/s, 73% of its datasheet 165.2"
    assert out[3].startswith("  the 1 rows with the highest rate on the rtx3090 (60-60 TFLOP/s): speed-up median x2.00")
    assert out[3].endswith(f"x{2.0 / (165.2 / 71):.2f} of the tensor ratio")


def test_a_csv_without_its_gpu_is_refused_in_one_line(tmp_path, capsys):
    base = csv(tmp_path / "benchmark-infer-amp-nchw-a.csv", [("big", 600, 50)])
    assert tensor_ceiling.main(["--pair", base, f"{base}@rtx4090"]) == 2
    assert capsys.readouterr().err.startswith("tensor_ceiling: error: name each CSV as FILE@GPU")
