"""Issue 24: an output path that is also an input is refused before any work, and the input is
left byte for byte as it was, whichever way the same file is named: the same path, ``./x``,
a symbolic link, a hard link, or one of a results store's SQLite side files (-wal, -shm,
-journal). Real files, real ``python -m visprof`` processes."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from recorded_results import recorded_result
from cli_process import refused, visprof
from visprof.store.result_store import open_store
from visprof.sweep.plan import SweepPlan

DATA = Path(__file__).resolve().parents[1] / "data"
VIT = DATA / "h200-result-vit_base_patch16_224.json"  # a real ProfileResult (no roofline groups)
CSV_3090 = DATA / "timm" / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv"
CSV_4090 = DATA / "timm" / "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv"



def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()



@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Originals, copied into each test's folder: a results store with one result, a
    profile that predict can use (g.json, with roofline groups) and the vit profile."""
    folder = tmp_path_factory.mktemp("originals")
    cell = SweepPlan(["vit_base_patch16_224"], "cuda").cells()[0]
    with open_store(folder / "s.db", write=True) as store:
        store.add_result(cell, json.loads(VIT.read_text()))
    recorded_result("deit_small_patch16_224").to_json(folder / "g.json")
    shutil.copy(VIT, folder / "vit.json")
    return folder


@pytest.fixture
def work(tmp_path, made):
    for name in ("s.db", "g.json", "vit.json"):
        shutil.copy(made / name, tmp_path / name)
    shutil.copy(made / "s.db", tmp_path / "mine.db")
    for csv in (CSV_3090, CSV_4090):
        shutil.copy(csv, tmp_path / csv.name)
    return tmp_path


def snapshot(folder: Path) -> dict[str, str]:
    return {p.name: digest(p) for p in sorted(folder.iterdir()) if p.is_file()}


def alias(work: Path, name: str, how: str) -> str:
    """Another name of ``work/name``: ``./name``, a symbolic link, or a hard link."""
    if how == "same":
        return name
    if how == "dot":
        return f"./{name}"
    if how == "symlink":
        (work / f"link-{name}").symlink_to(work / name)
        return f"link-{name}"
    if how == "hardlink":
        os.link(work / name, work / f"hard-{name}")
        return f"hard-{name}"
    if how == "abs":
        return str(work / name)
    raise AssertionError(how)


NAMES = ["same", "dot", "symlink", "hardlink", "abs"]


# --- the five rows of the issue, each by every name of the same file ----------------------------

@pytest.mark.parametrize("how", NAMES)
def test_export_onto_its_own_store(work, how):
    target = alias(work, "s.db", how)
    before = snapshot(work)
    line = refused(visprof(work, "export", "s.db", "-o", target), "--output", "overwrite")
    assert "s.db" in line
    assert snapshot(work) == before  # the store (and every name of it) byte-identical
    with open_store(work / "s.db") as store:
        assert store.count() == 1


@pytest.mark.parametrize("how", NAMES)
def test_report_onto_an_input_store(work, how):
    target = alias(work, "mine.db", how)
    before = snapshot(work)
    proc = visprof(work, "report", "g.json", "mine.db", "-o", target)
    line = refused(proc, "--output", "overwrite", "mine.db")
    assert "wrote" not in proc.stdout and "drawing" not in proc.stderr  # refused before any work
    assert snapshot(work) == before, line


@pytest.mark.parametrize("how", NAMES)
def test_report_onto_its_own_profile(work, how):
    target = alias(work, "vit.json", how)
    before = snapshot(work)
    refused(visprof(work, "report", "vit.json", "-o", target), "--output", "overwrite", "vit.json")
    assert snapshot(work) == before


@pytest.mark.parametrize("option", ["--json", "--csv"])
@pytest.mark.parametrize("how", NAMES)
def test_predict_onto_its_own_profile(work, how, option):
    target = alias(work, "g.json", how)
    before = snapshot(work)
    refused(visprof(work, "predict", "--from", "g.json", "--to", "rtx4090", option, target), option, "overwrite",
            "g.json")
    assert snapshot(work) == before


