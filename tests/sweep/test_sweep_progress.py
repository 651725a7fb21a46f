"""A sweep in a log (stderr not a terminal): one line per cell, with cells done/total, the rate
over the run so far and an ETA; it used to have neither rate nor ETA."""
from __future__ import annotations

import io
import os
import re
from pathlib import Path

from visprof.sweep import run_sweep
from visprof.sweep.progress_bar import SweepProgress

FAKE_MODELS = str(Path(__file__).resolve().parents[1] / "helpers" / "sweep_fake_models.py")
LINE = re.compile(r"\[visprof\] (\d+)/(\d+) (\S+) (\S+) \[cpu\]: (ok|\S+Error) ([\d.]+) s"
                  r" · ([\d.]+) cells/min · ETA (\d+ s|\d+ min \d\d s|\d+ h \d\d min)")


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_each_cell_line_has_the_rate_since_the_first_worker_and_an_eta():
    stream, clock = io.StringIO(), Clock()
    with SweepProgress(5, stream=stream, clock=clock) as progress:
        clock.now += 30  # the workers' start-up: no cell's time
        progress.restart_clock()
        clock.now += 20
        progress.cell("resnet50 b64|img=default|bf16", "cpu", 19.5)
        clock.now += 40
        progress.cell("vit_base b64|img=default|bf16", "cpu", 1.2, "ModelForwardError")
        progress.cell("vit_base b64|img=default|bf16", "cpu", None, "WorkerCrashed", retry=True)
        clock.now += 3 * 3600
        progress.cell("convnext b64|img=default|bf16", "cpu", 2.0)
        for _ in range(2):
            progress.cell("m b64|img=default|bf16", "cpu", 0.5)
    assert stream.getvalue().splitlines() == [
        "[visprof] 1/5 resnet50 b64|img=default|bf16 [cpu]: ok 19.5 s · 3 cells/min · ETA 1 min 20 s",
        "[visprof] 2/5 vit_base b64|img=default|bf16 [cpu]: ModelForwardError 1.2 s · 2 cells/min · ETA 1 min 30 s",
        "[visprof] 2/5 vit_base b64|img=default|bf16 [cpu]: WorkerCrashed (will retry) · 2 cells/min · ETA 1 min 30 s",
        # 3 cells in 10860 s: 0.0166 a minute, 2 left
        "[visprof] 3/5 convnext b64|img=default|bf16 [cpu]: ok 2.0 s · 0.0166 cells/min · ETA 2 h 00 min",
        "[visprof] 4/5 m b64|img=default|bf16 [cpu]: ok 0.5 s · 0.0221 cells/min · ETA 45 min 15 s",
        "[visprof] 5/5 m b64|img=default|bf16 [cpu]: ok 0.5 s · 0.0276 cells/min · ETA 0 s",
    ]


def test_failures_alone_give_no_rate_or_eta():
    """A forward that raised at once had made "1963 cells/min · ETA 0 s" with three cells left."""
    stream, clock = io.StringIO(), Clock()
    with SweepProgress(4, stream=stream, clock=clock) as progress:
        progress.restart_clock()
        clock.now += 0.03
        progress.cell("raises b1|img=64|fp32", "cpu", 0.0, "ModelForwardError")
        clock.now += 20
        progress.cell("resnet18 b1|img=64|fp32", "cpu", 20.0)
    assert stream.getvalue().splitlines() == [
        "[visprof] 1/4 raises b1|img=64|fp32 [cpu]: ModelForwardError 0.0 s",
        "[visprof] 2/4 resnet18 b1|img=64|fp32 [cpu]: ok 20.0 s · 5.99 cells/min · ETA 20 s"]


def test_a_real_small_sweep_logs_rate_and_eta_per_cell(tmp_path, capsys):
    summary = run_sweep(["visprof_fake_tiny", "visprof_fake_wide"], store=tmp_path / "r.db", device="cpu",
                        batch_sizes=[2, 4], imports=[FAKE_MODELS], profile_options={"iterations": 3, "warmup": 1})
    assert summary.done == 4
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if re.match(r"\[visprof\] \d+/4 ", line)]
    assert len(lines) == 4, err
    matches = [LINE.fullmatch(line) for line in lines]
    assert all(matches), lines
    assert [int(m.group(1)) for m in matches] == [1, 2, 3, 4]
    assert {m.group(3) for m in matches} == {"visprof_fake_tiny", "visprof_fake_wide"}
    rates = [float(m.group(7)) for m in matches]
    assert all(rate > 0 for rate in rates)
    assert matches[-1].group(8) == "0 s"  # nothing left
    assert os.path.exists(tmp_path / "r.db")


