"""A variant of `visprof calibrate`'s buckets, judged by bench/calibrate_check.py: a group norm whose
profile records no generic apply kernel (a one-group norm: PoolFormer, MobileViTv2) gets an op type
of its own, ``group_norm [one group]``, instead of sharing ``group_norm`` with the multi-group norms.

    python bench/group_norm_kind_variant.py --pair /tmp/pair1.db rtx3090 rtx4090 \\
        --pair /tmp/pair2.db rtx4090 rtx5090 --store /tmp/profiles.db --out /tmp/group-norm-kind

Arguments: calibrate_check's own. The kernel rule is the one bench/calibrate_check.py names the
cause by (GENERIC_APPLY). Profiles without kernel families keep the shared type. It wraps
`buckets_of` as `visprof.analysis.calibration_fleet` reads it for the run instead of changing it, because it is a trial
that gained nothing on either pair (bench/results/calibrate-2026-12-03/README.md, "Every variant
tried"). The group-norm table of its output lists the multi-group models only.
"""
from __future__ import annotations

import sys
from pathlib import Path

import visprof.analysis.calibration_fleet as calibration_fleet

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibrate_check  # noqa: E402

_shared_buckets = calibration_fleet.buckets_of


def buckets_by_group_norm_kind(result) -> dict[str, float]:
    out = _shared_buckets(result)
    group = [k for k in result.kernel_families or [] if k.category == "normalization" and k.subcategory == "group"]
    if not group or any(k.family == calibrate_check.GENERIC_APPLY for k in group):
        return out
    split: dict[str, float] = {}
    for key, share in out.items():
        if key.startswith("op:normalization/") and key.endswith("/group_norm"):
            key += " [one group]"
        split[key] = split.get(key, 0.0) + share
    return split


def main(argv=None) -> int:
    calibration_fleet.buckets_of = buckets_by_group_norm_kind  # read by fleet_from_comparison
    calibrate_check.buckets_of = buckets_by_group_norm_kind
    return calibrate_check.main(argv)


if __name__ == "__main__":
    sys.exit(main())
