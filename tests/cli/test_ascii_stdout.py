"""A standard output that cannot encode the report's characters (an ASCII or Latin-1 locale, a CI
job with PYTHONIOENCODING=ascii) gets them as escapes (``\\xb7``), as Python writes stderr. It used
to end in a UnicodeEncodeError traceback (exit 1) once the work was done, when the report's first
``·`` was printed: ``visprof profile ... --json r.json`` then wrote no r.json, and a finished sweep
no --json summary. Real processes."""
from __future__ import annotations

import json
import subprocess
import sys

from visprof.base.child_env import child_env, module_command


def run_ascii(cwd, *argv) -> subprocess.CompletedProcess:
    return subprocess.run([*module_command("visprof"), *argv], cwd=cwd, capture_output=True, timeout=300,
                          env=child_env(VISPROF_DEBUG="", PYTHONIOENCODING="ascii"))


def test_a_profile_on_an_ascii_stdout_prints_its_report_and_writes_its_json(tmp_path):
    proc = run_ascii(tmp_path, "profile", "test_vit", "--device", "cpu", "-b", "1", "--warmup", "1",
                     "--iterations", "2", "-q", "--json", "r.json")
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"Traceback" not in proc.stderr
    report = proc.stdout.decode("ascii")  # every byte ASCII
    assert report.startswith("visprof profile: test_vit") and "\\xb7" in report  # the header's middle dots
    assert json.loads((tmp_path / "r.json").read_text())["model"]["name"] == "test_vit"


def test_stdout_keeps_its_own_error_handling_after_a_command(tmp_path, capsys):
    from visprof.cli.app import main

    errors = sys.stdout.errors
    assert main(["info"]) == 0
    assert sys.stdout.errors == errors
