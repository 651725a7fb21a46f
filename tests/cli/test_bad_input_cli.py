"""The issue-8 table, row by row, on the real command line: `python -m visprof profile` in a
subprocess, with real paths, real file systems and real signals. Each test asserts the exit
code, the message and what is left on disk.

The runs that profile use resnet18 at batch 1 and 32x32 (a few seconds on the CPU); the
refusals end before torch is imported.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from visprof.base.child_env import child_env, module_command
from visprof.result import ProfileResult

REPO = Path(__file__).resolve().parents[2]
FAST = ["-b", "1", "--img-size", "32", "--passes", "timing,attributed", "--iterations", "2", "--warmup", "1"]

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU path; a GPU changes the defaults")


# An earlier run's trace, replaced by the next: JSON (the JSON outputs replace JSON only).
OLD_TRACE = '{"traceEvents": []}'

def _env(**extra: str) -> dict[str, str]:
    env = child_env(**extra)
    env.pop("VISPROF_DEBUG", None)
    return env


def visprof(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*module_command("visprof"), *map(str, args)], env=_env(), capture_output=True,
                          text=True, timeout=600, **kwargs)


def _one_error_line(done: subprocess.CompletedProcess) -> str:
    """The run's stderr, which must be exactly one `visprof: error:` line."""
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("visprof: error: "), done.stderr
    return lines[0]


def _leftovers(folder: Path) -> list[str]:
    """Temporary files of visprof's writers (partial writes, path probes) left in ``folder``."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".partial", ".probe")))


# --- row 1: outputs into folders that cannot take them, refused before the run -----------------------

@pytest.fixture
def read_only_dir(tmp_path):
    """A folder the CLI cannot write into: chmod for a user, a read-only bind mount for root
    (root ignores permissions)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    mounted = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"root without mount rights here: {mounted.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], check=True, capture_output=True)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)


def test_a_read_only_folder_is_refused_before_the_run(read_only_dir):
    done = visprof("profile", "resnet18", *FAST, "--json", read_only_dir / "r.json")
    assert done.returncode == 2 and done.stdout == ""
    line = _one_error_line(done)
    assert "--json: " in line and str(read_only_dir) in line
    assert "Read-only file system" in line or "is not writable" in line
    assert list(read_only_dir.iterdir()) == []


@pytest.mark.parametrize("command, kind", [
    (["profile", "resnet18"], "a visprof profile result"),
    (["sweep", "resnet18", "--store", "s.db"], "a visprof sweep summary"),
    (["compare-compile", "resnet18"], "a visprof comparison of an eager and a compiled run"), (["ncu", "resnet18", "-c", "attention"], "a visprof profile result")])
def test_a_model_commands_bad_output_is_refused_before_torch_loads(tmp_path, command, kind):
    """docs/cli.md says so; the model commands imported torch and timm (seconds) before they looked."""
    (tmp_path / "train.py").write_text("print('training')\n")
    code = ("import sys; from visprof.cli.app import main; rc = main(sys.argv[1:]); "
            "assert 'torch' not in sys.modules, 'torch loaded'; sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code, *command, "--json", "train.py"], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"--json train.py holds something other than {kind}," in _one_error_line(done)
    assert (tmp_path / "train.py").read_text() == "print('training')\n"


@pytest.mark.parametrize("option, kind", [("--json", "a visprof profile result"), ("--trace", "a Chrome trace")])
def test_a_file_of_something_else_is_refused_before_the_run(tmp_path, option, kind):
    """The JSON writers replace JSON only (a script given as the path by mistake stays): the
    CLI says so before the run, not after it."""
    script = tmp_path / "train.py"
    script.write_text("print('training')\n")
    done = visprof("profile", "resnet18", *FAST, option, script)
    assert done.returncode == 2 and done.stdout == ""
    assert f"{option} {script} holds something other than {kind}" in _one_error_line(done)
    assert script.read_text() == "print('training')\n"


@pytest.mark.parametrize("option, path, words", [
    ("--json", "/proc/visprof-test.json", "--json: cannot create files in directory /proc: it takes no new files"),
    ("--trace", "/sys/visprof-test.json", "--trace: "),  # EACCES for root, not writable for a user
    ("--json", "/dev/full", "--json: /dev/full is not a regular file (a device, a pipe or a socket)"),
])
def test_system_paths_are_refused_before_the_run(option, path, words):
    if not Path(path).parent.exists() or (path == "/dev/full" and not Path(path).exists()):
        pytest.skip(f"no {path} on this system")
    done = visprof("profile", "resnet18", *FAST, option, path)
    assert done.returncode == 2 and done.stdout == ""
    assert words in _one_error_line(done)
    if path != "/dev/full":
        assert not Path(path).exists()


# --- row 3: one file for two outputs; and other mixes that cannot work -------------------------------

def test_json_and_trace_naming_one_file_are_refused(tmp_path):
    target = tmp_path / "same.json"
    target.write_text("keep")
    done = visprof("profile", "resnet18", *FAST, "--json", target, "--trace", tmp_path / "." / "same.json")
    assert done.returncode == 2
    assert _one_error_line(done) == (f"visprof: error: --json and --trace name the same file ({target}); "
                                     "give each its own")
    assert target.read_text() == "keep"


def test_an_output_over_the_rules_file_is_refused(tmp_path):
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rules]]\nname = "x"\nop = "relu"\ncategory = "activation"\n')
    done = visprof("profile", "resnet18", *FAST, "--categories", rules, "--json", rules)
    assert done.returncode == 2 and "is the --categories file" in _one_error_line(done)
    assert rules.read_text().startswith("[[rules]]")


