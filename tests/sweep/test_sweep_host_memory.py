"""A CPU sweep with a batch that cannot fit in host memory is refused before anything is
allocated, as ``visprof profile`` refuses it: a failure of kind ``oom`` naming the batch that
should fit. It used to decay the batch step by step (timm's decay_batch_step) and run the
first one whose estimate was under all the available memory: a worker at batch 10^8 of
mobilenetv3_small_050 grew to 17 GB of a 23 GB machine, and of visprof_fake_tiny past 3 GB in
3 s. The real-process test watches the workers' resident memory and kills them at 3 GiB, so it
fails on that code without bringing the machine down.
"""
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

from visprof.base.child_env import child_env, module_command
from visprof.sweep import open_store
from visprof.sweep.execute import execute_cell
from visprof.sweep.plan import SweepPlan
from visprof.sweep.selection import import_modules

FAKE_MODELS = str(Path(__file__).resolve().parents[1] / "helpers" / "sweep_fake_models.py")
ABSURD = 100_000_000
RSS_LIMIT = 3 * 2**30
DEADLINE_S = 60


def descendants_rss(root: int) -> dict[int, int]:
    """Resident bytes of ``root`` and every process under it (the workers run in their own
    session, but they are the driver's children)."""
    parent, rss = {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss[int(entry.name)] = int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            continue

    def under(pid: int) -> bool:
        for _ in range(64):
            if pid == root:
                return True
            if pid <= 1:
                return False
            pid = parent.get(pid, 0)
        return False

    return {pid: nbytes for pid, nbytes in rss.items() if under(pid)}


def test_an_absurd_cpu_batch_fails_as_oom_before_the_worker_grows(tmp_path):
    store = tmp_path / "s.db"
    command = [*module_command("visprof"), "sweep", "visprof_fake_tiny", "-b", str(ABSURD), "--device", "cpu",
               "--passes", "timing", "--store", str(store), "--import", FAKE_MODELS, "--iterations", "3",
               "--warmup", "1", "--timeout", "120"]
    proc = subprocess.Popen(command, env=child_env(PYTHONUNBUFFERED="1"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    start, peak, killed = time.monotonic(), 0, None
    try:
        while proc.poll() is None:
            sizes = descendants_rss(proc.pid)
            peak = max([peak, *sizes.values()])
            if peak > RSS_LIMIT or time.monotonic() - start > DEADLINE_S:
                killed = f"RSS {peak / 2**30:.1f} GiB" if peak > RSS_LIMIT else f"{DEADLINE_S} s"
                for pid in sizes:  # the workers first: they are in sessions of their own
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                break
            time.sleep(0.05)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    elapsed = time.monotonic() - start
    assert killed is None, f"killed after {elapsed:.0f} s: {killed} (a worker allocated the absurd batch)\n{err[-2000:]}"
    assert proc.returncode == 0, err
    assert peak < RSS_LIMIT

    with open_store(store) as s:
        assert s.rows() == []
        (failure,) = s.failures()
    assert (failure["kind"], failure["error_class"], failure["final"]) == ("oom", "OutOfMemoryError", 1)
    assert json.loads(failure["batch_sizes_tried"]) == [ABSURD]  # refused, not decayed step by step
    message = failure["message"]
    assert f"out of host memory (RAM) at batch size {ABSURD} on the CPU" in message
    fits = int(re.search(r"the largest batch that fits is about (\d+) \(--batch-size \1\)", message).group(1))
    assert 1 <= fits < ABSURD
    assert re.search(r"it needs at least [\d.,]+ [TP]iB, [\d.]+ GiB is available", message)
    # on screen: the cell's line, then the summary with the message
    assert re.search(rf"\[visprof\] 1/1 visprof_fake_tiny b{ABSURD}\|\S+ \[cpu\]: OutOfMemoryError", err)
    assert "failed by class: OutOfMemoryError 1" in out
    assert f"FAILED visprof_fake_tiny|b{ABSURD}" in out and "the largest batch that fits is about" in out


def cell(model: str, batch: int):
    import_modules([FAKE_MODELS])
    return SweepPlan([model], "cpu", batch_sizes=[batch], passes=("timing",),
                     options={"iterations": 2, "warmup": 0}).cells()[0]


def test_the_cell_refused_by_the_estimate_is_final_and_names_the_batch(monkeypatch):
    """In-process: the refusal costs the estimate's two small forwards, not a decay of 28 steps.
    The host is made to look small (512 MiB available), so that code which decays and then
    runs the batch the estimate lets through (as before) allocates no more than that here."""
    from visprof.passes import host_memory

    monkeypatch.setattr(host_memory, "available_bytes", lambda: 512 * 2**20)
    start = time.monotonic()
    outcome = execute_cell(cell("visprof_fake_tiny", ABSURD), "cpu")
    assert (outcome["status"], outcome["kind"], outcome["error_class"]) == ("failed", "oom", "OutOfMemoryError")
    assert outcome["batch_sizes_tried"] == [ABSURD]
    assert "512 MiB" not in outcome["message"] and "0.5 GiB is available" in outcome["message"]
    fits = int(re.search(r"the largest batch that fits is about (\d+)", outcome["message"]).group(1))
    assert 1 <= fits < ABSURD
    assert "estimated from the memory one sample needs" in outcome["message"]
    assert "check_host_memory" in outcome["detail"]  # raised by the estimate, before the runner allocated
    assert time.monotonic() - start < 15


def test_an_out_of_memory_the_model_raises_on_the_cpu_still_decays():
    """Only the estimate's refusal is final: an OOM raised while running still decays."""
    outcome = execute_cell(cell("visprof_fake_oom", 16), "cpu")
    assert outcome["status"] == "ok" and outcome["batch_sizes_tried"] == [16, 12, 8]
