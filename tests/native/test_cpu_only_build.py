"""The CPU-only backend: CMake with the CUDA toolkit hidden builds an extension with the same
API, which imports, reports backend "cpu", and refuses GPU work with a clear error."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHECK = """
import json, sys
sys.path.insert(0, sys.argv[1])
import _C
info = _C.native_info()
errors = {}
try:
    _C.tracer.start()
except _C.NotBuiltError as e:
    errors["tracer"] = str(e)
try:
    _C.EventTimer(0)
except _C.NotBuiltError as e:
    errors["timer"] = str(e)
t = _C.EventTimer(-1); t.stop(t.start())
p = _C.alloc.host_malloc(64, 9)
live = _C.alloc.stats(9)["live"]
_C.alloc.host_free(p, 9)
_C.nvtx.push("x"); depth = _C.nvtx.depth(); _C.nvtx.pop()
print(json.dumps({"info": info, "errors": errors, "live": live, "depth": depth, "nvtx": _C.nvtx.enabled(),
                  "torch_malloc": _C.alloc.device_malloc(64, 0, 0)}))
"""


@pytest.fixture(scope="module")
def cpu_only_build(tmp_path_factory):
    pybind11 = pytest.importorskip("pybind11")
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    build = tmp_path_factory.mktemp("cpu-only-build")
    out = build / "out"
    configure = ["cmake", "-S", str(ROOT), "-B", str(build), "-DVISPROF_WITH_CUDA=OFF",
                 f"-Dpybind11_DIR={pybind11.get_cmake_dir()}", f"-DPython_EXECUTABLE={sys.executable}",
                 f"-DCMAKE_LIBRARY_OUTPUT_DIRECTORY={out}"]
    subprocess.run(configure, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build), "-j", str(os.cpu_count() or 2)], check=True, capture_output=True)
    return out


def test_cpu_only_backend_imports_and_degrades_clearly(cpu_only_build):
    proc = subprocess.run([sys.executable, "-c", CHECK, str(cpu_only_build)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    state = json.loads(proc.stdout.strip().splitlines()[-1])
    assert state["info"]["backend"] == "cpu"
    assert state["info"]["gpu_count"] == 0 and "without CUDA" in state["info"]["gpu_error"]
    assert "CUDA backend" in state["errors"]["tracer"]
    assert "CUDA" in state["errors"]["timer"]
    assert state["live"] == 64  # the allocation books work the same
    assert state["depth"] == 1 and state["nvtx"] is False  # ranges are no-ops but still balanced
    assert state["torch_malloc"] == 0  # no GPU memory from a CPU-only build
