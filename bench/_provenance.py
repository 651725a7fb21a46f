"""What every benchmark result records about where and how it was made."""
from __future__ import annotations

import datetime
import platform
import subprocess
import sys
from pathlib import Path


def git_commit() -> str:
    import os

    # The device machine's copy of the tree may carry a stale .git: the commit passed in wins.
    if os.environ.get("VISPROF_COMMIT"):
        return os.environ["VISPROF_COMMIT"]
    root = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def provenance(command: str | None = None) -> dict:
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "command": command or " ".join([Path(sys.executable).name, *sys.argv]),
        "python": platform.python_version(),
        "host": platform.node(),
    }
    try:
        import torch

        info["torch"] = torch.__version__
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
            info["gpu_count"] = torch.cuda.device_count()
    except ImportError:
        pass
    return info
