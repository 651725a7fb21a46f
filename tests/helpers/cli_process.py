"""``python -m visprof`` as a user runs it, in a real process, and what a refused command must look like."""
from __future__ import annotations

import subprocess
from pathlib import Path

from visprof.base.child_env import child_env, module_command


def visprof(cwd: Path, *argv, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(module_command("visprof", *map(str, argv)), cwd=cwd, capture_output=True,
                          text=True, env=child_env(VISPROF_DEBUG=""), timeout=timeout)


def refused(proc: subprocess.CompletedProcess, *words: str) -> str:
    """The one ``visprof: error:`` line of a command refused as a user mistake (exit 2), no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("visprof: error: "), proc.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]
