"""The test of bench/results/bandwidth-covariate-2026-12-05/prereg.md, judged by bench/calibrate_check.py:
a model's measured bandwidth share as a fifth calibration covariate.

    python bench/bandwidth_covariate_variant.py --pair /tmp/pair1.db rtx3090 rtx4090 \\
        --pair /tmp/pair2.db rtx4090 rtx5090 --pair /tmp/pair3.db rtx3090 rtx5090 \\
        --store /tmp/profiles.db --out DIR

Arguments: calibrate_check's own. The share is the time-weighted b of the model's roofline groups
whose key (category, sub-category, aten op) the measured table has
(bench/results/measured-bandwidth-2026-12-05/bandwidth-shares.json), over those groups' time, read
from the model's newest profile with roofline groups at any batch or image size; a row without one
gets the median over the fleet's rows that have it. It wraps
`visprof.analysis.calibration_fleet.make_fleet` for the run, as bench/launch_covariate_variant.py does.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import visprof.analysis.calibration_fleet as calibration_fleet

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibrate_check  # noqa: E402
from launch_covariate_variant import newest_per_architecture, with_covariate  # noqa: E402

TABLE = Path(__file__).resolve().parent / "results/measured-bandwidth-2026-12-05/bandwidth-shares.json"
COVARIATE = "measured_bandwidth_share"


def read_table(path: Path = TABLE) -> dict[tuple, float]:
    """{(category, sub-category, op): b} of the committed table."""
    return {(k["category"], k["subcategory"], k["op"]): float(k["bandwidth_share"])
            for k in json.loads(path.read_text())["keys"]}


def bandwidth_share(groups, table: dict[tuple, float]) -> float | None:
    """Time-weighted b over the groups whose key the table has; None where it has none of them."""
    covered = [(g.time_ms, table[(g.category, g.subcategory, g.op)]) for g in groups
               if (g.category, g.subcategory, g.op) in table and g.time_ms > 0]
    total = sum(t for t, _ in covered)
    return sum(t * b for t, b in covered) / total if total > 0 else None


def bandwidth_shares(store: Path, table: dict[tuple, float]) -> dict[str, float]:
    """Per architecture, the share of its newest profile with roofline groups."""
    def share_of(result):
        return bandwidth_share(result.roofline.groups, table) if result.roofline and result.roofline.groups else None

    return newest_per_architecture(store, share_of)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--store", type=Path)
    ours, rest = parser.parse_known_args(argv)
    if ours.store is None or not ours.store.is_file():
        print(f"bandwidth_covariate_variant.py: --store: not found: {ours.store}", file=sys.stderr)
        return 2
    shares = bandwidth_shares(ours.store, read_table())
    calibration_fleet.make_fleet = with_covariate(  # read by fleet_from_comparison
        calibration_fleet.make_fleet, shares, name=COVARIATE, what="measured bandwidth shares", needed=0.0)
    return calibrate_check.main([*rest, "--store", str(ours.store)])


if __name__ == "__main__":
    sys.exit(main())
