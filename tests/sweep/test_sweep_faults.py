"""The sweep against real failures, on the CPU, with real worker processes and signals.

The fake models (tests/sweep_fake_models.py, imported with --import) raise, hang past the
timeout, call os._exit, segfault through ctypes, raise a CUDA-style OOM above batch 8, and
print to stdout. Then the driver itself is interrupted (SIGINT) and killed (SIGKILL) mid-sweep
and resumed: the store must end up equal to an uninterrupted run's.
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from visprof.base.child_env import child_env, module_command
from visprof.base.hardware import cpu_device_id, cpu_identity
from visprof.sweep import open_store, run_sweep
from visprof.sweep.placement import DoneOn
from visprof.sweep.run import _Sweep
from visprof.sweep.plan import SweepPlan

FAKE_MODELS = str(Path(__file__).resolve().parents[1] / "helpers" / "sweep_fake_models.py")
ROOT = Path(__file__).resolve().parents[2]
FAST = {"iterations": 3, "warmup": 1}  # tiny models: a few forwards say all the test needs


def worker_pids(driver_pid: int) -> list[int]:
    """Live sweep workers started by ``driver_pid`` (their command line names it)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"visprof.sweep.worker" in argv and str(driver_pid).encode() in argv and state != "Z":
            pids.append(int(entry.name))
    return pids


def test_faults_are_recorded_and_the_sweep_goes_on(tmp_path):
    models = ["visprof_fake_tiny", "visprof_fake_raises", "visprof_fake_hangs", "visprof_fake_exits",
              "visprof_fake_segfault", "visprof_fake_oom", "visprof_fake_noisy"]
    store_path = tmp_path / "faults.db"
    start = time.monotonic()
    summary = run_sweep(models, store=store_path, device="cpu", workers=2, batch_sizes=[16],
                        imports=[FAKE_MODELS], profile_options=FAST, timeout_s=20, retries=1, progress=False)
    elapsed = time.monotonic() - start
    print(f"\nfault sweep: {elapsed:.0f} s\n{summary.render(top=10)}")

    assert summary.status == "complete"
    assert summary.done == 3
    assert summary.failed == {"ModelForwardError": 1, "CellTimeout": 1, "WorkerCrashed": 2}
    assert worker_pids(os.getpid()) == []  # every worker is gone

    with open_store(store_path) as store:
        rows = {r["model"]: r for r in store.rows()}
        failures = {f["model"]: f for f in store.failures()}
    assert set(rows) == {"visprof_fake_tiny", "visprof_fake_oom", "visprof_fake_noisy"}
    this_cpu = cpu_device_id(cpu_identity())  # e.g. "cpu:amd epyc 7763 64-core processor x2"
    assert this_cpu.startswith("cpu:") and all(r["gpu_uuid"] == this_cpu and r["device_kind"] == "cpu" for r in rows.values())
    assert {f["gpu_uuid"] for f in failures.values()} == {this_cpu}
    assert rows["visprof_fake_tiny"]["batch_size"] == 16 and json.loads(rows["visprof_fake_tiny"]["batch_sizes_tried"]) == [16]
    # the OOM decayed as timm's benchmark.py does (decay_batch_step) and the batch that fit is kept
    assert rows["visprof_fake_oom"]["batch_size"] == 8
    assert json.loads(rows["visprof_fake_oom"]["batch_sizes_tried"]) == [16, 12, 8]
    assert rows["visprof_fake_noisy"]["latency_median_ms"] > 0  # printing to stdout broke nothing

    raised = failures["visprof_fake_raises"]
    assert (raised["kind"], raised["error_class"], raised["attempts"], raised["final"]) == ("error", "ModelForwardError", 1, 1)
    assert "refuses to run" in raised["message"] and "ValueError" in raised["detail"]
    exited = failures["visprof_fake_exits"]
    assert (exited["kind"], exited["error_class"], exited["attempts"], exited["final"]) == ("crash", "WorkerCrashed", 2, 1)
    assert "exited with code 7" in exited["message"]
    crashed = failures["visprof_fake_segfault"]
    assert (crashed["kind"], crashed["attempts"]) == ("crash", 2) and "SIGSEGV" in crashed["message"]
    assert "Segmentation fault" in crashed["detail"] and "string_at" in crashed["detail"]  # faulthandler's stack
    hung = failures["visprof_fake_hangs"]
    assert (hung["kind"], hung["error_class"], hung["attempts"]) == ("timeout", "CellTimeout", 2)

    # The same sweep again: everything is done or failed for good, so no worker even starts.
    start = time.monotonic()
    again = run_sweep(models, store=store_path, device="cpu", workers=2, batch_sizes=[16], imports=[FAKE_MODELS],
                      profile_options=FAST, timeout_s=20, progress=False)
    assert (again.skipped, again.done, again.failed_total) == (7, 0, 0)
    # "complete ... 0 failed" alone hid that four of the seven are failures, kept from an earlier run
    assert again.skipped_failed == 4
    assert "7 already in the store (4 of them failed earlier)" in again.render()
    assert "4 cell(s) failed in an earlier run and were not tried again (retry_failed=True tries them" in again.render()
    assert time.monotonic() - start < 60
    with open_store(store_path) as store:
        assert store.count() == 3 and len(store.failures()) == 4
        assert [r["status"] for r in store.runs()] == ["complete", "complete"]


