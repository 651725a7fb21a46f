"""Does any share of a profile's time rank with what the predictions miss? Per pair, the Spearman of each
category / sub-category share of op time (and of a few kernel families, and of kernel time in launches of few
thread blocks) with the published speed-up and with the held-out residuals of the calibrated and the spec
`fraction` predictions.

    python bench/share_residuals.py /tmp/profiles.db bench/results/calibrate-2026-12-03 --top 14

The shares are of each model's latest profile with an op-type table; the residuals, log(predicted /
published), from a bench/calibrate_check.py --out folder's held-out CSVs. A share the calibration has not
used would rank with its residual. The launch-size shares exist only in profiles made since 2026-12-05; they
are ranked over the models that have them (n is printed).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from visprof.analysis import sources
from visprof.analysis.metrics import spearman

PAIRS = ("rtx3090-rtx4090", "rtx4090-rtx5090")
KERNEL_KINDS = {  # kernel families worth a column of their own, by a part of the name
    "K:layer_norm": "layer_norm",
    "K:elementwise_kernel": "at::native::elementwise_kernel",
    "K:vectorized_elementwise": "vectorized_elementwise",
}
# Kernel time in launches of fewer thread blocks than a bound, one-per-SM launches left out (they are
# sized to whatever GPU runs them). 128 is the RTX 4090's SM count; the RTX 5090 has 170, so the
# 128-255 bin fills the 4090 and may not fill the 5090.
LAUNCH_BOUNDS = {"L:blocks<128": 128, "L:blocks<256": 256}


def shares(store: Path) -> pd.DataFrame:
    latest = {}
    for m in sources.load([str(store)]).profiles:
        if m.result and m.result.op_types:
            latest[m.model] = m.result
    return share_table(latest)


def share_table(results: dict) -> pd.DataFrame:
    """One row per model: its share of op time per category/sub-category, of kernel time per KERNEL_KINDS."""
    rows = []
    for model, result in results.items():
        row = {"model": model}
        op_total = sum(o.time_ms for o in result.op_types) or 1.0
        for o in result.op_types:
            key = f"{o.category}/{o.subcategory or '-'}"
            row[key] = row.get(key, 0.0) + o.time_ms / op_total
        kernel_total = sum(k.time_ms for k in result.kernel_families) or 1.0
        for column, part in KERNEL_KINDS.items():
            row[column] = sum(k.time_ms for k in result.kernel_families if part in k.family) / kernel_total
        for column, bound in LAUNCH_BOUNDS.items():
            share = result.launch_share_below(bound)
            row[column] = np.nan if share is None else share
        rows.append(row)
    table = pd.DataFrame(rows)
    shares_only = [c for c in table.columns if c not in LAUNCH_BOUNDS]
    table[shares_only] = table[shares_only].fillna(0.0)
    return table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("calibrate_out", type=Path, help="a calibrate_check --out folder")
    parser.add_argument("--top", type=int, default=14, help="shares per pair, by |Spearman| with the published")
    args = parser.parse_args(argv)
    csvs = [args.calibrate_out / f"held-out-{pair}.csv.gz" for pair in PAIRS]
    missing = [str(p) for p in [args.store, *csvs] if not p.is_file()]
    if missing:
        print(f"share_residuals.py: not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    table = shares(args.store)
    for pair, csv in zip(PAIRS, csvs):
        d = pd.read_csv(csv).merge(table, on="model")
        calibrated = np.log(d.calibrated / d.speedup)
        fraction = np.log(d.spec_fraction / d.speedup)
        found = []
        for column in table.columns[1:]:
            has = d[column].notna()
            if column not in LAUNCH_BOUNDS and (d[column] > 0).mean() < 0.1:
                continue  # a share most models have 0 of ranks by its ties
            found.append((column, int(has.sum()), *(spearman(list(d[column][has]), list(y[has]))
                                                    for y in (d.speedup, calibrated, fraction))))
        launch = [f for f in found if f[0] in LAUNCH_BOUNDS]
        found = sorted((f for f in found if f[0] not in LAUNCH_BOUNDS), key=lambda t: -abs(t[2]))[:args.top]
        print(f"{pair}: {len(d)} published rows; Spearman of the share with the published speed-up / "
              "the calibrated residual / the fraction residual (n: rows with the share)")
        for column, n, published, cal, frac in found + [f for f in launch if f[1] >= 10]:
            print(f"  {column:28s} {published:+.3f} / {cal:+.3f} / {frac:+.3f}  (n {n})")
        for column, n, *_ in launch:
            if n >= 10:  # families share a residual: within them, and between their means
                within, between, families = split_by_family(d.assign(residual=calibrated), column)
                print(f"  {column:28s} calibrated residual within families {within:+.3f}, "
                      f"between the means of {families} families {between:+.3f}")
    return 0


def split_by_family(d: pd.DataFrame, column: str) -> tuple[float, float, int]:
    """Spearman of ``column`` with ``residual`` after each family's mean is taken off both (within), and of
    the family means (between), over the rows that have the column; and the number of families."""
    d = d[d[column].notna()]
    means = d.groupby("family")[[column, "residual"]].transform("mean")
    family_means = d.groupby("family")[[column, "residual"]].mean()
    within = spearman(list(d[column] - means[column]), list(d.residual - means.residual))
    between = spearman(list(family_means[column]), list(family_means.residual))
    return within, between, len(family_means)


if __name__ == "__main__":
    raise SystemExit(main())