def test_a_trace_without_the_attributed_pass_is_refused(tmp_path):
    done = visprof("profile", "resnet18", "--passes", "timing", "--trace", tmp_path / "t.json")
    assert done.returncode == 2
    assert "--trace writes the attributed pass, which --passes leaves out" in _one_error_line(done)


# --- row 4: category files -----------------------------------------------------------------------------

@pytest.mark.parametrize("name, content, words", [
    ("notalist.toml", 'rules = "notalist"\n', "rules: expected a list of tables"),
    ("list.json", "[1, 2]", "the top level: expected a table (a JSON object)"),
    ("ints.toml", "rules = [1, 2]\n", "rules[0]: expected a table with name, category and conditions, got an integer (1)"),
    ("folder", None, "is a directory, not a file"),
])
def test_bad_category_files_are_one_line_before_the_run(tmp_path, name, content, words):
    path = tmp_path / name
    if content is None:
        path.mkdir()
    else:
        path.write_text(content)
    done = visprof("profile", "resnet18", *FAST, "--categories", path)
    assert done.returncode == 2 and done.stdout == ""
    line = _one_error_line(done)
    assert line.startswith(f"visprof: error: category rules file {path}") and words in line


# --- the whole run: the report first, then the files; options that change nothing say so ---------------

def test_a_cpu_run_prints_the_report_then_writes_each_file_whole(tmp_path):
    out, trace = tmp_path / "r.json", tmp_path / "t.json"
    trace.write_text(OLD_TRACE)
    # stdout and stderr in one pipe, so their order is the order they were written in
    done = subprocess.run([*module_command("visprof"), "profile", "resnet18", *FAST, "--precision", "tf32",
                           "--json", str(out), "--trace", str(trace)], env=_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    assert done.returncode == 0, done.stdout
    result = ProfileResult.load(out)
    from visprof.report.table import render

    report = render(result)
    assert report in done.stdout
    before, after = done.stdout.split(report)
    # nothing but visprof's progress before the report: no torch warnings, no tracebacks
    # (and, on a fresh install, the one line saying that the ATen observer compiles on first use)
    assert all(line.startswith(("[visprof] resnet18 ", "visprof: compiling its ATen observer")) for line in before.splitlines()), before
    assert after.splitlines() == ["", f"[visprof] writing {out}", f"[visprof] wrote {out}",
                                  f"[visprof] writing {trace}", f"[visprof] wrote {trace}"]
    # tf32 changes nothing on the CPU, and says so, once, in the report and in the result
    note = "precision tf32 on the CPU: TF32 is an NVIDIA GPU math mode, so the CPU ran plain fp32"
    assert result.warnings.count(note) == 1 and report.count(note) == 1
    # the CPU report: ops, not kernels; no CUPTI check; memory said to be unmeasured
    assert re.search(r"^category\s+host ms\s+share\s+ops\s", report, re.M) and "kernels" not in report
    assert "CUPTI" not in report and [c.name for c in result.checks] == ["unattributed time"]
    assert "Memory: not measured (the memory pass needs a GPU" in report
    # the README's example works on a CNN
    assert result.category_totals()["attention"].time_ms == 0.0
    assert result.category_totals()["convolution"].time_ms > 0
    assert json.loads(trace.read_text())["traceEvents"]
    assert _leftovers(tmp_path) == []


# --- a write that fails after the run: the report stays, one line names the file -----------------------

def test_a_write_that_fails_after_the_run_is_one_line_and_the_report_stays(tmp_path):
    """A real file-size limit (ulimit -f): the trace is larger than the limit, the result is
    not. Python ignores SIGXFSZ, so the write fails with EFBIG like a full disk would."""
    import resource

    out, trace = tmp_path / "r.json", tmp_path / "t.json"

    def limit_file_size():
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))

    # The ATen observer would compile a library into a cache, which the limit would stop.
    done = subprocess.run([*module_command("visprof"), "profile", "resnet18", *FAST, "-q", "--json", str(out),
                           "--trace", str(trace)], env=_env(VISPROF_ATEN_OBSERVER="0"), capture_output=True,
                          text=True, timeout=600, preexec_fn=limit_file_size)
    assert done.returncode == 5
    assert "Time by category" in done.stdout and "Self-checks" in done.stdout  # the report is on screen
    assert _one_error_line(done) == (f"visprof: error: could not write {trace}: File too large (the file would "
                                     "exceed the file size limit (ulimit -f) or the file system's limit); "
                                     "no file was created")
    assert ProfileResult.load(out).model.name == "resnet18"  # the other file is written
    assert not trace.exists() and _leftovers(tmp_path) == []