def test_two_workers_lines_say_which_worker_ran_each_cell(tmp_path, capsys):
    # Both had said [cpu]: which worker a slow or failing cell ran on was not in the log.
    summary = run_sweep(["visprof_fake_tiny", "visprof_fake_wide"], store=tmp_path / "r.db", device="cpu", workers=2,
                        batch_sizes=[2], imports=[FAKE_MODELS], profile_options={"iterations": 3, "warmup": 1})
    assert summary.done == 2
    err = capsys.readouterr().err
    ready = set(re.findall(r"worker (cpu#[01]) ready in", err))
    lines = [line for line in err.splitlines() if re.match(r"\[visprof\] \d+/2 ", line)]
    assert len(lines) == 2 and ready, err
    # one worker may run both cells before the other is ready: each line names one that was
    assert {re.search(r" \[(\S+)\]: ok ", line).group(1) for line in lines} <= ready, err


def test_a_summary_shows_as_what_the_sweep_printed_not_every_cells_wall_time():
    from visprof.sweep.summary import SweepSummary

    failures = [{"cell": f"m{i}", "error_class": "ModelForwardError", "message": "boom"} for i in range(5)]
    summary = SweepSummary(planned=1005, done=1000, failed={"ModelForwardError": 5}, cell_wall_s=[1.5] * 1000,
                           slowest=[(f"m{i}", 9.0) for i in range(1000)], elapsed_s=60.0, executor="1 local worker (cpu)",
                           store="r.db", failures=failures)
    text = repr(summary)
    assert text == f"<SweepSummary {summary.render(top=3)}>"
    assert "cells: 1005 planned, 0 already in the store, 1000 measured, 5 failed" in text
    assert text.count("FAILED") == 3 and "... and 2 more" in text and len(text) < 1000


def test_progress_whose_reader_went_away_says_nothing_more_and_raises_nothing():
    """run_sweep from a script whose stderr went through `| head`: the next progress line raised
    BrokenPipeError, and the sweep stopped there (the CLI guards stderr itself; a script does not)."""
    class Gone:
        writes = 0

        def write(self, text):
            Gone.writes += 1
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            pass

        def isatty(self):
            return False

    with SweepProgress(3, stream=Gone()) as progress:
        progress.note("worker ready")
        progress.cell("m b2|img=default", "cpu", 1.0)
        progress.cell("n b2|img=default", "cpu", 1.0, "ModelForwardError")
    assert Gone.writes == 1 and progress.done == 2 and progress.failed == {"ModelForwardError": 1}


def test_a_long_failure_keeps_its_remedy_in_the_summary():
    from visprof.sweep.summary import SweepSummary

    message = ("out of host memory (RAM) at batch size 1000000 on the CPU (it needs at least 2.1 TiB, 20.3 GiB is "
               "available); the largest batch that fits is about 33092 (--batch-size 33092), estimated from the "
               "memory one sample needs")
    summary = SweepSummary(planned=1, failed={"OutOfMemoryError": 1}, store="r.db",
                           failures=[{"cell": "m", "error_class": "OutOfMemoryError", "message": message}])
    line = next(line for line in summary.render().splitlines() if "FAILED" in line)
    # it had been cut at 160 characters, before "(--batch-size 33092)"
    assert "out of host memory (RAM) at batch size 1000000" in line and "(--batch-size 33092)" in line
    long = next(line for line in SweepSummary(planned=1, failed={"E": 1}, store="r.db", failures=[
        {"cell": "m", "error_class": "E", "message": "start " + "x" * 1000 + " (the remedy)"}]).render().splitlines()
        if "FAILED" in line)
    assert long.endswith("x (the remedy)") and ": E: start xxx" in long and " ... " in long and len(long) < 360


def test_a_terminal_without_columns_gets_the_per_cell_lines():
    # A pty of 0x0 (`script -qc`, some CI runners): tqdm drew nothing there, and being a terminal it
    # got no per-cell lines either. A fresh pty has no size.
    import pty

    leader, follower = pty.openpty()
    try:
        with os.fdopen(follower, "w", closefd=False) as stream:
            assert stream.isatty() and os.get_terminal_size(follower).columns == 0
            with SweepProgress(2, stream=stream) as progress:
                assert progress._bar is None
                progress.cell("resnet18 b1", "cpu", 0.5)
        assert b"1/2 resnet18 b1 [cpu]: ok 0.5 s" in os.read(leader, 4096)
    finally:
        os.close(leader)
        os.close(follower)
