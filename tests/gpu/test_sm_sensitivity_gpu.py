"""bench/sm_sensitivity.py on a real GPU: the green context holds fewer SMs, both profiles are
written, a second call resumes.

Run on the lent H200: python -m pytest tests/gpu/test_sm_sensitivity_gpu.py -v -s
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from visprof.result import ProfileResult

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]


def run(out: Path, *models: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "bench" / "sm_sensitivity.py"), "--models", *models, "--sms", "66",
                           "--out", str(out)], capture_output=True, text=True, cwd=REPO, timeout=600)


def test_both_profiles_and_the_sm_check(tmp_path):
    proc = run(tmp_path, "deit_tiny_patch16_224")
    print(proc.stdout[-2000:])
    assert proc.returncode == 0, proc.stderr[-2000:]
    check = json.loads((tmp_path / "provenance.json").read_text())["check"]
    assert check["ratio"] > 1.3  # a compute-bound GEMM on about half the SMs
    full = ProfileResult.load(tmp_path / "deit_tiny_patch16_224.all.json")
    part = ProfileResult.load(tmp_path / "deit_tiny_patch16_224.sm66.json")
    keys = sorted((g.category, g.op, g.flops, g.bytes) for g in full.roofline.groups)
    assert keys == sorted((g.category, g.op, g.flops, g.bytes) for g in part.roofline.groups)  # the same ops
    total = [sum(g.time_ms for g in r.roofline.groups) for r in (full, part)]
    assert total[1] > 1.2 * total[0]
    again = run(tmp_path, "deit_tiny_patch16_224")
    assert again.returncode == 0 and "deit_tiny_patch16_224:" not in again.stdout  # resumed: nothing redone
