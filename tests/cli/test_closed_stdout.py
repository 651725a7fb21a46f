"""A reader that goes away does not cost the files a command still has to write (a real process:
its stdout is a pipe whose reading end is closed before it prints)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from visprof.base.child_env import module_command

TIMM = Path(__file__).resolve().parents[1] / "data" / "timm"


def test_compare_writes_its_csv_and_json_when_stdout_is_closed(tmp_path):
    csvs = sorted(TIMM.glob("*rtx3090.csv")) + sorted(TIMM.glob("*rtx4090.csv"))
    child = subprocess.Popen([*module_command("visprof"), "compare", *map(str, csvs), "--csv", str(tmp_path / "c.csv"),
                              "--json", str(tmp_path / "c.json")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.close()  # like `| head -0`: gone before the first line
    _, err = child.communicate(timeout=300)
    assert child.returncode == 0, err.decode()
    assert b"Traceback" not in err and b"BrokenPipe" not in err
    assert (tmp_path / "c.csv").read_text().startswith("model,") and (tmp_path / "c.json").stat().st_size > 100


def test_the_wrapper_drops_what_follows_a_closed_pipe():
    from visprof.base.closed_streams import DropWhenClosed as _DropWhenClosed

    class Closing:
        calls = 0

        def write(self, text):
            Closing.calls += 1
            raise BrokenPipeError

        def flush(self):
            raise BrokenPipeError

    out = _DropWhenClosed(Closing())
    assert out.write("a line\n") == 7 and out.write("another\n") == 8
    out.flush()
    assert Closing.calls == 1  # the first write found the pipe closed; nothing is tried after it


def test_a_full_disk_behind_stdout_is_one_line_after_the_files_are_written(tmp_path):
    """`> /dev/full`: every write to stdout fails with ENOSPC. The command still writes its files,
    then says so in one line, exit 5 (an output that could not be written)."""
    csvs = sorted(TIMM.glob("*rtx3090.csv")) + sorted(TIMM.glob("*rtx4090.csv"))
    with open("/dev/full", "w") as full:
        done = subprocess.run([*module_command("visprof"), "compare", *map(str, csvs), "--json",
                               str(tmp_path / "c.json")], stdout=full, stderr=subprocess.PIPE, timeout=300)
    err = done.stderr.decode()
    assert done.returncode == 5, err
    assert err.strip().splitlines()[-1] == "visprof: error: could not write to standard output: No space left on device"
    assert "Traceback" not in err
    assert (tmp_path / "c.json").stat().st_size > 100


def test_stdout_closed_before_the_start_is_no_traceback():
    """`visprof info >&-`: Python starts without sys.stdout; the report goes nowhere, as for a
    reader that went away."""
    done = subprocess.run([*module_command("visprof"), "info"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          timeout=120, close_fds=True, preexec_fn=lambda: os.close(1))
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr
