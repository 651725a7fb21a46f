"""The calibration judged without the rows that software alone moved (issue 25: why the 3090 -> 5090
pair calibrates worse than its spec-only prediction).

    python bench/software_rows_check.py --pair /tmp/pair3.db rtx3090 rtx5090 --store /tmp/profiles.db \\
        --software ../shared/data/timm-benchmarks/benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv \\
                   ../shared/data/timm-benchmarks/benchmark-infer-amp-nchw-pt291-cu128-4090.csv \\
        [--max-change 0.05] [--out FILE]

A pair whose two tables were made under different software (the 3090's under PyTorch 2.4, the
5090's under 2.9.1) carries the software's speed-up in its labels; an H200 profile, made under one
version, cannot see it. timm publishes one GPU under both versions (``--software OLD NEW``): their
ratio per model (the median over its image sizes) is the software's speed-up alone. The pair is
judged with families held out twice, by ``visprof.analysis.held_out.family_held_out``: on every row;
and with the rows whose software speed-up lies beyond ``--max-change`` (either way; and rows of a
model the software tables lack) taken out of the fit and the test. The first run is also judged on
the kept rows alone, so that the two differ only in what the fit saw. A diagnosis, not a method:
``--max-change`` is a round number outside the software ratio's quartiles (x1.001-x1.029).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from visprof.analysis import sources
from visprof.analysis.calibration_fleet import fleet_from_comparison
from visprof.analysis.compare import compare
from visprof.analysis.gpus import gpu_table
from visprof.analysis.held_out import HeldOut, MethodFigures, family_held_out
from visprof.base.errors import BadInputError
from visprof.base.outputs import atomic_write_text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from software_pair import throughput  # noqa: E402


def software_ratio(old: pd.Series, new: pd.Series) -> pd.Series:
    """log(new / old) throughput per model, the median over the (model, size) rows both tables have."""
    both = pd.concat({"old": old, "new": new}, axis=1).dropna()
    return np.log(both["new"] / both["old"]).groupby(level=0).median()


def kept_rows(models: list[str], ratio: pd.Series, max_change: float) -> np.ndarray:
    """Per fleet model (a published name may carry a ``.tag``), whether software moved it by at most
    ``max_change`` either way; a model the software tables lack is not kept."""
    bound = np.log1p(max_change)
    values = np.array([ratio.get(name.split(".")[0], np.nan) for name in models])
    return np.isfinite(values) & (np.abs(values) <= bound)


def on_rows(held: HeldOut, keep: set[str]) -> str:
    """A held-out run's calibrated, spec-only (``fraction``) and fleet-median figures on some of its models."""
    rows = [p for p in held.predictions if p["model"] in keep]
    if not rows:
        return "  (none of its models kept)\n"
    published = np.array([p["speedup"] for p in rows])
    out = []
    for name, key, ranks in (("calibrated", "calibrated", True), ("spec only (fraction)", "spec_fraction", True),
                             ("fleet median", "fleet_median", False)):
        if key not in rows[0]:
            continue
        m = MethodFigures.of(np.array([p[key] for p in rows]), published, ranks=ranks)
        rho = "-" if m.spearman is None else f"{m.spearman:.3f}"
        out.append(f"  {name:<26} {rho:>9} {m.median_abs_error:>12.1%}")
    return f"  on the {len(rows)} kept rows only:\n" + "\n".join(out) + "\n"


def check(refs: Path, base: str, target: str, store: Path, ratio: pd.Series, max_change: float) -> str:
    table = gpu_table()
    loaded = sources.load([refs, store], table)
    comparison = compare(loaded.measurements, base, target, table)
    fleet, _ = fleet_from_comparison(comparison, loaded.profiles, table, spec_excess=["fraction"])
    keep = kept_rows(fleet.models, ratio, max_change)
    published = np.isfinite(fleet.log_obs)
    every = family_held_out(fleet)
    text = (f"== {comparison.base} -> {comparison.target}: {int(published.sum())} published rows; "
            f"{int((keep & published).sum())} moved by software by at most {max_change:.0%} ==\n"
            f"-- every row in the fit and the test --\n" + every.lines()
            + on_rows(every, {m for m, k in zip(fleet.models, keep) if k}))
    fleet.log_obs = np.where(keep, fleet.log_obs, np.nan)
    text += "-- only the kept rows in the fit and the test --\n" + family_held_out(fleet).lines()
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pair", nargs=3, required=True, metavar=("REFS_DB", "BASE", "TARGET"))
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--software", nargs=2, type=Path, required=True, metavar=("OLD_CSV", "NEW_CSV"),
                        help="one GPU's published table under two software versions")
    parser.add_argument("--max-change", type=float, default=0.05)
    parser.add_argument("--out", type=Path, help="also write the text here (atomically)")
    args = parser.parse_args(argv)
    if not 0 < args.max_change < 1:
        parser.error(f"--max-change must be between 0 and 1, got {args.max_change}")
    if args.out and args.out.resolve() in {Path(args.pair[0]).resolve(), args.store.resolve(),
                                           *(p.resolve() for p in args.software)}:
        parser.error(f"--out {args.out} is one of the inputs")
    try:
        ratio = software_ratio(*(throughput(p) for p in args.software))
        text = check(Path(args.pair[0]), args.pair[1], args.pair[2], args.store, ratio, args.max_change)
    except (BadInputError, OSError) as exc:
        print(f"software_rows_check.py: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    if args.out:
        atomic_write_text(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