@pytest.mark.parametrize("option", ["--json", "--csv"])
@pytest.mark.parametrize("how", NAMES)
def test_compare_onto_its_own_store(work, how, option):
    target = alias(work, "s.db", how)
    before = snapshot(work)
    refused(visprof(work, "compare", "s.db", CSV_4090.name, option, target), option, "overwrite", "s.db")
    assert snapshot(work) == before


def test_compare_onto_one_of_its_csvs(work):
    before = snapshot(work)
    refused(visprof(work, "compare", CSV_3090.name, CSV_4090.name, "--csv", CSV_3090.name), "--csv", "overwrite")
    assert snapshot(work) == before


# --- a results store's side files are the store ---------------------------------------------------

@pytest.mark.parametrize("side", ["-wal", "-shm", "-journal"])
def test_a_store_side_file_is_the_store(work, side):
    before = snapshot(work)
    line = refused(visprof(work, "export", "s.db", "-o", f"s.db{side}"), "--output", "overwrite")
    assert side in line
    assert snapshot(work) == before  # no side file made either


@pytest.mark.parametrize("side", ["-wal", "-shm"])
def test_side_files_of_a_store_in_use_are_kept(work, side):
    # A reader holds the store open: its -wal and -shm files exist (and hold what SQLite needs).
    holder = sqlite3.connect(work / "s.db")
    try:
        holder.execute("SELECT COUNT(*) FROM results").fetchone()
        assert (work / f"s.db{side}").exists()
        wal_before, db_before = digest(work / "s.db-wal"), digest(work / "s.db")
        refused(visprof(work, "compare", "s.db", CSV_4090.name, "--json", f"s.db{side}"), "--json", side)
        refused(visprof(work, "report", "s.db", "-o", alias(work, f"s.db{side}", "hardlink")), "--output")
        assert digest(work / "s.db-wal") == wal_before and digest(work / "s.db") == db_before
    finally:
        holder.close()
    with open_store(work / "s.db") as store:
        assert store.count() == 1


# --- folders of results contain their files -----------------------------------------------------

