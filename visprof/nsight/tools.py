"""Finding and running the Nsight command-line tools (nsys, ncu)."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

from visprof.base.errors import ExternalToolError

# Where NVIDIA's installers put the tools, newest release last after sorting.
_INSTALL_GLOBS = {
    "nsys": ["/usr/local/cuda/bin/nsys", "/opt/nvidia/nsight-systems/*/bin/nsys",
             "/usr/local/cuda/nsight-systems-*/bin/nsys"],
    "ncu": ["/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda/nsight-compute-*/ncu"],
}
_ENV = {"nsys": "VISPROF_NSYS", "ncu": "VISPROF_NCU"}
_NAMES = {"nsys": "Nsight Systems (nsys)", "ncu": "Nsight Compute (ncu)"}


def find_tool(tool: str, given: str | os.PathLike | None = None) -> Path:
    """The `tool` executable: `given`, else $VISPROF_NSYS / $VISPROF_NCU, else PATH, else the
    usual install folders. ExternalToolError (one line, with where it looked) when absent."""
    candidates = [given] if given else []
    if not candidates and os.environ.get(_ENV[tool]):
        candidates = [os.environ[_ENV[tool]]]
    if not candidates:
        on_path = shutil.which(tool)
        installed = sorted(p for pattern in _INSTALL_GLOBS[tool] for p in glob.glob(pattern))
        candidates = [on_path] if on_path else installed[-1:]
    for candidate in candidates:
        path = Path(candidate)
        if path.is_file() and os.access(path, os.X_OK):
            # Absolute, so it runs by this path: Path("./nsys") prints as "nsys", a bare name
            # that subprocess would look up on PATH instead.
            return path.absolute()
    if given or os.environ.get(_ENV[tool]):
        source = "" if given else f" (from ${_ENV[tool]})"  # a path the user may have set long ago
        raise ExternalToolError(tool, f"{candidates[0]}{source} is not an executable file")
    raise ExternalToolError(tool, f"{_NAMES[tool]} is not installed here (looked on PATH, in "
                                  f"{', '.join(_INSTALL_GLOBS[tool])}); install it, or give its path with --{tool} "
                                  f"or ${_ENV[tool]}")


def run_tool(tool: str, command: list[str], *, capture: bool = True, env: dict | None = None,
             timeout: float | None = None) -> subprocess.CompletedProcess:
    """Runs a tool command; its output is captured (for the error message) or passed through."""
    try:
        return subprocess.run(command, capture_output=capture, text=True, env=env, timeout=timeout)
    except OSError as exc:
        raise ExternalToolError(tool, f"could not run {command[0]}: {exc.strerror or exc}") from None
    except subprocess.TimeoutExpired:
        raise ExternalToolError(tool, f"{Path(command[0]).name} did not finish within {timeout:.0f} s") from None


def failure(tool: str, proc: subprocess.CompletedProcess, what: str) -> ExternalToolError:
    """One line for a failed tool run: its exit status and its last meaningful output line."""
    lines = [line.strip() for line in ((proc.stderr or "") + "\n" + (proc.stdout or "")).splitlines() if line.strip()]
    errors = [line for line in lines if "ERROR" in line or "error" in line.lower()]
    last = (errors or lines or ["no output"])[-1]
    if proc.returncode == 0:  # it ran through, and what was asked for is not there ("failed (exit status 0)")
        return ExternalToolError(tool, f"{what}: {Path(proc.args[0]).name if proc.args else tool} exited 0: {last}")
    return ExternalToolError(tool, f"{what} failed (exit status {proc.returncode}): {last}")