def sweep_command(store: Path, *extra: str) -> list[str]:
    return [*module_command("visprof"), "sweep", "visprof_fake_tiny,visprof_fake_wide,visprof_fake_raises",
            "visprof_fake_oom", "-b", "16,4", "--device", "cpu", "--store", str(store), "--import", FAKE_MODELS,
            "--iterations", "3", "--warmup", "1", "--timeout", "60", *extra]


def env(**extra: str) -> dict:
    return child_env(PYTHONUNBUFFERED="1", **extra)


def store_contents(path: Path) -> tuple:
    """What must not depend on interruptions: cells, statuses, batches (not timings)."""
    with open_store(path) as store:
        results = sorted((r["cell_key"], "ok", r["batch_size"], r["batch_sizes_tried"], r["gpu_uuid"])
                         for r in store.rows())
        failures = sorted((f["cell_key"], f["kind"], f["error_class"], f["attempts"], f["final"])
                          for f in store.failures())
        categories = len(store.category_rows())
    return results, failures, categories


def wait_for_rows(path: Path, proc: subprocess.Popen, at_least: int, timeout: float = 240) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the sweep ended early: {proc.stderr.read()}"
        if path.exists():
            try:
                with sqlite3.connect(path, timeout=5) as conn:
                    count = conn.execute("SELECT (SELECT COUNT(*) FROM results) + (SELECT COUNT(*) FROM failures)").fetchone()[0]
            except sqlite3.OperationalError:  # tables not created yet
                count = 0
            if count >= at_least:
                return count
        time.sleep(0.2)
    raise AssertionError(f"fewer than {at_least} rows after {timeout} s")


