"""The timing pass says how far it got: on the CPU one forward can take seconds and the pass
half a minute, which used to show nothing at all after "timing pass (clean)"."""
from __future__ import annotations

import inspect
import io
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from torch import nn

import visprof.profiler
from visprof.base import progress as progress_module
from visprof.base.child_env import child_env
from visprof.base.progress import Progress
from visprof.passes.models import resolve_model
from visprof.passes.runner import ModelRunner, RunConfig
from visprof.passes.timing import PROGRESS_EVERY_S, run_timing_pass

REPO = Path(__file__).resolve().parents[2]
FORWARD_S = 0.1


class Slow(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3 * 8 * 8, 2)

    def forward(self, x):
        time.sleep(FORWARD_S)
        return self.fc(x.flatten(1))


def runner() -> ModelRunner:
    spec = resolve_model(Slow(), img_size=8, device="cpu")
    return ModelRunner(spec, RunConfig(batch_size=2, precision="fp32", device="cpu"))


def test_the_pass_reports_warm_up_and_timed_iterations_with_elapsed_seconds():
    heard: list[tuple[float, str]] = []
    start = time.perf_counter()
    result = run_timing_pass(runner(), warmup=4, iterations=10,
                             progress=lambda text: heard.append((time.perf_counter(), text)))
    elapsed = time.perf_counter() - start
    assert len(result.samples_ns) == 10 and result.warmup == 4
    texts = [text for _, text in heard]
    warm = [t for t in texts if t.startswith("warm-up: ")]
    timed = [t for t in texts if not t.startswith("warm-up: ")]
    assert warm and all(re.fullmatch(r"warm-up: [1-4]/4 iterations, \d+ s", t) for t in warm), texts
    assert len(timed) >= 2 and all(re.fullmatch(r"(\d+)/10 iterations, \d+ s", t) for t in timed), texts
    counts = [int(t.split("/")[0]) for t in timed]
    assert counts == sorted(counts) and counts[-1] <= 10
    # throttled: never two calls closer than PROGRESS_EVERY_S, so a GPU's fast loop pays for few
    gaps = [b - a for (a, _), (b, _) in zip(heard, heard[1:])]
    assert all(gap >= PROGRESS_EVERY_S * 0.99 for gap in gaps), gaps
    assert len(heard) <= elapsed / PROGRESS_EVERY_S + 1


def test_the_pass_drives_the_step_line_of_a_progress_in_a_log(monkeypatch):
    monkeypatch.setattr(progress_module, "LOG_UPDATE_S", 0.4)
    stream = io.StringIO()
    with Progress(2, "slow", stream=stream) as bar:
        bar.step("loading model")
        model = runner()
        bar.step("timing pass (clean)")
        run_timing_pass(model, warmup=2, iterations=12, progress=bar.update)
    lines = stream.getvalue().splitlines()
    assert lines[:2] == ["[visprof] slow 1/2: loading model", "[visprof] slow 2/2: timing pass (clean)"]
    updates = lines[2:]
    assert len(updates) >= 2, lines
    assert all(re.fullmatch(r"\[visprof\]   timing pass \(clean\): (warm-up: \d+/2|\d+/12) iterations, \d+ s", u)
               for u in updates), updates


def _profiler_passes_progress() -> bool:
    """Whether visprof.profile hands the timing pass its progress bar (the one-line hook in
    visprof/profiler.py: run_timing_pass(..., progress=bar.update))."""
    return re.search(r"run_timing_pass\([^)]*progress=", inspect.getsource(visprof.profiler), re.S) is not None


@pytest.mark.skipif(not _profiler_passes_progress(),
                    reason="visprof/profiler.py does not pass progress=bar.update to run_timing_pass yet")
def test_a_slow_cpu_profile_shows_the_timing_pass_advancing_on_stderr(tmp_path):
    code = textwrap.dedent("""
        import sys, time
        from timm.models import register_model
        from torch import nn

        class Slow(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3 * 8 * 8, 2)
                self.pretrained_cfg = {"input_size": (3, 8, 8)}

            def forward(self, x):
                time.sleep(0.4)
                return self.fc(x.flatten(1))

        @register_model
        def visprof_test_slow(pretrained=False, **kwargs):
            return Slow()

        from visprof.cli.app import main
        sys.exit(main(sys.argv[1:]))
    """)
    done = subprocess.run([sys.executable, "-c", code, "profile", "visprof_test_slow", "--device", "cpu",
                           "--precision", "fp32", "--passes", "timing", "--warmup", "1", "--iterations", "16"],
                          cwd=tmp_path, env=child_env(), capture_output=True, text=True, timeout=120)
    # (not in the checkout: on Python 3.10, with no PYTHONSAFEPATH, `python -c` there imports its sources)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("[visprof]")]
    step = lines.index("[visprof] visprof_test_slow 2/2: timing pass (clean)")
    updates = [line for line in lines[step + 1:] if line.startswith("[visprof]   timing pass (clean): ")]
    assert updates, done.stderr
    assert all(re.fullmatch(r"\[visprof\]   timing pass \(clean\): (\d+)/16 iterations, \d+ s", u) for u in updates)
    assert len(updates) <= 2  # ~7 s of timing: a line every 5 s, none in the first 5
