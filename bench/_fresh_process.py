"""Runs one model's measurement in a fresh Python process: nothing an earlier model did in the
process (a torch.profiler session that keeps CUPTI subscribed, allocator state, a warm host)
can colour the next one. The script is called again with `--one NAME` and prints its row as
JSON on its last line."""
from __future__ import annotations

import json
import subprocess
import sys


def run_one(script: str, name: str, args: list[str]) -> dict:
    """The row that `script --one name *args` printed, or {"error": the tail of its stderr}."""
    proc = subprocess.run([sys.executable, script, "--one", name, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"{name}: FAILED", proc.stderr[-300:], flush=True)
        return {"model": name, "error": proc.stderr[-500:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])
