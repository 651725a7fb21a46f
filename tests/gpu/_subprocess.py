"""Runs a snippet in a fresh Python process and returns the JSON it prints last.

GPU tests that depend on process-wide state (CUPTI after torch.profiler, the allocator that
must be installed before the first CUDA allocation) run in their own process.
"""
import json
import subprocess
import sys
import tempfile
import textwrap


def run_json(code: str, timeout: float = 300, env: dict | None = None) -> dict:
    # an empty folder: keeps the source tree off sys.path (the installed package is tested), and any
    # stray module in /tmp (an enum.py shadowed the stdlib's once)
    with tempfile.TemporaryDirectory() as empty:
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=empty)
    if proc.returncode != 0:
        raise AssertionError(f"subprocess failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])
