"""An input named twice is read once: the same store or file twice (``predict --from s.db ./s.db``),
a folder and a file in it, a link to a file already read. Each was read again, so every profile
counted twice: ``predict --every-profile`` listed each prediction twice ("from 8 profiles" of 4),
without it "4 more profile(s) of the same models not used" named duplicates as other profiles,
and calibrate counted "12206 reference rows" in a store of 6103."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli_process import visprof
from visprof.analysis import sources
from visprof.base.errors import BadInputError
from visprof.store.result_store import open_store
from visprof.sweep.plan import SweepPlan

DATA = Path(__file__).resolve().parents[1] / "data"
H100 = DATA / "h100-result-vit_base_patch16_224.json"
CSV_3090 = DATA / "timm" / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv"


@pytest.fixture
def inputs(tmp_path):
    (tmp_path / "results").mkdir()
    shutil.copy(H100, tmp_path / "results" / H100.name)
    (tmp_path / "link.json").symlink_to(tmp_path / "results" / H100.name)
    shutil.copy(CSV_3090, tmp_path / CSV_3090.name)
    with open_store(tmp_path / "s.db", write=True) as store:
        store.add_result(SweepPlan(["vit_base_patch16_224"], "cuda").cells()[0], json.loads(H100.read_text()))
    return tmp_path


@pytest.mark.parametrize("names", [
    ["s.db", "s.db"],
    ["s.db", "./s.db", "{tmp}/s.db"],
    ["results", "results/" + H100.name],
    ["results/" + H100.name, "results"],
    ["results", "link.json", "results"],
])
def test_a_profile_named_twice_is_read_once(inputs, names):
    loaded = sources.load([str(inputs / name) if not name.startswith("{tmp}") else name.replace("{tmp}", str(inputs))
                           for name in names])
    assert len(loaded.profiles) == 1
    assert loaded.skipped == []


def test_a_table_named_twice_is_read_once_per_gpu(inputs):
    csv = str(inputs / CSV_3090.name)
    rows = len(sources.load([csv]).measurements)
    assert rows > 0
    assert len(sources.load([csv, csv]).measurements) == rows
    # one table named as two GPUs' (FILE@GPU) is read as each: what the user asked, not a repeat
    shutil.copy(CSV_3090, inputs / "benchmark-infer-amp-nchw-pt240-cu124-mine.csv")
    mine = str(inputs / "benchmark-infer-amp-nchw-pt240-cu124-mine.csv")
    assert len(sources.load([f"{mine}@rtx3090", f"{mine}@rtx4090", f"{mine}@rtx3090"]).measurements) == 2 * rows


def test_a_folder_without_results_is_still_refused(inputs):
    (inputs / "empty").mkdir()
    with pytest.raises(BadInputError, match="no visprof profile results"):
        sources.load([str(inputs / "s.db"), str(inputs / "empty")])


def test_predict_every_profile_of_a_store_named_twice_predicts_each_once(inputs):
    proc = visprof(inputs, "predict", "--from", "s.db", "./s.db", "--to", "rtx4090", "--every-profile")
    assert proc.returncode == 0, proc.stderr
    assert "from 2 profiles" not in proc.stdout
    rows = [line for line in proc.stdout.splitlines() if line.startswith("vit_base_patch16_224 ")]
    assert len(rows) == 1, proc.stdout
