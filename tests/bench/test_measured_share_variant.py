"""bench/measured_share_variant.py: a category's measured roof share from a bound library."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from visprof.analysis.measured_bounds import BoundEntry
from visprof.result import KernelFamilyRow

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import measured_share_variant  # noqa: E402


def entry(family, category, sm, dram) -> BoundEntry:
    return BoundEntry(family, category, ["m"], 1, 1.0, sm, dram, None, (dram, dram), None)


def test_shares_are_time_weighted_over_the_covered_families_of_a_covered_category():
    library = {e.key: e for e in (entry("gemm", "linear", 80.0, 20.0), entry("gemm2", "linear", 40.0, 60.0),
                                  entry("norm", "normalization", 30.0, 50.0))}
    result = SimpleNamespace(kernel_families=[
        KernelFamilyRow("gemm", "linear", None, 1, 3.0, 0.3), KernelFamilyRow("gemm2", "linear", None, 1, 1.0, 0.1),
        KernelFamilyRow("norm", "normalization", None, 1, 1.0, 0.1),
        KernelFamilyRow("unknown", "normalization", None, 1, 3.0, 0.3),  # 3 of the 4 ms unmeasured
        KernelFamilyRow("gemm", "attention", None, 1, 2.0, 0.2)])  # same family, other category: not the entry
    shares = measured_share_variant.measured_shares(result, library, 0.5)
    assert set(shares) == {"linear"}
    assert shares["linear"] == pytest.approx(((3 * 20 + 1 * 60) / 4 / 100, (3 * 80 + 1 * 40) / 4 / 100))
    assert set(measured_share_variant.measured_shares(result, library, 0.25)) == {"linear", "normalization"}
