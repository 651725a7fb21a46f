"""A variant of `visprof calibrate`'s buckets, judged by bench/calibrate_check.py: a kernel family's time
counts in ``kff:FAMILY``, whatever category its row names, instead of ``kf:CATEGORY/SUB/FAMILY``.

    python bench/family_buckets_variant.py --pair /tmp/pair1.db rtx3090 rtx4090 \\
        --pair /tmp/pair2.db rtx4090 rtx5090 --store /tmp/profiles.db --model-held-out 0 --out DIR

Arguments: calibrate_check's own. The rule and why: bench/results/family-buckets-2026-12-05/prereg.md
(a profile names a family's category by where most of its time went, which differs between models
and can flip between runs of one). It wraps `buckets_of` as `visprof.analysis.calibration_fleet`
reads it for the run instead of changing it.
"""
from __future__ import annotations

import sys
from pathlib import Path

import visprof.analysis.calibration_file as calibration_file
import visprof.analysis.calibration_fleet as calibration_fleet

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibrate_check  # noqa: E402

_labelled_buckets = calibration_fleet.buckets_of


def buckets_by_family(result, split_families: bool = True) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, share in _labelled_buckets(result, split_families).items():
        if key.startswith("kf:"):
            # kf:CATEGORY/SUB/FAMILY -> kff:FAMILY (a family may hold '/'). Not "kf:": the ratio table
            # and the sentences read a kf: bucket's category and sub-category from its name.
            key = "kff:" + key.split("/", 2)[2]
        out[key] = out.get(key, 0.0) + share
    return out


def main(argv=None) -> int:
    calibration_fleet.buckets_of = buckets_by_family  # read by fleet_from_comparison
    calibrate_check.buckets_of = buckets_by_family
    calibration_file.buckets_of = buckets_by_family  # a saved fit predicts with the same buckets
    return calibrate_check.main(argv)


if __name__ == "__main__":
    sys.exit(main())