# --- row 2: Ctrl-C ----------------------------------------------------------------------------------------

def _start(args: list, tmp_path: Path) -> subprocess.Popen:
    return subprocess.Popen([*module_command("visprof"), "profile", *map(str, args)], env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path)


def _wait_for_line(proc: subprocess.Popen, text: str) -> list[str]:
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"the run ended (exit {proc.wait()}) before printing {text!r}: {''.join(seen)}")


def _complete_json(path: Path) -> bool:
    from visprof.base.errors import BadInputError
    from visprof.base.inputs import load_json_file

    try:
        load_json_file(path, "trace")  # plain or gzipped
    except BadInputError:
        return False
    return True


def test_ctrl_c_while_the_trace_is_written_keeps_the_old_file(tmp_path):
    """SIGINT from this process while the CLI is inside the trace's write: stopped (SIGSTOP)
    at the first sign of writing, a temporary file or a change of the trace itself, and
    interrupted if the write is still unfinished. A writer that wrote in place would be
    caught with a half-written trace. The write takes tens of ms (a gzipped efficientnet_b0
    trace), so a slow scheduler can miss it; then the run is repeated."""
    out, trace = tmp_path / "r.json", tmp_path / "t.json.gz"
    trace.write_text(OLD_TRACE)
    old = trace.stat()
    for attempt in range(4):
        out.unlink(missing_ok=True)
        proc = _start(["efficientnet_b0", *FAST, "--json", out, "--trace", trace], tmp_path)
        try:
            _wait_for_line(proc, f"writing {trace}")
            caught = False
            deadline = time.monotonic() + 30
            while proc.poll() is None and time.monotonic() < deadline:
                partial = any(p.name.endswith(".partial") for p in tmp_path.iterdir())
                changed = (trace.stat().st_ino, trace.stat().st_mtime_ns) != (old.st_ino, old.st_mtime_ns)
                if partial or changed:
                    proc.send_signal(signal.SIGSTOP)
                    # unfinished: a temporary file is still there, or the trace is half written
                    caught = any(p.name.endswith(".partial") for p in tmp_path.iterdir()) or not _complete_json(trace)
                    if caught:
                        proc.send_signal(signal.SIGINT)
                    proc.send_signal(signal.SIGCONT)
                    break
            rest = proc.stderr.read()
            code = proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        if caught:
            break
        trace.write_text(OLD_TRACE)
        old = trace.stat()
    else:
        pytest.fail("the trace's write was never caught in progress in 4 runs")
    print(f"caught in run {attempt + 1}")
    assert trace.read_text() == OLD_TRACE  # the old trace, whole
    assert code == 130
    assert rest.splitlines()[-1] == (f"visprof: error: interrupted; not written: {trace} (its previous version "
                                     "is unchanged)")
    assert "Traceback" not in rest
    assert ProfileResult.load(out).model.name == "efficientnet_b0"  # written before the trace
    assert _leftovers(tmp_path) == []


