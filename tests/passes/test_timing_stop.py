"""The timing pass's stop rule (visprof.passes.timing.Adaptive): after min_iterations, at each window's
end, stop once the median of all samples moved by at most `tolerance` over the last window."""
from __future__ import annotations

from visprof.passes.timing import Adaptive


def first_stop(rule: Adaptive, series: list[float]) -> int | None:
    """How many samples the pass takes before it stops, fed ``series`` one sample at a time (no time passes)."""
    for n in range(1, len(series) + 1):
        if rule.done(series[:n], elapsed_s=0.0):
            return n
    return None


def test_the_timing_pass_stops_at_the_first_window_where_the_median_held_within_tolerance():
    """A rule that stopped while the median still moved would rest the latency median and p10/p90 on
    unconverged samples; one that never stopped on a steady series would run to max_iterations."""
    rule = Adaptive(min_iterations=20, max_iterations=500, max_seconds=1e9, window=10, tolerance=0.005)
    # steady: at 20 samples the median of the first 10 (100) and of all 20 (100) agree
    assert first_stop(rule, [100.0] * 60) == 20
    # a step of 2% after 10 samples. At 20: median 100 -> 101, 1% (> 0.5%), go on.
    # At 30: median of 20 = 101 -> median of 30 = 102, 0.99%, go on. At 40: 102 -> 102, stop.
    assert first_stop(rule, [100.0] * 10 + [102.0] * 50) == 40
    # a step of 0.8%: at 20 the median moved 100 -> 100.4, 0.4% (<= 0.5%): stop there
    assert first_stop(rule, [100.0] * 10 + [100.8] * 50) == 20
