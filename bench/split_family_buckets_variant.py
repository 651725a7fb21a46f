"""A variant of `visprof calibrate`'s buckets, judged by bench/calibrate_check.py: a kernel family's time
split over ``kf:CATEGORY/SUB/FAMILY`` by the category of each of its kernels (the row's ``by_category``),
instead of all of it under the category the row names.

    python bench/split_family_buckets_variant.py --pair /tmp/pair1.db rtx3090 rtx4090 \\
        --pair /tmp/pair2.db rtx4090 rtx5090 --store /tmp/h100-split.db --model-held-out 0 --out DIR

Arguments: calibrate_check's own. The rule and why: bench/results/split-family-buckets-2026-12-05/prereg.md
(a row names the category with most of the family's time; profiles made since c543069 keep the rest).
A row without ``by_category`` (every profile made before) counts as ``buckets_of`` counts it.
"""
from __future__ import annotations

import sys
from pathlib import Path

import visprof.analysis.calibration_fleet as calibration_fleet

sys.path.insert(0, str(Path(__file__).resolve().parent))
from family_buckets_variant import run_with_buckets  # noqa: E402

_labelled_buckets = calibration_fleet.buckets_of


def _profiled_total(result) -> float:
    """The denominator of ``buckets_of``'s shares: kernel time by category plus idle time."""
    kernels = sum(r.time_ms for r in result.categories if r.time_ms and r.time_ms > 0)
    idle = result.timing.idle_ms if result.timing and result.timing.idle_ms and result.timing.idle_ms > 0 else 0.0
    return kernels + idle


def split_buckets(result) -> dict[str, float]:
    out = dict(_labelled_buckets(result))
    total = _profiled_total(result)
    if total <= 0:
        return out
    for k in result.kernel_families or []:
        if not (k.time_ms and k.time_ms > 0 and k.by_category):
            continue
        labelled = f"kf:{k.category}/{k.subcategory or '-'}/{k.family}"
        out[labelled] -= k.time_ms / total
        if out[labelled] <= 1e-12:  # the family's whole share moved (the row's own part is re-added below)
            del out[labelled]
        for key, ms in k.by_category.items():
            if ms > 0:
                category, _, sub = key.partition("/")
                bucket = f"kf:{category}/{sub or '-'}/{k.family}"
                out[bucket] = out.get(bucket, 0.0) + ms / total
    return out


def main(argv=None) -> int:
    return run_with_buckets(split_buckets, argv)


if __name__ == "__main__":
    sys.exit(main())
