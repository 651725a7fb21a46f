"""A sweep stopped by Ctrl-C or SIGTERM still reports what it measured: its summary goes to stdout
(marked interrupted) and to --json, with the slowest cells first, as a finished sweep's does.

Before, stdout got nothing, and the --json summary listed `slowest` in the order the cells ran: it
was sorted only after a normal return. The worker loop is replaced by one that "measures" cells in
given wall times (a stored result each) and is then interrupted: no model is built.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_in_process import run_cli
from visprof.sweep import run_sweep

VIT = Path(__file__).resolve().parents[1] / "data" / "h200-result-vit_base_patch16_224.json"
MODELS = "resnet18,resnet34,resnet50,resnet101"
WALLS = (1.0, 3.0, 2.0)  # resnet18, resnet34, resnet50; resnet101 is left when the interrupt comes


@pytest.fixture
def interrupted_after_three(monkeypatch):
    from visprof.sweep import local

    doc = json.loads(VIT.read_text())

    def run(self, source):
        for wall in WALLS:
            task = source.next_task()
            source.started(task, "cpu")
            source.finished(task, {"status": "ok", "result": doc, "wall_s": wall}, None)
        raise KeyboardInterrupt  # as the CLI's signal handler raises it for SIGTERM too

    monkeypatch.setattr(local.LocalExecutor, "run", run)


SLOWEST = [["resnet34", 3.0], ["resnet50", 2.0], ["resnet18", 1.0]]


def test_the_summary_of_an_interrupted_sweep_goes_to_stdout_and_json_slowest_first(tmp_path, capsys,
                                                                                   interrupted_after_three):
    summary = tmp_path / "summary.json"
    code, out, err = run_cli(capsys, "sweep", MODELS, "--store", str(tmp_path / "r.db"), "--device", "cpu", "-q",
                             "--json", str(summary))
    assert code == 130
    assert out.startswith("visprof sweep: interrupted · ")
    assert "cells: 4 planned, 0 already in the store, 3 measured, 0 failed, 1 not run" in out
    assert "slowest: resnet34 3.0 s, resnet50 2.0 s, resnet18 1.0 s" in out
    assert err.splitlines()[-1] == f"visprof: error: interrupted; the summary of the cells run is in {summary}"
    written = json.loads(summary.read_text())
    assert written["status"] == "interrupted" and written["slowest"] == SLOWEST


def test_without_json_the_interrupted_summary_still_goes_to_stdout(tmp_path, capsys, interrupted_after_three):
    code, out, err = run_cli(capsys, "sweep", MODELS, "--store", str(tmp_path / "r.db"), "--device", "cpu", "-q")
    assert code == 130 and err.splitlines()[-1] == "visprof: error: interrupted"
    assert "slowest: resnet34 3.0 s, resnet50 2.0 s, resnet18 1.0 s" in out


def test_run_sweep_hands_the_interrupted_summary_on_sorted(tmp_path, interrupted_after_three):
    with pytest.raises(KeyboardInterrupt) as raised:
        run_sweep(MODELS, store=tmp_path / "r.db", device="cpu", progress=False)
    summary = raised.value.sweep_summary
    assert summary.status == "interrupted" and summary.remaining == 1
    assert [list(pair) for pair in summary.slowest] == SLOWEST
