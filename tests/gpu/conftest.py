import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def pytest_configure(config):
    """Processes the GPU tests start import visprof from a neutral directory, as a user's would.

    Where visprof is not installed (the lent H200 builds it in place), they are given the source
    tree on PYTHONPATH, so a plain `pytest tests/gpu` tests this checkout and not nothing.
    """
    if importlib.util.find_spec("torch") is None:
        return
    # from an empty folder: a stray module in /tmp (an enum.py shadowed the stdlib's once) had failed the
    # probe, and every child process of every test then imported the source tree without its extension
    with tempfile.TemporaryDirectory() as empty:
        probe = subprocess.run([sys.executable, "-c", "import visprof"], cwd=empty, capture_output=True)
    if probe.returncode != 0:
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)


def pytest_collection_modifyitems(config, items):
    """GPU tests skip, with the reason, where no CUDA GPU is visible (CI)."""
    try:
        import torch

        has_gpu = torch.cuda.is_available()
        reason = "no CUDA GPU visible" if not has_gpu else ""
    except ImportError:
        has_gpu, reason = False, "torch is not installed"
    if has_gpu:
        return
    skip = pytest.mark.skip(reason=f"GPU test: {reason}; run on the lent H200")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
