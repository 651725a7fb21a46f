"""`visprof sweep --dry-run`: what a run would measure and skip, before hours of it start.

A sweep of hundreds of models used to show its plan only in its first progress line, once the
store was created and workers were starting. A dry run plans as the run does (the same models, the
same cells, the same reading of the store), lists the cells it would measure, estimates the time
from the store's earlier cells, and creates and runs nothing.
"""
from __future__ import annotations

import json

from cli_in_process import run_cli
from device_stores import VIT, cpu_result, measured_here
from visprof.base.hardware import cpu_identity
from visprof.store.result_store import ResultStore
from visprof.store.versions import SoftwareVersions
from visprof.sweep import run_sweep
from visprof.sweep.plan import SweepPlan

MODELS = "resnet18,vit_tiny_patch16_224"
CELLS = [f"{model}|b{batch}|img=default|fp32|nchw|timing+attributed"
         for model in ("resnet18", "vit_tiny_patch16_224") for batch in (1, 2)]


def test_a_dry_run_lists_every_cell_and_creates_and_runs_nothing(tmp_path, capsys, recorded_cells):
    store = tmp_path / "new.db"
    code, out, err = run_cli(capsys, "sweep", MODELS, "-b", "1,2", "--store", str(store), "--device", "cpu",
                             "--dry-run", "--json", str(tmp_path / "plan.json"))
    assert code == 0, err
    assert out.splitlines() == [f"visprof sweep: dry run · 1 local worker (cpu) · store {store}",
                                "cells: 4 planned, 0 already in the store, 4 to run",
                                *[f"  {cell}" for cell in CELLS]]
    assert not store.exists() and recorded_cells == []  # no store made, no cell handed to a worker
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["status"] == "dry run" and plan["to_run"] == CELLS and plan["remaining"] == 4


def test_a_dry_run_refuses_a_store_path_the_run_would_refuse(tmp_path, capsys, recorded_cells):
    """A dry run of a store in a folder that does not exist, or named '-', had printed its plan and exited 0,
    where the run refuses it at once."""
    for store, says in ((tmp_path / "nodir" / "r.db", "does not exist"), ("-", "would be a path named '-'")):
        code, out, err = run_cli(capsys, "sweep", "resnet18", "-b", "1", "--store", str(store), "--device", "cpu",
                                 "--dry-run")
        assert code == 2 and out == "" and says in err, err
    assert recorded_cells == []


def test_a_dry_run_from_python_refuses_a_store_in_a_folder_that_is_not_there(tmp_path, recorded_cells):
    """run_sweep(dry_run=True) planned "1 to run" for a store in a missing folder, where the CLI's dry run
    and the run itself refuse it."""
    import pytest

    from visprof.base.errors import BadInputError

    with pytest.raises(BadInputError, match="does not exist"):
        run_sweep("resnet18", store=tmp_path / "nodir" / "r.db", batch_sizes=[1], device="cpu", dry_run=True,
                  progress=False)
    assert recorded_cells == []


def test_a_dry_run_of_a_store_another_sweep_is_writing_says_so(tmp_path, recorded_cells):
    """A dry run planned a run that would then be refused as busy, without a word."""
    import os
    import warnings

    from visprof.base.errors import VisprofWarning
    from visprof.store.sqlite_guard import lock_for_writing

    path = tmp_path / "r.db"
    with ResultStore(path, write=True):
        pass
    held = lock_for_writing(path)  # as a running sweep holds it
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            summary = run_sweep("resnet18", store=path, batch_sizes=[1], device="cpu", dry_run=True, progress=False)
    finally:
        os.close(held)
    assert summary.remaining == 1
    [busy] = [w for w in caught if "another sweep is writing" in str(w.message)]
    assert busy.category is VisprofWarning and str(busy.message) == (
        f"another sweep is writing to {path} now: this plan reads the store as it stands, and the run would be "
        "refused until that sweep ends")
    with warnings.catch_warnings(record=True) as caught:  # once it ended: nothing to say
        warnings.simplefilter("always")
        run_sweep("resnet18", store=path, batch_sizes=[1], device="cpu", dry_run=True, progress=False)
    assert not [w for w in caught if "another sweep" in str(w.message)]


def test_a_dry_run_reads_the_store_as_the_run_would_and_estimates_from_its_cells(tmp_path, recorded_cells):
    """One cell measured (in 3 s, on this CPU), one failed for good, one failed once (tried again):
    the dry run skips the first two, lists the third with its attempt, and prices the rest at 3 s."""
    path = tmp_path / "r.db"
    cells = {cell.key: cell for cell in SweepPlan(MODELS.split(","), "cpu", batch_sizes=[1, 2]).cells()}
    versions = SoftwareVersions.current()
    with ResultStore(path, write=True) as store:
        store.add_result(cells[CELLS[0]], cpu_result(measured_here(json.loads(VIT.read_text()))), wall_s=3.0)
        for key, final in ((CELLS[1], True), (CELLS[2], False)):
            store.add_failure(cells[key], versions=versions, gpu=None, cpu=cpu_identity(), kind="error",
                              error_class="ModelForwardError", message="boom", final=final)
    before = path.read_bytes()
    summary = run_sweep(MODELS, store=path, batch_sizes=[1, 2], device="cpu", dry_run=True, progress=False)
    assert summary.status == "dry run" and (summary.planned, summary.skipped, summary.skipped_failed) == (4, 2, 1)
    assert summary.to_run == [f"{CELLS[2]} (attempt 2)", CELLS[3]]
    assert summary.estimate_s == 6.0  # two cells at the store's median of 3 s, on one worker
    assert summary.render().splitlines()[1:] == [
        "cells: 4 planned, 2 already in the store (1 of them failed earlier), 2 to run",
        "estimated: 6 s at the store's median of 3.0 s a cell, on 1 worker(s) (worker start-up not counted)",
        f"  {CELLS[2]} (attempt 2)", f"  {CELLS[3]}"]
    assert summary.render(top=1).splitlines()[-1] == "  ... and 1 more"
    assert path.read_bytes() == before and recorded_cells == []  # read, not written; nothing run
    # the run it previewed measures what it listed
    ran = run_sweep(MODELS, store=path, batch_sizes=[1, 2], device="cpu", progress=False)
    assert [cell.key for cell in recorded_cells] == [CELLS[2], CELLS[3]] and ran.skipped == 2
