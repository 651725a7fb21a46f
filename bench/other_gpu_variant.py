"""The test of bench/results/other-gpu-covariate-2026-12-05/prereg.md, judged by bench/calibrate_check.py:
a third published GPU's number of each model as a fifth calibration covariate.

    python bench/other_gpu_variant.py --pair /tmp/pair1.db rtx3090 rtx4090 \\
        --pair /tmp/pair2.db rtx4090 rtx5090 --pair /tmp/pair3.db rtx3090 rtx5090 \\
        --other rtx3090 rtx4090 /tmp/o5090.db rtx5090 --other rtx4090 rtx5090 /tmp/o3090.db rtx3090 \\
        --other rtx3090 rtx5090 /tmp/o4090.db rtx4090 --store /tmp/profiles.db --model-held-out 0 --out DIR

Arguments: calibrate_check's own and, per pair, ``--other BASE TARGET REFS_DB GPU``: the pair's third GPU,
read from ``REFS_DB`` (``visprof import-timm`` of that GPU's table alone). The covariate is
``calibration_fleet.OTHER_COVARIATE``; a pair without an --other is judged as calibrate_check judges it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from visprof.analysis import sources
from visprof.analysis.calibration_fleet import fleet_from_comparison
from visprof.analysis.gpus import gpu_table
from visprof.base.errors import BadInputError

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibrate_check  # noqa: E402
from _pairs import not_found  # noqa: E402


def published_rates(refs: Path, gpu: str) -> dict[tuple, float]:
    """Per (architecture, image size), the published samples per second of ``gpu`` in ``refs``."""
    table = gpu_table()
    rates = {(m.arch, m.img_size): m.samples_per_s for m in sources.load([refs], table).measurements
             if m.kind == "reference" and (m.gpu_id == gpu or m.gpu_name == gpu) and m.samples_per_s}
    if not rates:
        raise BadInputError(f"--other {refs}: no published row of {gpu}")
    return rates


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--other", nargs=4, action="append", default=[],
                        metavar=("BASE", "TARGET", "REFS_DB", "GPU"))
    ours, rest = parser.parse_known_args(argv)
    if not_found("other_gpu_variant.py", [Path(o[2]) for o in ours.other]):
        return 2
    try:
        others = {(base, target): published_rates(Path(refs), gpu) for base, target, refs, gpu in ours.other}
    except BadInputError as exc:
        print(f"other_gpu_variant.py: {exc}", file=sys.stderr)
        return 2
    for (base, target), rates in others.items():
        print(f"other GPU for {base} -> {target}: {len(rates)} published (model, size) rows", flush=True)

    def with_other(comparison, profiles, table=None, spec_excess=()):
        other = others.get((comparison.base, comparison.target))
        return fleet_from_comparison(comparison, profiles, table, spec_excess=spec_excess, other=other)

    calibrate_check.fleet_from_comparison = with_other  # read by calibrate_check.run_pair
    return calibrate_check.main(rest)


if __name__ == "__main__":
    sys.exit(main())
