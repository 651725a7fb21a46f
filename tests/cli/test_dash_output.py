"""``-`` as an output path. ``visprof export -o -`` writes to standard output, as without -o; every
other output option refuses ``-`` in one line. It used to make a file named ``-`` in the working
folder without a word: ``export ... -o - | head`` printed nothing, ``compare ... --csv -`` left a
464 KB file called ``-``, and a second ``report -o -`` then complained that ``-`` held "something
other than an HTML page". Real ``python -m visprof`` processes, real files."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli_process import refused, visprof
from visprof.store.result_store import open_store
from visprof.sweep.plan import SweepPlan

DATA = Path(__file__).resolve().parents[1] / "data"
VIT = DATA / "h200-result-vit_base_patch16_224.json"
CSV_3090 = DATA / "timm" / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv"
CSV_4090 = DATA / "timm" / "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv"


@pytest.fixture
def work(tmp_path):
    with open_store(tmp_path / "s.db", write=True) as store:
        store.add_result(SweepPlan(["vit_base_patch16_224"], "cuda").cells()[0], json.loads(VIT.read_text()))
    for csv in (CSV_3090, CSV_4090):
        shutil.copy(csv, tmp_path / csv.name)
    return tmp_path


@pytest.mark.parametrize("fmt", ["csv", "timm", "json"])
def test_export_to_dash_writes_standard_output(work, fmt):
    proc = visprof(work, "export", "s.db", "--format", fmt, "-o", "-")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == visprof(work, "export", "s.db", "--format", fmt).stdout
    assert "vit_base_patch16_224" in proc.stdout
    assert not (work / "-").exists()


def test_export_of_parquet_to_dash_asks_for_a_file(work):
    refused(visprof(work, "export", "s.db", "--format", "parquet", "-o", "-"), "writes a binary file", "-o FILE")
    assert not (work / "-").exists()


@pytest.mark.parametrize("argv, option", [
    (["compare", CSV_3090.name, CSV_4090.name, "--csv", "-"], "--csv"),
    (["compare", CSV_3090.name, CSV_4090.name, "--json", "-"], "--json"),
    (["report", CSV_3090.name, CSV_4090.name, "-o", "-"], "--output"),
    (["report", CSV_3090.name, CSV_4090.name, "-o", "r.html", "--png-dir", "-"], "--png-dir"),
    (["import-timm", CSV_3090.name, "--store", "-"], "--store"),
    (["predict", "--from", "s.db", "--to", "rtx4090", "--csv", "-"], "--csv"),
    (["profile", "resnet18", "--device", "cpu", "--json", "-"], "--json"),
])
def test_any_other_output_refuses_dash(work, argv, option):
    before = sorted(p.name for p in work.iterdir())
    refused(visprof(work, *argv), f"{option}: '-' would be a path named '-' here, not standard output")
    assert sorted(p.name for p in work.iterdir()) == before


def test_a_file_named_dash_is_written_by_its_full_path(work):
    proc = visprof(work, "export", "s.db", "-o", work / "-")
    assert proc.returncode == 0, proc.stderr
    assert "vit_base_patch16_224" in (work / "-").read_text()
