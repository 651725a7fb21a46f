"""Record-array helpers the passes use to split a traced loop by iteration."""
import numpy as np

from visprof.native.records import KERNEL_DTYPE, busy_time_ns, duration_sum_ns, rows_by_iteration


def rows(*intervals, device=0):
    out = np.zeros(len(intervals), dtype=KERNEL_DTYPE)
    out["start_ns"] = [a for a, _ in intervals]
    out["end_ns"] = [b for _, b in intervals]
    out["device"] = device
    return out


def test_rows_are_split_by_the_iteration_they_started_in():
    k = rows((0, 10), (5, 30), (100, 120), (130, 135), (199, 260))
    first, second, third = rows_by_iteration(k, [(0, 100), (100, 200), (200, 300)])
    assert duration_sum_ns(first) == 35 and duration_sum_ns(second) == 20 + 5 + 61 and len(third) == 0


def test_busy_time_counts_overlaps_once_per_device():
    k = np.concatenate([rows((0, 10), (5, 30), (40, 50)), rows((0, 100), device=1)])
    assert busy_time_ns(k) == 30 + 10 + 100
    assert duration_sum_ns(k) == 10 + 25 + 10 + 100
