"""A stop signal that lands in one long native operation ends the command within the watchdog's grace.

`timeout 300 visprof profile vit_tiny_patch16_224 --img-size 22400 -b 1` on the CPU ran on past its
300 s: one attention call over two million tokens held the main thread in native code, and Python
runs a signal's handler only between bytecodes. SIGTERM went unanswered until `kill -9`."""
from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest

from visprof.base.child_env import child_env
from visprof.cli.stop_watchdog import GRACE_S

# A model whose forward is one native call of minutes on a few cores (62 squarings of a 5000x5000
# float64 matrix, 1.6e13 FLOPs: 2.2 s each on the 2-core development VM), announced by a marker file.
BLOCKING_MODEL = textwrap.dedent("""
    import sys
    import torch
    from timm.models import register_model
    from torch import nn

    class Blocks(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3 * 8 * 8, 2)
            self.pretrained_cfg = {"input_size": (3, 8, 8)}

        def forward(self, x):
            open("started", "w").close()
            torch.linalg.matrix_power(torch.full((5000, 5000), 1e-3, dtype=torch.float64), 2 ** 62)
            return self.fc(x.flatten(1))

    @register_model
    def visprof_test_native_block(pretrained=False, **kwargs):
        return Blocks()

    from visprof.cli.app import run
    run()
""")


@pytest.mark.parametrize("signum, code, said", [(signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                                (signal.SIGINT, 130, "interrupted")])
def test_a_stop_during_a_long_native_call_ends_the_command_after_the_grace(tmp_path, signum, code, said):
    proc = subprocess.Popen([sys.executable, "-c", BLOCKING_MODEL, "profile", "visprof_test_native_block",
                             "--device", "cpu", "--precision", "fp32", "--passes", "timing", "-b", "1",
                             "--warmup", "1", "--iterations", "1", "--json", "out.json"],
                            cwd=tmp_path, env=child_env(), stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not (tmp_path / "started").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() is not None else ""
        time.sleep(0.1)
    time.sleep(0.5)  # inside the native call
    sent = time.monotonic()
    proc.send_signal(signum)
    try:
        returncode = proc.wait(timeout=GRACE_S + 10)
    finally:
        proc.kill()
    waited = time.monotonic() - sent
    assert returncode == code
    assert GRACE_S - 1 <= waited <= GRACE_S + 10  # not before the grace, nor when the call returned
    lines = [line for line in proc.stderr.read().splitlines() if line.startswith("visprof:")]
    assert lines == [f"visprof: error: {said}; a native operation had not returned {GRACE_S:g} s later, so visprof "
                     "stopped there, without its cleanup (files are written whole or not at all)"]
    assert not (tmp_path / "out.json").exists()


def test_a_stop_whose_handler_runs_is_left_to_the_command(tmp_path):
    """The usual case: the main thread is in Python or in a call a signal interrupts, the handler runs
    at once, and the command stops its own way (here: a handler that notes it and goes on)."""
    script = textwrap.dedent("""
        import signal, sys, time
        from visprof.cli.stop_watchdog import StopWatchdog

        def note(signum, frame):
            watchdog.handled()
            print("handled", flush=True)

        signal.signal(signal.SIGUSR1, note)
        watchdog = StopWatchdog({signal.SIGUSR1}, grace_s=0.5)
        print("ready", flush=True)
        time.sleep(2)  # the signal interrupts the sleep, its handler runs, the sleep goes on
        watchdog.close()
        print("done", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path, env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGUSR1)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.splitlines() == ["handled", "done"] and err == ""
