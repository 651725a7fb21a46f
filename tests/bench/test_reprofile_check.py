"""bench/reprofile_check.py: the kernel families' FLOPs and bytes against the op types that launched kernels."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import reprofile_check  # noqa: E402


def test_family_sums_against_launching_op_types_and_flops_on_kernels_that_do_no_math():
    result = SimpleNamespace(
        op_types=[SimpleNamespace(kernels=2, gflop=10.0, mb=4.0), SimpleNamespace(kernels=1, gflop=0.0, mb=6.0),
                  SimpleNamespace(kernels=0, gflop=99.0, mb=99.0)],  # launched nothing: not in the sums
        kernel_families=[SimpleNamespace(family="nvjet_tst", gflop=8.0, mb=3.0),
                         SimpleNamespace(family="at::native::elementwise_kernel", gflop=2.0, mb=7.0),
                         SimpleNamespace(family="[memset]", gflop=None, mb=None)])
    flops, mb, no_math = reprofile_check.field_sums(result)
    assert flops == pytest.approx(1.0) and mb == pytest.approx(1.0)
    assert no_math == pytest.approx(0.2)  # 2 of 10 GFLOP on an elementwise kernel: what the check flags


def test_missing_stores_are_one_line(tmp_path, capsys):
    assert reprofile_check.main([str(tmp_path / "new.db"), str(tmp_path / "old.db")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("reprofile_check.py: not found:")