def test_an_output_that_is_a_result_in_an_input_folder(work):
    results = work / "results"
    results.mkdir()
    shutil.move(work / "g.json", results / "g.json")
    before = snapshot(results)
    line = refused(visprof(work, "compare", "results", CSV_4090.name, "--json", "results/g.json"), "--json",
                   "overwrite", "results")
    assert "g.json" in line
    refused(visprof(work, "predict", "--from", "results", "--to", "rtx4090", "--csv", "./results/g.json"), "--csv")
    assert snapshot(results) == before
    # a new file in the folder is no input: it is written
    proc = visprof(work, "compare", "results", CSV_4090.name, "--json", "results/comparison.json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((results / "comparison.json").read_text())["models"]
    assert digest(results / "g.json") == before["g.json"]


# --- the other commands that take files ---------------------------------------------------------

def test_import_timm_into_one_of_its_csvs(work):
    before = snapshot(work)
    refused(visprof(work, "import-timm", CSV_3090.name, CSV_4090.name, "--store", f"./{CSV_4090.name}"),
            "--store", "overwrite")
    assert snapshot(work) == before


def test_import_timm_and_its_gpu_rows_file(work):
    rows = work / "extra-gpus.toml"
    rows.write_text("")
    before = snapshot(work)
    refused(visprof(work, "import-timm", CSV_3090.name, "--store", "extra-gpus.toml", "--gpus", "extra-gpus.toml"),
            "--store")
    assert snapshot(work) == before


def test_sweep_summary_onto_its_model_list_or_its_store(work):
    (work / "models.txt").write_text("no_such_model_for_visprof\n")
    before = snapshot(work)
    refused(visprof(work, "sweep", "--model-list", "models.txt", "--store", "new.db", "--json", "models.txt",
                    "--device", "cpu"), "--json", "overwrite", "models.txt")
    refused(visprof(work, "sweep", "--model-list", "models.txt", "--store", "s.db", "--json", "s.db-wal",
                    "--device", "cpu"), "--json", "-wal")
    assert snapshot(work) == before
    assert not (work / "new.db").exists()


def test_profile_json_onto_its_rules_file(work):
    (work / "rules.toml").write_text("")
    os.link(work / "rules.toml", work / "hard.toml")
    (work / "link.toml").symlink_to(work / "rules.toml")
    before = snapshot(work)
    for target in ("rules.toml", "./rules.toml", "hard.toml", "link.toml"):
        refused(visprof(work, "profile", "resnet18", "--categories", "rules.toml", "--json", target), "--json",
                "overwrite")
    assert snapshot(work) == before


def test_nsys_import_json_onto_its_export(work):
    (work / "rep.sqlite").write_bytes(b"SQLite format 3\x00" + bytes(100))
    os.link(work / "rep.sqlite", work / "same.sqlite")
    before = snapshot(work)
    for target in ("rep.sqlite", "same.sqlite"):
        refused(visprof(work, "nsys", "import", "rep.sqlite", "--json", target), "--json", "overwrite")
    assert snapshot(work) == before


def test_nsys_run_json_onto_its_own_export(work):
    before = snapshot(work)
    refused(visprof(work, "nsys", "run", "-o", "rec", "--json", "rec.sqlite", "--", "true"), "--json")
    assert snapshot(work) == before
    (work / "rec.sqlite").write_text("")  # a rules file (empty: no extra rules) that nsys run would replace
    before = snapshot(work)
    refused(visprof(work, "nsys", "run", "-o", "rec", "--categories", "rec.sqlite", "--", "true"), "overwrite")
    assert snapshot(work) == before


def test_ncu_outputs_onto_its_rules_file(work):
    (work / "rules.toml").write_text("")
    before = snapshot(work)
    for option in ("--json", "--csv"):
        refused(visprof(work, "ncu", "resnet18", "--category", "attention", "--categories", "rules.toml",
                        option, "./rules.toml"), option, "overwrite")
    assert snapshot(work) == before


# --- an output never replaces a file of another kind ------------------------------------------------
# A mistyped --json, -o or --csv had replaced a user's train.py (only `profile` refused it): every
# output refuses a non-empty file that is not of the kind it writes, before any work.

SCRIPT = "import torch\nprint('my training script')\n"
OTHER_KIND = [
    ("compare", ["compare", "s.db", CSV_4090.name, "--json", "train.py"], "--json", "a visprof comparison of two GPUs"),
    ("compare-csv", ["compare", "s.db", CSV_4090.name, "--csv", "train.py"], "--csv", "a visprof compare CSV"),
    ("predict-csv", ["predict", "--from", "g.json", "--to", "rtx4090", "--csv", "train.py"], "--csv",
     "a visprof predict CSV"),
    ("calibrate-save", ["calibrate", CSV_3090.name, "s.db", "--base", "rtx3090", "--target", "rtx4090",
                        "--save", "train.py"], "--save", "a visprof calibration"),
    ("export-json", ["export", "s.db", "--format", "json", "-o", "train.py"], "--output", "a visprof store export"),
    ("export-parquet", ["export", "s.db", "--format", "parquet", "-o", "train.py"], "--output",
     "a visprof Parquet export"),
    ("report", ["report", "g.json", "-o", "train.py"], "--output", "a visprof report"),
    ("sweep", ["sweep", "resnet18", "--store", "new.db", "--json", "train.py", "--device", "cpu"], "--json",
     "a visprof sweep summary"),
    ("bounds", ["bounds", "build", "vit.json", "-o", "train.py"], "-o", "a visprof bound library"),
]


@pytest.mark.parametrize("args, option, kind", [case[1:] for case in OTHER_KIND], ids=[case[0] for case in OTHER_KIND])
def test_an_output_never_replaces_a_file_of_another_kind(work, args, option, kind):
    (work / "train.py").write_text(SCRIPT)
    before = snapshot(work)
    proc = visprof(work, *args)
    refused(proc, option, "train.py", f"other than {kind}")
    assert "wrote" not in proc.stdout + proc.stderr
    assert snapshot(work) == before and not (work / "new.db").exists()


def test_an_output_replaces_its_own_kind(work):
    """Running a command again replaces what it wrote the first time (and an empty file)."""
    (work / "empty.csv").write_text("")
    (work / "empty.json").write_text("")
    commands = (["compare", "s.db", CSV_4090.name, "--json", "c.json", "--csv", "c.csv"],
                ["predict", "--from", "g.json", "--to", "rtx4090", "--json", "p.json", "--csv", "p.csv"],
                ["diff", "g.json", "vit.json", "--json", "empty.json"],
                ["export", "s.db", "-o", "e.csv"], ["export", "s.db", "--failures", "-o", "f.csv"],
                ["export", "s.db", "--format", "parquet", "-o", "e.parquet"],
                ["report", "g.json", "-o", "r.html", "--png-dir", "figures"])
    for _ in range(2):
        for args in commands:
            proc = visprof(work, *args)
            assert proc.returncode == 0, (args, proc.stderr)
    assert json.loads((work / "c.json").read_text())["models"]
    assert json.loads((work / "empty.json").read_text())["schema"] == "visprof.diff/1"
    assert (work / "r.html").read_text().startswith("<!DOCTYPE html>")
    # a timm CSV: its own export cannot be told from a published table, so only an empty file is replaced
    proc = visprof(work, "export", "s.db", "--format", "timm", "-o", "empty.csv")
    assert proc.returncode == 0, proc.stderr
    assert (work / "empty.csv").read_text().startswith("model,")
    refused(visprof(work, "export", "s.db", "--format", "timm", "-o", "empty.csv"), "--output", "a timm benchmark CSV")


def test_an_output_never_replaces_a_users_file_of_its_format(work):
    """A user's package.json, own page, image, table and Parquet data set had been replaced by diff's
    --json, report -o and --png-dir, and export: each is JSON, HTML, PNG, CSV or Parquet, but none is
    visprof's."""
    import pandas

    (work / "package.json").write_text('{"name": "myproj", "version": "1.0"}\n')
    (work / "mine.html").write_text("<!DOCTYPE html>\n<html>mine</html>\n")
    (work / "users.csv").write_text("name,score\nalice,1\n")
    pandas.DataFrame({"image": ["a.jpg"], "label": [1]}).to_parquet(work / "dataset.parquet")
    (work / "figures").mkdir()
    made_report = visprof(work, "report", "g.json", "-o", "r.html", "--png-dir", "figures")
    assert made_report.returncode == 0, made_report.stderr
    figures = sorted((work / "figures").iterdir())
    assert figures, "the report wrote no figure"
    shutil.copy(DATA / "timm" / CSV_4090.name, work / "published.csv")
    made_predictions = visprof(work, "predict", "--from", "g.json", "--to", "rtx4090", "--csv", "p.csv")
    assert made_predictions.returncode == 0, made_predictions.stderr
    mine = figures[0].name
    (work / "figures" / mine).write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)  # a user's image, by that name
    before = snapshot(work)
    figures_before = snapshot(work / "figures")
    for args, option, holds in (
            (["diff", "g.json", "vit.json", "--json", "package.json"], "--json", "other than a visprof diff summary"),
            (["compare", "s.db", CSV_4090.name, "--json", "package.json"], "--json", "other than a visprof comparison"),
            (["report", "g.json", "-o", "mine.html"], "--output", "other than a visprof report"),
            (["report", "g.json", "-o", "r2.html", "--png-dir", "figures"], mine, "other than a visprof report's figure"),
            (["export", "s.db", "-o", "users.csv"], "--output", "other than a visprof store export CSV"),
            (["export", "s.db", "--format", "timm", "-o", "users.csv"], "--output",
             "is not empty, and an export in timm's format replaces only an empty file"),
            (["compare", "s.db", CSV_4090.name, "--csv", "p.csv"], "--csv",
             "holds a visprof predict CSV, not a visprof compare CSV"),
            (["export", "s.db", "--format", "parquet", "-o", "dataset.parquet"], "--output",
             "other than a visprof Parquet export"),
            (["export", "s.db", "--format", "timm", "-o", "published.csv"], "--output", "a timm benchmark CSV")):
        refused(visprof(work, *args), option, holds)
    assert snapshot(work) == before and snapshot(work / "figures") == figures_before