def test_ctrl_c_during_the_run_names_the_files_not_written(tmp_path):
    out, trace = tmp_path / "r.json", tmp_path / "t.json"
    proc = _start(["resnet18", *FAST, "--json", out, "--trace", trace], tmp_path)
    try:
        _wait_for_line(proc, "attributed pass")
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        assert proc.wait(timeout=120) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rest.splitlines() == [f"visprof: error: interrupted; not written: {out}, {trace}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# --- row 6: a batch that cannot fit in host memory -------------------------------------------------------

def test_a_huge_batch_on_the_cpu_is_out_of_memory_with_a_batch_that_fits():
    start = time.monotonic()
    done = visprof("profile", "resnet18", "-b", "1000000000", "--img-size", "32", "-q")
    assert done.returncode == 3 and done.stdout == ""
    line = _one_error_line(done)
    assert line.startswith("visprof: error: out of host memory (RAM) at batch size 1000000000 on the CPU (it needs "
                           "at least ")
    best = int(re.search(r"the largest batch that fits is about (\d+) \(--batch-size (\d+)\)", line).group(1))
    assert 1 <= best < 1_000_000_000
    assert "model 'resnet18' failed" not in line
    assert time.monotonic() - start < 120  # estimated, not tried


# --- row 7: the memory pass on the CPU --------------------------------------------------------------------

def test_the_memory_pass_on_the_cpu_says_it_needs_a_gpu():
    done = visprof("profile", "resnet18", "-b", "1", "--img-size", "32", "--passes", "timing,memory")
    assert done.returncode == 2 and done.stdout == ""
    assert _one_error_line(done) == ("visprof: error: the memory pass needs a GPU: it measures CUDA allocations, "
                                     "and host memory is not profiled; on the CPU, run --passes timing")


def test_a_timm_that_does_not_import_is_one_line_naming_the_versions(tmp_path):
    # As pip leaves it when torch's index is unreachable and it mixes a CPU torch with a CUDA
    # torchvision: importing timm imports torchvision, whose ops fail to register.
    fake = tmp_path / "site" / "timm"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise RuntimeError("operator torchvision::nms does not exist")\n')
    done = subprocess.run([*module_command("visprof"), "profile", "resnet18", *FAST],
                          env=_env(PYTHONPATH=str(tmp_path / "site")), capture_output=True, text=True, timeout=600)
    line = _one_error_line(done)
    assert done.returncode != 0
    assert "timm cannot be imported (RuntimeError: operator torchvision::nms does not exist)" in line
    assert "torch " in line and "torchvision " in line and "builds of one another" in line


@pytest.mark.parametrize("model, size", [("vit_tiny_patch16_224", "99999999999"), ("resnet18", "99999999999999999999")])
def test_a_size_too_large_for_torch_is_one_line_without_torchs_native_backtrace(tmp_path, model, size):
    """timm's build (ViT's position embedding) or the input's randn overflowed int64, and torch's message
    carried its C++ backtrace: "Exception raised from THPUtils_unpackLong ...", then 50 lines of
    "frame #N: ...", in the error line (as lines of their own, or joined into one of 5,000 characters)."""
    done = visprof("profile", model, "--img-size", size, "-b", "1", "--device", "cpu", "-q", cwd=tmp_path)
    line = _one_error_line(done)
    assert "Overflow" in line and size in line, line
    assert "Exception raised from" not in line and "frame #" not in line, line
    assert done.returncode in (1, 2) and len(line) < 400, line
