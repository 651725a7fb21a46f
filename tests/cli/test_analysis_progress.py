"""The analysis commands say how far they got on stderr (reading a store of 3,000 profiles and
predicting them took 15-40 s without a word, `predict` not even one line), and --quiet silences it.
The delay and the throttle are set to 0 here, so every step and update shows."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from recorded_results import MODELS, write_results
from visprof.analysis import sources
from visprof.analysis.compare import compare
from visprof.base import progress as progress_module
from visprof.cli import app as cli
from visprof.store.result_store import open_store
from visprof.sweep.plan import SweepPlan

DATA = Path(__file__).resolve().parents[1] / "data"
CSV_3090 = DATA / "timm" / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv"
CSV_4090 = DATA / "timm" / "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv"


@pytest.fixture
def store(tmp_path):
    """A results store of the recorded H200 profiles."""
    path = tmp_path / "profiles.db"
    with open_store(path, write=True) as opened:
        for name, result in zip(MODELS, write_results(tmp_path / "results")):
            opened.add_result(SweepPlan([name], "cuda").cells()[0], json.loads(result.read_text()))
    return path


@pytest.fixture
def every_line(monkeypatch):
    monkeypatch.setattr(progress_module, "LOG_UPDATE_S", 0.0)


def progress_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("[visprof]")]


def test_load_and_compare_tell_how_far_they_got(store):
    told = []
    loaded = sources.load([store, CSV_3090], on_progress=told.append)
    n = len(MODELS)
    assert told == [f"{i} of {n} results of profiles.db" for i in range(1, n + 1)]
    told.clear()
    comparison = compare(loaded.measurements, "rtx3090", "h200", on_progress=told.append)
    assert told[-1] == f"{len(comparison.models)} of {len(comparison.models)} models" and len(told) == len(comparison.models)


def test_an_on_progress_that_cannot_be_called_is_refused_before_any_work(store, tmp_path):
    """on_progress=True (for "show progress") failed at the first result or model, minutes into a
    large store, with "'bool' object is not callable"."""
    from visprof.analysis.held_out import family_held_out
    from visprof.base.errors import BadInputError
    from visprof.report.html import build_report

    loaded = sources.load([store, CSV_3090, CSV_4090])
    calls = {"load": lambda bad: sources.load([store], on_progress=bad),
             "compare": lambda bad: compare(loaded.measurements, "rtx3090", "rtx4090", on_progress=bad),
             # checked before the fleet is read (4 recorded models are too few to fit one)
             "family_held_out": lambda bad: family_held_out(None, on_progress=bad),
             "build_report": lambda bad: build_report(loaded, tmp_path / "r.html", on_progress=bad)}
    for name, call in calls.items():
        with pytest.raises(BadInputError, match=r"^on_progress takes a function of one string .*not bool True$"):
            call(True)
    assert not (tmp_path / "r.html").exists()


def test_predict_names_its_steps_and_counts_the_profiles(store, capsys, every_line):
    code = cli.main(["predict", "--from", str(store), "--to", "rtx4090"])
    out, err = capsys.readouterr()
    assert code == 0, err
    n = len(MODELS)
    lines = progress_lines(err)
    assert lines[0] == "[visprof] predict 1/2: reading 1 input(s)"
    assert f"[visprof]   reading 1 input(s): {n} of {n} results of profiles.db" in lines
    assert f"[visprof] predict 2/2: predicting {n} profile(s) on the rtx4090" in lines
    assert lines[-1] == f"[visprof]   predicting {n} profile(s) on the rtx4090: {n} of {n} profiles"
    assert "[visprof]" not in out  # the table on stdout stays clean for a pipe


@pytest.mark.parametrize("argv", [["compare", "{store}", str(CSV_3090), str(CSV_4090), "--base", "rtx3090", "--target", "rtx4090"],
                                  ["predict", "--from", "{store}", "--to", "rtx4090"]])
def test_quiet_silences_the_progress(store, capsys, every_line, argv):
    argv = [a.replace("{store}", str(store)) for a in argv]
    assert cli.main(argv) == 0
    assert progress_lines(capsys.readouterr().err)
    assert cli.main(argv + ["--quiet"]) == 0
    assert progress_lines(capsys.readouterr().err) == []


def test_compare_and_report_count_models_and_figures(store, tmp_path, capsys, every_line):
    assert cli.main(["compare", str(store), str(CSV_3090), str(CSV_4090), "--base", "rtx3090", "--target", "rtx4090"]) == 0
    lines = progress_lines(capsys.readouterr().err)
    assert lines[:2] == ["[visprof] compare 1/2: reading 3 input(s)",
                         "[visprof]   reading 3 input(s): 1 of %d results of profiles.db" % len(MODELS)]
    assert lines[-1].startswith("[visprof]   joining and predicting ") and lines[-1].endswith(" of 60 models")
    assert cli.main(["report", str(store), str(CSV_3090), str(CSV_4090), "-o", str(tmp_path / "r.html")]) == 0
    lines = progress_lines(capsys.readouterr().err)
    assert lines[-1].startswith("[visprof]   comparing and drawing ") and lines[-1].endswith(" figures")
    drawn = lines[-1].split(": ")[-1].split(" of ")
    assert drawn[0] == drawn[1].split()[0]  # every figure counted
