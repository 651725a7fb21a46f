"""The calibration's two 80% bands on models whose family the fit has seen (issue 25, item 4;
prereg: bench/results/band-relatives-2026-12-05/prereg.md).

    python bench/band_relatives_check.py --pair PAIR1.db rtx3090 rtx4090 --pair PAIR2.db rtx4090 rtx5090 \\
        --store profiles.db [--seed 0] [--folds 5]

Per pair: the published models dealt to ``--folds`` folds at random (``--seed``, as
``calibrate_check.py --model-held-out`` deals them), each fold predicted by the fit on the
others, and every held-out model given both bands of that fit: the band of a family the fit has
seen (``Fit.predict`` with the families) and the band of one it has not (without them, the band
every model had before the second existed). Printed: coverage and median half-width of each band
over the held-out models with a model of their family in the fit, and over those without. The
point predictions are the same either way; only the bands differ.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from visprof.analysis.calibrate import fit_calibration, random_folds

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pairs import pair_fleet  # noqa: E402


def both_bands(fleet, folds: int, seed: int) -> dict[str, np.ndarray]:
    """Per published model: published speed-up, whether its family was in its fold's fit, and
    both bands (low, high) of that fit."""
    idx = np.flatnonzero(np.isfinite(fleet.log_obs))
    fold = random_folds(len(idx), folds, seed)
    out = {k: np.full(len(idx), np.nan) for k in ("low_seen", "high_seen", "low_plain", "high_plain")}
    out["seen"] = np.zeros(len(idx), dtype=bool)
    for j in range(folds):
        tr, te = idx[fold != j], idx[fold == j]
        fit = fit_calibration(fleet, tr)
        families = [fleet.families[i] for i in te]
        _, lo, hi = fit.predict(fleet.X[te], fleet.log_spec[te], families)
        _, lo_plain, hi_plain = fit.predict(fleet.X[te], fleet.log_spec[te])
        out["low_seen"][fold == j], out["high_seen"][fold == j] = lo, hi
        out["low_plain"][fold == j], out["high_plain"][fold == j] = lo_plain, hi_plain
        out["seen"][fold == j] = [fit.seen(f) for f in families]
    out["published"] = np.exp(fleet.log_obs[idx])
    return out


def summary(bands: dict[str, np.ndarray]) -> list[str]:
    lines = []
    for label, among in (("family in the fit", bands["seen"]), ("family not in the fit", ~bands["seen"])):
        if not among.any():
            lines.append(f"  {label}: no model")
            continue
        parts = []
        for name in ("seen", "plain"):
            lo, hi, pub = bands[f"low_{name}"][among], bands[f"high_{name}"][among], bands["published"][among]
            inside = float(np.mean((pub >= lo) & (pub <= hi)))
            half = float(np.exp(np.median(np.log(hi / lo)) / 2) - 1)
            parts.append(f"{'with the second band' if name == 'seen' else 'families-held-out band only'} "
                         f"{inside:.1%} inside, half-width {half:.1%}")
        lines.append(f"  {label} ({int(among.sum())} models): " + "; ".join(parts))
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", nargs=3, action="append", required=True, metavar=("REFS", "BASE", "TARGET"))
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args(argv)
    for refs, base, target in args.pair:
        fleet = pair_fleet(Path(refs), base, target, args.store)
        print(f"== {base} -> {target}: models dealt to {args.folds} folds at random (seed {args.seed}) ==")
        print("\n".join(summary(both_bands(fleet, args.folds, args.seed))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
