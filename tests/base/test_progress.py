"""Progress.update: how far a long step got, throttled (a fake clock drives it)."""
from __future__ import annotations

import io

from visprof.base import progress as progress_module
from visprof.base.progress import BAR_UPDATE_S, LOG_UPDATE_S, Progress


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_a_log_gets_an_update_line_at_most_every_few_seconds():
    stream, clock = io.StringIO(), Clock()
    with Progress(2, "resnet18", stream=stream, clock=clock) as bar:
        bar.step("timing pass (clean)")
        for t, text in [(1.0, "2 iterations, 1 s"), (LOG_UPDATE_S, "9 iterations, 5 s"),
                        (LOG_UPDATE_S + 1, "11 iterations, 6 s"), (2 * LOG_UPDATE_S + 0.5, "21 iterations, 10 s")]:
            clock.now = 100.0 + t
            bar.update(text)
        bar.step("attributed pass")
        clock.now += 1.0
        bar.update("too early in this step")
    assert stream.getvalue().splitlines() == [
        "[visprof] resnet18 1/2: timing pass (clean)",
        "[visprof]   timing pass (clean): 9 iterations, 5 s",
        "[visprof]   timing pass (clean): 21 iterations, 10 s",
        "[visprof] resnet18 2/2: attributed pass",
    ]


def test_a_terminal_redraws_the_step_line_at_most_once_a_second():
    stream, clock = FakeTerminal(), Clock()
    with Progress(2, "resnet18", stream=stream, clock=clock) as bar:
        bar.step("timing pass (clean)")
        clock.now += BAR_UPDATE_S / 2
        bar.update("3 iterations, 0 s")
        assert "3 iterations" not in stream.getvalue()
        clock.now += BAR_UPDATE_S / 2
        bar.update("7 iterations, 1 s")
        assert "resnet18 1/2: timing pass (clean) · 7 iterations, 1 s" in stream.getvalue()
        clock.now += 0.1
        bar.update("8 iterations, 1 s")
        assert "8 iterations" not in stream.getvalue()
    assert "[visprof]" not in stream.getvalue()


def test_updates_are_silent_when_disabled_before_a_step_and_without_tqdm(monkeypatch):
    stream, clock = io.StringIO(), Clock()
    with Progress(1, "m", enabled=False, stream=stream, clock=clock) as bar:
        bar.step("timing")
        clock.now += 60
        bar.update("12 iterations, 60 s")
    assert stream.getvalue() == ""
    with Progress(1, "m", stream=stream, clock=clock) as bar:
        clock.now += 60
        bar.update("no step yet")
    assert stream.getvalue() == ""
    monkeypatch.setattr(progress_module, "load_tqdm", lambda: None)
    terminal = FakeTerminal()
    with Progress(1, "m", stream=terminal, clock=clock) as bar:  # a terminal without tqdm: lines, as a log
        bar.step("timing")
        clock.now += LOG_UPDATE_S
        bar.update("12 iterations, 5 s")
    assert terminal.getvalue().splitlines() == ["[visprof] m 1/1: timing", "[visprof]   timing: 12 iterations, 5 s"]


class GoneReader(io.StringIO):
    """A pipe whose reader went away (`python train.py 2>&1 | head -1`): every write fails."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")


def test_a_reader_gone_away_silences_progress_without_ending_the_work():
    # a progress line on it had raised BrokenPipeError out of visprof.profile(), the profile lost
    with Progress(2, "m", stream=GoneReader()) as bar:
        bar.step("timing")
        bar.step("attributed")
        assert list(bar.iter(range(3), "iterations")) == [0, 1, 2]


def test_no_stderr_at_all_writes_nothing_to_stdout(monkeypatch, capsys):
    # Python has no sys.stderr when fd 2 was closed before the start (`2>&-`); print(file=None)
    # then wrote the progress lines into stdout, among the caller's report
    monkeypatch.setattr(progress_module.sys, "stderr", None)
    with Progress(2, "m") as bar:
        bar.step("timing")
        bar.update("3 iterations, 1 s")
        assert list(bar.iter(range(2), "iterations")) == [0, 1]
    assert capsys.readouterr().out == ""


def test_a_delay_shows_nothing_of_work_that_ends_in_it_and_a_held_step_line_with_its_first_update():
    """An analysis command refused at once said "[visprof] compare 1/2: reading 2 input(s)" above its one
    error line; with ``delay_s`` the first seconds say nothing, and a step that began in them and lasts
    is named with its first update."""
    stream, clock = io.StringIO(), Clock()
    with Progress(2, "compare", stream=stream, clock=clock, delay_s=LOG_UPDATE_S) as bar:
        bar.step("reading 2 input(s)")
        clock.now += 1.0
        bar.step("joining and predicting 6030 measurements")
        clock.now += LOG_UPDATE_S - 1.5
        bar.update("10 of 1611 models")  # still in the delay
        assert stream.getvalue() == ""
        clock.now += 2.0  # past the delay, and LOG_UPDATE_S into the step
        bar.update("900 of 1611 models")
    assert stream.getvalue().splitlines() == [
        "[visprof] compare 2/2: joining and predicting 6030 measurements",
        "[visprof]   joining and predicting 6030 measurements: 900 of 1611 models",
    ]
    quick = io.StringIO()
    with Progress(2, "compare", stream=quick, clock=Clock(), delay_s=LOG_UPDATE_S) as bar:
        bar.step("reading 1 input(s)")
        bar.update("1 of 1 results")
        bar.step("joining")
    assert quick.getvalue() == ""


def test_a_step_that_begins_after_the_delay_is_shown_at_once():
    stream, clock = io.StringIO(), Clock()
    with Progress(2, "calibrate", stream=stream, clock=clock, delay_s=2.0) as bar:
        bar.step("reading 1 input(s)")
        clock.now += 3.0
        bar.step("fitting")
    assert stream.getvalue().splitlines() == ["[visprof] calibrate 2/2: fitting"]


def test_counted_tells_how_many_were_dealt_with_after_each():
    told = []
    seen = []
    for item in progress_module.counted(["a", "b", "c"], 3, "models", told.append):
        seen.append((item, list(told)))  # told of an item only once the caller is done with it
    assert seen == [("a", []), ("b", ["1 of 3 models"]), ("c", ["1 of 3 models", "2 of 3 models"])]
    assert told[-1] == "3 of 3 models"
    assert list(progress_module.counted(iter("xy"), 2, "files", None)) == ["x", "y"]
