"""How the calibration's 80% band covers held-out models, by their leverage and by their family's size
(issue 25, item 4; bench/results/band-leverage-2026-12-05).

    python bench/band_quartiles.py --pair /tmp/pair1.db rtx3090 rtx4090 \\
        --pair /tmp/pair2.db rtx4090 rtx5090 --store /tmp/profiles.db

Per pair, families held out (the folds of bench/calibrate_check.py): the band's coverage over all
held-out models, by quartile of their leverage h under their fold's fit, by quartile of their family's
size, and averaged over families; the median band width (log of high over low); the leverage
coefficient c of each fold's two bands (``visprof.analysis.calibration_band``). A band that widens with
h as the errors do covers each quartile of h alike. The figures of the band before c was estimated
(c = 1) came from this script's first version, `bench/band_leverage_variant.py quartiles` at `452e18f`.
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np

import visprof.analysis.calibrate as calibrate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pairs import pair_fleet, per_pair_main  # noqa: E402


def quartile_coverage(values: np.ndarray, inside: np.ndarray) -> tuple[np.ndarray, list[float]]:
    """The quartile edges of ``values`` and the share of ``inside`` in each quartile."""
    edges = np.quantile(values, [0.25, 0.5, 0.75])
    bins = np.digitize(values, edges)
    return edges, [float(inside[bins == b].mean()) for b in range(4)]


def quartiles(refs: Path, base: str, target: str, store: Path, folds: int = 5) -> str:
    fleet = pair_fleet(refs, base, target, store)
    idx = np.flatnonzero(np.isfinite(fleet.log_obs))
    fams = [fleet.families[i] for i in idx]
    fold = np.array(calibrate.family_folds(fams, min(folds, len(set(fams)))))
    h, inside, width = (np.zeros(len(idx)) for _ in range(3))
    chosen = []
    for j in sorted(set(fold)):
        fit = calibrate.fit_calibration(fleet, idx[fold != j])
        te = idx[fold == j]
        _, lo, hi = fit.predict(fleet.X[te], fleet.log_spec[te], [fleet.families[i] for i in te])
        obs = np.exp(fleet.log_obs[te])
        h[fold == j] = fit.leverage(fleet.X[te])
        inside[fold == j] = (obs >= lo) & (obs <= hi)
        width[fold == j] = np.log(hi / lo)
        chosen.append((fit.c, fit.c_seen))
    inside = inside.astype(bool)
    size = Counter(fams)
    h_edges, by_h = quartile_coverage(h, inside)
    s_edges, by_size = quartile_coverage(np.array([size[f] for f in fams], dtype=float), inside)
    per_family = np.mean([inside[[f == fam for f in fams]].mean() for fam in size])
    fmt = ", ".join
    return (f"== {base} -> {target}: {len(idx)} models, families held out ({len(set(fold))} folds) ==\n"
            f"  80% band: {inside.mean():.1%} inside, {per_family:.1%} averaged over families; "
            f"median width (log high/low) {np.median(width):.4f}\n"
            f"  by quartile of h (edges {fmt(f'{e:.3f}' for e in h_edges)}): {fmt(f'{c:.1%}' for c in by_h)}; "
            f"gap {max(by_h) - min(by_h):.1%}\n"
            f"  by quartile of family size (edges {fmt(f'{e:g}' for e in s_edges)}): {fmt(f'{c:.1%}' for c in by_size)}\n"
            f"  c per fold (families held out / with relatives): {fmt(f'{a:g}/{b:g}' for a, b in chosen)}\n")


def main(argv=None) -> int:
    return per_pair_main(argv, __doc__, "band_quartiles.py", quartiles)


if __name__ == "__main__":
    sys.exit(main())
