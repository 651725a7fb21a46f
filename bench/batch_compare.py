"""Two bench/calibrate_check.py runs compared over the models a store profiled again (at another batch, or
with newer code).

    python bench/batch_compare.py /tmp/profiles.db --runs-after 28 --batch 256 \
        /tmp/cal-before /tmp/cal-after > bench/results/h200-b256-2026-12-03/same-models.txt
    python bench/batch_compare.py /tmp/profiles.db --runs-after 32 --batch 256 --by-family \
        /tmp/cal-before /tmp/cal-after > bench/results/h200-flopfix-2026-12-03/same-models.txt

The models are those with a result of ``--batch`` in a run after ``--runs-after`` (the new sweep);
the rows, their published (model, size) rows in each run's held-out CSVs. Per pair and run: the
median absolute error / Spearman (median signed error) of the calibrated and both spec-only
predictions and of the fleet median, and the 80% band's coverage. ``--by-family`` adds, per timm
family of those models, the median of predicted / published speed-up of each prediction.
"""
from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pandas as pd

PAIRS = ("rtx3090-rtx4090", "rtx4090-rtx5090")
COLUMNS = ("calibrated", "spec_speedup", "spec_fraction", "fleet_median")


def rank_corr(x, y) -> float:
    return float(np.corrcoef(pd.Series(x).rank(), pd.Series(y).rank())[0, 1])


def line(d: pd.DataFrame) -> str:
    cells = []
    for col in COLUMNS:
        ratio = d[col] / d.speedup - 1
        rho = "" if col == "fleet_median" else f" / {rank_corr(d[col], d.speedup):.3f}"
        cells.append(f"{col} {np.median(np.abs(ratio)):.1%}{rho} ({np.median(ratio):+.1%})")
    inside = ((d.speedup >= d.low) & (d.speedup <= d.high)).mean()
    return f"{len(d)} rows: " + "; ".join(cells) + f"; band {inside:.1%}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("before", type=Path, help="calibrate_check --out folder of the store without the new profiles")
    parser.add_argument("after", type=Path, help="the same, with them")
    parser.add_argument("--runs-after", type=int, required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--by-family", action="store_true", help="also each family's median predicted / published")
    args = parser.parse_args(argv)
    needed = [args.store] + [folder / f"held-out-{pair}.csv.gz" for folder in (args.before, args.after) for pair in PAIRS]
    missing = [str(p) for p in needed if not p.is_file()]
    if missing:
        print(f"batch_compare.py: not found: {', '.join(missing)} (a store, and two calibrate_check --out folders)",
              file=sys.stderr)
        return 2
    with sqlite3.connect(args.store) as db:
        models = {r[0] for r in db.execute("SELECT DISTINCT model FROM results WHERE run_id > ? AND batch_size_requested = ?",
                                           (args.runs_after, args.batch))}
    print(f"{len(models)} models profiled at batch {args.batch} in runs after {args.runs_after}; "
          "error / Spearman (median signed error)")
    for pair in PAIRS:
        for label, folder in (("before", args.before), ("after", args.after)):
            d = pd.read_csv(folder / f"held-out-{pair}.csv.gz")
            print(f"{pair} {label:6s} {line(d[d.model.isin(models)])}")
        if args.by_family:
            print(family_lines(*(pd.read_csv(f / f"held-out-{pair}.csv.gz") for f in (args.before, args.after)), models))
    return 0


def family_lines(before: pd.DataFrame, after: pd.DataFrame, models: set[str]) -> str:
    """Per family, median predicted / published before -> after, over the same published rows."""
    rows = before.merge(after, on=["model", "speedup"], suffixes=("_before", "_after"))
    rows = rows[rows.model.isin(models)]
    lines = []
    for family, d in rows.groupby("family_after"):
        cells = [f"{col} {np.median(d[col + '_before'] / d.speedup):.3f} -> {np.median(d[col + '_after'] / d.speedup):.3f}"
                 for col in COLUMNS[:3]]
        lines.append(f"  {family:24s} {len(d):2d} rows: " + "; ".join(cells))
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
