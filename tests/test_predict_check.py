"""bench/predict_check.py end to end on the H200 recordings and the timm CSV subsets."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from recorded_results import write_results

from visprof.child_env import child_env

REPO = Path(__file__).resolve().parents[1]
TIMM = Path(__file__).parent / "data" / "timm"


def test_predict_check_prints_the_table_and_writes_json(tmp_path):
    folder = tmp_path / "h200"
    write_results(folder)
    out = tmp_path / "check.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "predict_check.py"), "--from", str(folder),
                           "--csv-dir", str(TIMM), "--json", str(out)], capture_output=True, text=True, cwd=REPO,
                          env=child_env({"PATH": "/usr/bin:/bin", "VISPROF_COMMIT": "test"}), timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "predict_check (measured profiles, time above the roof scaled by bound): 4 models, 0 skipped" in proc.stdout
    assert "predict_check (measured profiles, time above the roof scaled by compute): 4 models" in proc.stdout
    assert "speed-up 3090->4090   Spearman" in proc.stdout and "models>=150 NOT MET" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["provenance"]["commit"] == "test" and doc["summary"]["models"] == 4
    rows = {r["model"]: r for r in doc["rows"]}
    deit = rows["deit_small_patch16_224"]
    assert deit["rtx3090_batch"] == 1024 and deit["speedup_published"] == deit["rtx4090_published"] / deit["rtx3090_published"]
    # the transformer gains most, as published (see tests/test_predict.py for the values)
    assert max(rows, key=lambda m: rows[m]["speedup_predicted"]) == "deit_small_patch16_224"
    assert doc["summary"]["speedup_error"]["median_abs"] < 0.15
    assert doc["other_modes"]["compute"]["models"] == 4


def test_model_list_for_the_sweep(tmp_path):
    listing = tmp_path / "models.txt"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "predict_check.py"), "--write-model-list", str(listing),
                           "--count", "30", "--csv-dir", str(TIMM)], capture_output=True, text=True, cwd=REPO,
                          env=child_env({"PATH": "/usr/bin:/bin"}), timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = listing.read_text().split()
    sizes = json.loads(listing.with_suffix(".sizes.json").read_text())
    assert len(names) == 30 == len(set(names)) and set(sizes) == set(names)
    assert sizes.get("mobilevit_s", 256) == 256