def test_interrupt_and_kill_9_of_the_driver_then_resume_equal_an_uninterrupted_run(tmp_path):
    # The uninterrupted run, alongside (the contents compared do not depend on timings).
    reference = tmp_path / "reference.db"
    uninterrupted = subprocess.Popen(sweep_command(reference, "--quiet"), env=env(), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)

    store = tmp_path / "resumed.db"
    # 1. Ctrl-C (SIGINT to the driver alone: the workers run in their own session). Cells of
    # at least 0.5 s here: the kill -9 below must land while cells are still left.
    slow = env(VISPROF_FAKE_BUILD_S="0.5")
    proc = subprocess.Popen(sweep_command(store), env=slow, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_rows(store, proc, 1)
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "run the same command again to resume" in err
    assert "Traceback" not in err
    assert worker_pids(proc.pid) == []

    # 2. kill -9 of the driver: its workers follow it, and no row is half written
    proc = subprocess.Popen(sweep_command(store), env=slow, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    before = wait_for_rows(store, proc, store_rows(store) + 1)
    assert before < 8, "the sweep was not interrupted mid-way"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 15
    while worker_pids(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert worker_pids(proc.pid) == []
    with sqlite3.connect(store) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # every result has its category rows: no result was half written
        assert conn.execute("SELECT COUNT(*) FROM results r WHERE NOT EXISTS "
                            "(SELECT 1 FROM result_categories c WHERE c.result_id = r.id)").fetchone()[0] == 0
    assert store_rows(store) >= before

    # 3. resume to the end
    resumed = subprocess.run(sweep_command(store, "--quiet"), env=env(), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr

    out, err = uninterrupted.communicate(timeout=600)
    assert uninterrupted.returncode == 0, err
    assert "8 planned, 0 already in the store, 6 measured, 2 failed" in out
    expected = store_contents(reference)
    assert len(expected[0]) == 6 and len(expected[1]) == 2
    assert store_contents(store) == expected
    with open_store(store) as s:
        runs = s.runs()
        killed_rows = sum(r["run_id"] == runs[1]["id"] for r in s.rows())
    # the killed run never got to say how it ended: the resuming one, holding the store's lock, did
    assert [r["status"] for r in runs] == ["interrupted", "killed", "complete"]
    assert runs[1]["cells_done"] == killed_rows and runs[1]["ended_at"] is None


def store_rows(path: Path) -> int:
    with sqlite3.connect(path, timeout=5) as conn:
        return conn.execute("SELECT (SELECT COUNT(*) FROM results) + (SELECT COUNT(*) FROM failures)").fetchone()[0]


def test_a_spent_time_budget_stops_cleanly_and_the_store_resumes(tmp_path):
    store_path = tmp_path / "budget.db"
    # The budget runs out before the worker is even ready: nothing is recorded, nothing is lost.
    summary = run_sweep(["visprof_fake_tiny", "visprof_fake_wide"], store=store_path, device="cpu",
                        imports=[FAKE_MODELS], profile_options=FAST, time_budget_s=0.5, progress=False)
    assert summary.status == "time budget" and summary.remaining == 2 and summary.done == 0
    assert summary.elapsed_s < 15
    assert worker_pids(os.getpid()) == []
    summary = run_sweep(["visprof_fake_tiny", "visprof_fake_wide"], store=store_path, device="cpu",
                        imports=[FAKE_MODELS], profile_options=FAST, time_budget_s=600, progress=False)
    assert summary.status == "complete" and summary.done == 2
    with open_store(store_path) as store:
        assert [r["status"] for r in store.runs()] == ["time budget", "complete"]


def test_a_budget_spent_before_the_sweep_began_says_so_and_counts_in_its_elapsed_time(tmp_path, capsys):
    """--time-budget 8 where the imports and the worker's start took it all: "0 measured, 3 not run,
    elapsed 3.3 s", with no word of why; the elapsed time began after the imports the budget counts."""
    import time

    summary = run_sweep(["visprof_fake_tiny"], store=tmp_path / "r.db", device="cpu", imports=[FAKE_MODELS],
                        profile_options=FAST, time_budget_s=14, started_at=time.monotonic() - 60)
    assert summary.status == "time budget" and summary.done == 0 and summary.elapsed_s >= 60
    [line] = [line for line in capsys.readouterr().err.splitlines() if "time budget: spent" in line]
    assert line.endswith("before a worker was ready (torch's imports count, in the driver and in each worker); "
                         "give a longer time_budget_s")


def test_a_cell_stopped_at_the_time_budget_is_named(tmp_path, capsys):
    """A cell longer than the budget was dropped at it without a word, and the same command
    started it first again: every run ended "0 cells finished" with no reason given."""
    summary = run_sweep(["visprof_fake_hangs", "visprof_fake_tiny"], store=tmp_path / "r.db", device="cpu",
                        imports=[FAKE_MODELS], profile_options=FAST, time_budget_s=15, timeout_s=600)
    assert summary.status == "time budget" and summary.done == 0 and summary.remaining == 2
    [line] = [line for line in capsys.readouterr().err.splitlines() if "was still running after" in line]
    assert line.startswith("[visprof] time budget: visprof_fake_hangs b2|") and line.endswith(
        "s and was stopped, unrecorded; the same run_sweep call starts it first again, so give a time_budget_s "
        "longer than it needs")
    assert worker_pids(os.getpid()) == []


def test_the_time_budget_starts_no_cell_it_cannot_finish(tmp_path):
    """The policy on its own: with cells known to take up to 10 s, none starts with 12 s left."""
    from visprof.store.result_store import ResultStore
    from visprof.sweep.progress_bar import SweepProgress

    class NoExecutor:
        description = "none"

    with ResultStore(tmp_path / "r.db", write=True) as store:
        plan = SweepPlan(["a", "b", "c"], "cpu")
        sweep = _Sweep(store, plan, NoExecutor(), DoneOn(("cpu",)), retries=1, retry_failed=False, time_budget_s=100,
                       started=time.monotonic(), progress=False)
        sweep.progress = SweepProgress(3, enabled=False)
        assert sweep.next_task().cell.model == "a"  # no cell measured yet: nothing to go by
        sweep.walls.extend([4.0, 10.0])
        sweep.hard_deadline = time.monotonic() + 20
        assert sweep.next_task().cell.model == "b"  # 20 s left > 1.5 x 10 s
        sweep.hard_deadline = time.monotonic() + 12
        assert sweep.next_task() is None and sweep.stopping and not sweep.has_work()
        assert [t.cell.model for t in sweep.queue] == ["c"]


def test_a_store_carried_to_other_cards_of_the_same_gpu_model_resumes(tmp_path):
    """The driver's queue: cells stored from one H200 are done on another machine's H200s (new
    uuids), and not on another GPU model."""
    from device_stores import VIT, NoExecutor, measured_here
    from visprof.store.result_store import ResultStore

    vit_h200_doc = measured_here(json.loads(VIT.read_text()))
    with ResultStore(tmp_path / "r.db", write=True) as store:
        plan = SweepPlan(["vit_base_patch16_224", "resnet50"], "cuda")
        store.add_result(plan.cells()[0], vit_h200_doc)

        def queued(done_on):
            sweep = _Sweep(store, plan, NoExecutor(), done_on, retries=1, retry_failed=False, time_budget_s=None,
                           started=time.monotonic(), progress=False)
            return [t.cell.model for t in sweep.queue]

        name = vit_h200_doc["gpu"]["name"]
        assert queued(DoneOn(("uuid-a", "uuid-b"), (name,))) == ["resnet50"]
        assert queued(DoneOn(("uuid-a",), ("NVIDIA A100-SXM4-80GB",))) == ["vit_base_patch16_224", "resnet50"]


def test_a_store_carried_to_another_cpu_is_measured_there_too(tmp_path):
    """CPU rows were all "cpu": a store swept on one machine's CPU counted as done on any other,
    whose sweep then measured nothing, and a row from the other CPU could not be stored beside
    it. Now a CPU row names its CPU; rows that name none (older stores) still count as done."""
    path = tmp_path / "r.db"
    sweep = dict(store=path, device="cpu", imports=[FAKE_MODELS], profile_options=FAST, progress=False)
    assert run_sweep(["visprof_fake_tiny"], **sweep).done == 1
    with sqlite3.connect(path) as conn:  # as if measured on another machine's CPU
        conn.execute("UPDATE results SET gpu_uuid = 'cpu:other cpu model x64'")
    conn.close()
    again = run_sweep(["visprof_fake_tiny"], **sweep)
    assert (again.done, again.skipped) == (1, 0)
    with open_store(path) as store:
        assert sorted(r["gpu_uuid"] for r in store.rows()) == sorted(["cpu:other cpu model x64",
                                                                       cpu_device_id(cpu_identity())])
    with sqlite3.connect(path) as conn:  # a row from before visprof named the CPU: where it ran is unknown
        conn.execute("DELETE FROM results WHERE gpu_uuid != 'cpu:other cpu model x64'")
        conn.execute("UPDATE results SET gpu_uuid = 'cpu'")
    conn.close()
    legacy = run_sweep(["visprof_fake_tiny"], **sweep)
    assert (legacy.done, legacy.skipped) == (0, 1)


def test_the_cpu_identity_reads_its_model_name():
    assert cpu_identity("processor : 0\nmodel name : AMD EPYC  7763 64-Core Processor\n")["name"] == \
        "AMD EPYC 7763 64-Core Processor"
    assert cpu_identity("processor : 0\nBogoMIPS : 50\n")["name"]  # ARM names none: the machine type
    assert cpu_device_id({"name": "AMD EPYC 7763", "logical_cpus": 2}) == "cpu:amd epyc 7763 x2"
    assert cpu_device_id(None) == "cpu" and cpu_device_id({}) == "cpu"


@pytest.mark.parametrize("fresh, workers_started", [(False, 1), (True, 2)])
def test_workers_are_reused_unless_fresh_process(tmp_path, capsys, fresh, workers_started):
    summary = run_sweep(["visprof_fake_tiny", "visprof_fake_wide"], store=tmp_path / "r.db", device="cpu",
                        imports=[FAKE_MODELS], profile_options=FAST, fresh_process=fresh)
    assert summary.done == 2
    ready = [line for line in capsys.readouterr().err.splitlines() if "worker cpu ready" in line]
    assert len(ready) == workers_started, ready
    assert len({line.rsplit("pid", 1)[1] for line in ready}) == workers_started
    assert worker_pids(os.getpid()) == []


@pytest.mark.parametrize("how", ["script", "stdin"])
def test_a_script_without_a_main_guard_runs_once(tmp_path, how):
    """Workers are fresh interpreters (python -m visprof.sweep.worker), never spawns of the
    caller: a user's script with no `if __name__ == "__main__"` must not run again in them. Fed
    on stdin, ``__main__`` has no file, as in a notebook's kernel, which a spawned worker could
    not re-import."""
    script = tmp_path / "unguarded.py"
    marker = tmp_path / "runs.txt"
    script.write_text(
        "import sys\n"
        f"open({str(marker)!r}, 'a').write('ran\\n')\n"
        "from visprof.sweep import run_sweep\n"
        f"summary = run_sweep(['visprof_fake_tiny'], store={str(tmp_path / 'r.db')!r}, device='cpu',\n"
        f"                    imports=[{FAKE_MODELS!r}], profile_options={FAST!r}, progress=False)\n"
        "print('measured', summary.done)\n")
    command = [sys.executable, str(script)] if how == "script" else [sys.executable, "-"]
    # in tmp_path: on Python 3.10 (no PYTHONSAFEPATH), `python -` in a visprof checkout imports its sources
    done = subprocess.run(command, input=None if how == "script" else script.read_text(), env=env(),
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "measured 1"
    assert marker.read_text() == "ran\n"


def test_sigterm_to_the_driver_stops_it_as_ctrl_c_does(tmp_path):
    """timeout, SLURM and docker stop send SIGTERM: the driver died at once with 143, no word, and its
    run stayed 'running' with cells_done 0. It now takes Ctrl-C's path: workers stopped, the run
    marked interrupted, the resume hint said."""
    store, summary = tmp_path / "s.db", tmp_path / "summary.json"
    proc = subprocess.Popen(sweep_command(store, "--json", str(summary)), env=env(VISPROF_FAKE_BUILD_S="0.5"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_rows(store, proc, 1)
    os.kill(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "run the same command again to resume" in err and "terminated (SIGTERM)" in err
    assert "Traceback" not in err
    assert worker_pids(proc.pid) == []
    with open_store(store) as s:
        assert [r["status"] for r in s.runs()] == ["interrupted"]
        rows = s.count()
    # the --json summary asked for is written with what ran (it was not written, nor said to be missing)
    assert f"terminated (SIGTERM); the summary of the cells run is in {summary}" in err
    written = json.loads(summary.read_text())
    assert written["status"] == "interrupted" and written["done"] == rows and written["remaining"] > 0


def test_a_crash_detail_holds_the_crashed_cells_output_only(tmp_path):
    """One worker runs a model that prints, then one that segfaults: the crash's detail is what
    the worker wrote while running the cell that crashed (faulthandler's stack), not the
    earlier cell's noise."""
    store_path = tmp_path / "crash.db"
    summary = run_sweep(["visprof_fake_noisy", "visprof_fake_segfault"], store=store_path, device="cpu", workers=1,
                        batch_sizes=[16], imports=[FAKE_MODELS], profile_options=FAST, timeout_s=60, retries=0,
                        progress=False)
    assert summary.done == 1 and summary.failed == {"WorkerCrashed": 1}
    with open_store(store_path) as store:
        [crash] = store.failures()
        [run] = store.runs()
    assert crash["model"] == "visprof_fake_segfault" and "SIGSEGV" in crash["message"]
    assert "Segmentation fault" in crash["detail"] and "string_at" in crash["detail"]
    assert "noise from" not in crash["detail"]
    assert run["status"] == "complete"


def test_a_sweep_whose_stderr_reader_goes_away_runs_to_the_end(tmp_path):
    """`visprof sweep ... 2>&1 | head -2`: the next progress line raised BrokenPipeError, which ended
    the sweep with exit 1, its remaining cells not run and its --json not written."""
    import json
    import subprocess

    from visprof.base.child_env import child_env, module_command

    store, summary = tmp_path / "s.db", tmp_path / "summary.json"
    proc = subprocess.Popen([*module_command("visprof"), "sweep", "visprof_fake_tiny,visprof_fake_wide",
                             "--store", str(store), "--import", FAKE_MODELS, "--device", "cpu", "--iterations", "3",
                             "--warmup", "1", "--json", str(summary)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child_env(), text=True)
    first = proc.stderr.readline()  # as `| head -1`: one line read, then the reader is gone
    proc.stderr.close()
    assert proc.wait(timeout=600) == 0, first
    assert json.loads(summary.read_text())["done"] == 2
    with open_store(store) as opened:
        assert sorted(r["model"] for r in opened.rows()) == ["visprof_fake_tiny", "visprof_fake_wide"]
        assert [r["status"] for r in opened.runs()] == ["complete"]


def test_a_module_imported_by_name_from_the_current_folder_reaches_the_workers(tmp_path):
    """`python -m visprof sweep ... --import my_models` beside my_models.py: the driver found it (the
    current folder is on its path), and every worker, started without that folder, failed."""
    import shutil
    import subprocess

    from visprof.base.child_env import child_env

    shutil.copy(FAKE_MODELS, tmp_path / "my_models.py")
    env = child_env()
    env.pop("PYTHONSAFEPATH")  # as a user's shell runs it: the current folder first on the driver's path
    done = subprocess.run([sys.executable, "-m", "visprof", "sweep", "visprof_fake_tiny", "--import", "my_models",
                           "--store", "s.db", "--device", "cpu", "--iterations", "3", "--warmup", "1", "-q"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    with open_store(tmp_path / "s.db") as opened:
        assert [r["model"] for r in opened.rows()] == ["visprof_fake_tiny"]


def test_retry_failed_gives_a_final_failure_a_fresh_budget_and_a_resumed_one_its_count():
    # Under --retry-failed a crash that had used its retries (attempts 2) was final at its first
    # new try: docs/sweep.md promises crashes another try on a fresh worker (--retries).
    from visprof.store.result_store import CellState
    from visprof.sweep.run import _queue

    plan = SweepPlan(["resnet18", "resnet34", "resnet50"], "cpu", batch_sizes=[1])
    final, resumed, done = plan.cells()
    states = {final.key: CellState("failed", 2, final=True, kind="crash"),
              resumed.key: CellState("failed", 1, final=False, kind="crash"), done.key: CellState("ok")}
    queue, skipped, skipped_failed = _queue(plan, states, retry_failed=True)
    assert [(task.cell.model, task.attempt) for task in queue] == [("resnet18", 1), ("resnet34", 2)]
    assert (skipped, skipped_failed) == (1, 0)
    queue, skipped, skipped_failed = _queue(plan, states, retry_failed=False)
    assert [(task.cell.model, task.attempt) for task in queue] == [("resnet34", 2)] and (skipped, skipped_failed) == (2, 1)


def test_a_cell_that_succeeds_under_retry_failed_keeps_the_attempts_of_earlier_runs(tmp_path):
    """A cell that had failed twice and then succeeded under --retry-failed was stored with attempts 1
    and its failure row removed: docs/sweep.md says the store's attempts add up across runs."""
    from device_stores import VIT, NoExecutor, cpu_result
    from visprof.store.result_store import ResultStore
    from visprof.store.versions import SoftwareVersions
    from visprof.sweep.progress_bar import SweepProgress

    doc = cpu_result(json.loads(VIT.read_text()))
    plan = SweepPlan(["vit_base_patch16_224"], "cpu")
    (cell,) = plan.cells()
    with ResultStore(tmp_path / "r.db", write=True) as store:
        # failed under this sweep's versions, so that it is this cell's
        store.add_failure(cell, versions=SoftwareVersions.current(), gpu=None, kind="timeout", error_class="CellTimeout",
                          message="over 8 s", attempts=2, final=True)
        sweep = _Sweep(store, plan, NoExecutor(), None, retries=1, retry_failed=True, time_budget_s=None,
                       started=time.monotonic(), progress=False)
        sweep.progress = SweepProgress(1, enabled=False)
        task = sweep.next_task()
        assert (task.attempt, task.earlier) == (1, 2)
        sweep.finished(task, {"status": "ok", "result": doc, "wall_s": 1.0}, None)
        assert [row["attempts"] for row in store.rows()] == [3]
