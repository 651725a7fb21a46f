"""The attributed pass's same-work checks: kernel launches compared exactly, durations only
where no kernel overlapped another (fabricated records with known overlaps)."""
from __future__ import annotations

import numpy as np
import pytest

from visprof.native.records import KERNEL_DTYPE, KIND_KERNEL, KIND_MEMSET
from visprof.passes.kernel_sequence import isolated_time_ms, kernel_time_check, launch_difference, merged, sequence_of

NAMES = ["gemm", "softmax", "add", "memset"]


def rows(*kernels):
    """kernels: (name index, start ns, end ns[, kind])."""
    out = np.zeros(len(kernels), dtype=KERNEL_DTYPE)
    for i, k in enumerate(kernels):
        out[i]["name_id"], out[i]["start_ns"], out[i]["end_ns"] = k[0], k[1], k[2]
        out[i]["kind"] = k[3] if len(k) > 3 else KIND_KERNEL
    return out


def test_back_to_back_launches_that_overlap_are_left_out_of_the_time_comparison():
    # tracer-only: the softmax starts before the gemm ends (a launch that waits inside the kernel)
    reference = sequence_of([rows((0, 0, 1000), (1, 900, 1500), (2, 1500, 1600), (3, 1600, 1700, KIND_MEMSET))], NAMES)
    assert reference.names == ["gemm", "softmax", "add"]  # memsets are not kernels
    assert reference.overlapped == [True, True, False]
    # attributed: spaced launches, the softmax alone is shorter: the work is the same
    attributed = sequence_of([rows((0, 0, 950), (1, 2000, 2400), (2, 3000, 3100))], NAMES)
    assert launch_difference(attributed, reference) == 0
    ms, ref_ms, compared, total = isolated_time_ms(attributed, reference)
    assert (compared, total) == (1, 3) and ms == pytest.approx(100e-6) and ref_ms == pytest.approx(100e-6)


def test_a_different_kernel_is_a_launch_difference():
    reference = sequence_of([rows((0, 0, 10), (1, 20, 30))], NAMES)
    attributed = sequence_of([rows((0, 0, 10), (2, 20, 30), (1, 40, 50))], NAMES)
    assert launch_difference(attributed, reference) == 1  # one extra add
    assert isolated_time_ms(attributed, reference)[2] == 0  # no position-wise comparison then


def test_iterations_average_and_a_differing_iteration_is_set_aside():
    seq = sequence_of([rows((0, 0, 100), (1, 200, 300)), rows((0, 0, 300), (1, 400, 500)), rows((1, 0, 10))], NAMES)
    assert seq.iterations == 2 and seq.differing == 1
    assert seq.duration_ns == [200.0, 100.0]
    later = sequence_of([rows((0, 0, 500), (1, 600, 700))], NAMES)
    both = merged(seq, later)  # before and after the attributed pass: clock drift averages out
    assert both.iterations == 3 and both.duration_ns == [pytest.approx(300.0), pytest.approx(100.0)]


def test_kernel_time_at_equal_or_unknown_clocks_is_the_plain_tolerance():
    assert kernel_time_check(33.0, 33.5, None, None, "d").passed  # -1.5%
    assert not kernel_time_check(33.0, 34.2, None, None, "d").passed  # -3.5%
    assert not kernel_time_check(33.0, 34.2, 1950.0, 1950.0, "d").passed  # same clock: no range to allow


def test_kernel_time_at_another_clock_may_move_by_the_clock_ratio_and_no_more():
    # ViT-L/16 SigLIP on the H200 (2026-12-03): 1947 MHz attributed, 1832 MHz tracer-only, -3.5%
    check = kernel_time_check(32.99, 34.19, 1947.0, 1832.0, "d")
    assert check.passed and "1947 vs 1832 MHz" in check.detail
    # faster than even SM-bound kernels would run at that clock: the work differs
    assert not kernel_time_check(31.0, 34.19, 1947.0, 1832.0, "d").passed
    # slower at a higher clock: the range is [x0.941, x1], so +3% is outside it
    assert not kernel_time_check(35.2, 34.19, 1947.0, 1832.0, "d").passed
    # the attributed pass at the lower clock may be slower by up to the ratio
    assert kernel_time_check(36.0, 34.19, 1832.0, 1947.0, "d").passed
    assert not kernel_time_check(34.19 * 1947 / 1832 * 1.03, 34.19, 1832.0, 1947.0, "d").passed


def test_kernel_time_check_is_plain_json():
    import json

    check = kernel_time_check(np.float64(32.99), np.float64(34.19), 1947.0, 1832.0, "d")
    assert type(check.passed) is bool
    json.dumps(check.__dict__)


def test_a_few_slow_iterations_move_neither_pass_but_a_slower_attributed_pass_still_fails():
    # vit_base_patch8_224 at the power limit (2026-12-03): most tracer-only iterations at ~30 ms,
    # a few far slower; the attributed pass at ~30.4 ms failed against their mean
    def iterations(*gemm_ns):
        return [rows((0, 0, g), (2, g + 100, g + 200)) for g in gemm_ns]

    reference = merged(sequence_of(iterations(30_000, 29_900, 30_100, 36_000, 29_950), NAMES),
                       sequence_of(iterations(30_050, 37_000, 29_900, 30_000, 35_500), NAMES))
    same = sequence_of(iterations(30_300, 30_400, 30_350, 30_450, 30_400), NAMES)
    ms, ref_ms, compared, _ = isolated_time_ms(same, reference)
    assert compared == 2 and ref_ms == pytest.approx(30_125e-6) and ms == pytest.approx(30_500e-6)
    assert kernel_time_check(ms, ref_ms, None, None, "d").passed
    assert sum(reference.duration_ns) / 1e6 > 1.02 * ms  # against the mean it failed
    slower = sequence_of(iterations(31_400, 31_500, 31_450, 31_500, 31_400), NAMES)  # +4%: other work
    ms, ref_ms, _, _ = isolated_time_ms(slower, reference)
    assert not kernel_time_check(ms, ref_ms, None, None, "d").passed
