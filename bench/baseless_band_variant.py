"""A band for calibrated predictions made without the model's published base number, judged by its prereg.

    python bench/baseless_band_variant.py --pair /tmp/pair1.db rtx3090 rtx4090 \\
        --pair /tmp/pair2.db rtx4090 rtx5090 --store /tmp/profiles.db

The rule: bench/results/baseless-band-2026-12-05/prereg.md, committed before this ran. Held out by
whole families (the folds of `family_held_out`) and then by models at random (seed 0), every held-out
model is predicted as `visprof predict --calibration` predicts a profile alone: its base covariate
at its training fold's median. Each prediction's 80% band is judged two ways: today's (estimated with
every model's own base number) and the variant's (the same inner cross-validations, their held-out
models predicted with the covariate filled the same way). The trial ran at `8e5ec86` with its own copy of
those bands; adopted, they are `Fit.filled_bands`, which this reads, with the same figures.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from visprof.analysis.calibrate import family_folds, fit_calibration, random_folds
from visprof.analysis.calibration_fleet import BASE_COVARIATE
from visprof.analysis.held_out import MethodFigures

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pairs import pair_fleet, per_pair_main  # noqa: E402

def judge(fleet, idx: np.ndarray, fold: np.ndarray, column: int) -> dict:
    """Per held-out model: its base-less prediction, today's band and the variant's, its leverage."""
    out = {k: np.full(len(idx), np.nan) for k in ("mid", "low", "high", "vlow", "vhigh", "h")}
    seen_all = np.zeros(len(idx), dtype=bool)
    for j in np.unique(fold):
        tr, te = idx[fold != j], idx[fold == j]
        fit = fit_calibration(fleet, tr)
        x = fleet.X[te].copy()
        x[:, column] = np.median(fleet.X[tr, column])
        families = [fleet.families[i] for i in te]
        mid, low, high = fit.predict(x, fleet.log_spec[te], families)
        # adopted by the rule: fit_calibration estimates the filled bands as the trial did
        _, vlow, vhigh = fit.predict(x, fleet.log_spec[te], families, filled=[True] * len(te))
        h = fit.leverage(x)
        seen = np.array([fit.seen(f) for f in families], dtype=bool)
        bands = fit.filled_bands
        sel = fold == j
        for key, value in (("mid", mid), ("low", low), ("high", high), ("vlow", vlow), ("vhigh", vhigh), ("h", h)):
            out[key][sel] = value
        seen_all[sel] = seen
        print(f"    fold {j}: lambda {fit.lam}, variant bands (c, q10, q90) unseen "
              f"{tuple(round(v, 4) for v in bands[False])}, seen {tuple(round(v, 4) for v in bands[True])}",
              flush=True)
    out["seen"] = seen_all
    return out


def coverage_lines(fleet, idx: np.ndarray, got: dict) -> list[str]:
    obs = np.exp(fleet.log_obs[idx])
    today = (obs >= got["low"]) & (obs <= got["high"])
    variant = (obs >= got["vlow"]) & (obs <= got["vhigh"])
    figures = MethodFigures.of(got["mid"], obs)
    lines = [f"  base-less predictions: Spearman {figures.spearman:.4f}, median error {figures.median_abs_error:.3%}; "
             f"{len(idx)} models",
             f"  80% band, today's: {today.mean():.1%} inside; the variant's: {variant.mean():.1%} inside; "
             f"median width today x{np.median(got['high'] / got['low']):.4f}, "
             f"variant x{np.median(got['vhigh'] / got['vlow']):.4f}"]
    quartile = np.searchsorted(np.quantile(got["h"], [0.25, 0.5, 0.75]), got["h"], side="right")
    lines.append("  by quarter of leverage (lowest first), today / variant: " + ", ".join(
        f"{today[quartile == q].mean():.1%} / {variant[quartile == q].mean():.1%}" for q in range(4)))
    for name, among in (("family in the fit", got["seen"]), ("family not in the fit", ~got["seen"])):
        if among.any():
            lines.append(f"  {name} ({int(among.sum())}): today {today[among].mean():.1%}, "
                         f"variant {variant[among].mean():.1%}")
    return lines


def run(refs: Path, base: str, target: str, store: Path) -> str:
    fleet = pair_fleet(refs, base, target, store)
    column = fleet.features.index(f"cov:{BASE_COVARIATE}")
    idx = np.flatnonzero(np.isfinite(fleet.log_obs))
    fams = [fleet.families[i] for i in idx]
    lines = [f"{base} -> {target}: {len(idx)} published models, {len(set(fams))} families"]
    print(lines[0], flush=True)
    print("  families held out (5 folds)", flush=True)
    lines += ["families held out (5 folds of whole families, as family_held_out):"]
    lines += coverage_lines(fleet, idx, judge(fleet, idx, np.array(family_folds(fams, min(5, len(set(fams))))), column))
    print("  models held out at random (seed 0)", flush=True)
    lines += ["models held out at random (5 folds, seed 0, as model_held_out):"]
    lines += coverage_lines(fleet, idx, judge(fleet, idx, random_folds(len(idx), 5, seed=0), column))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    return per_pair_main(argv, __doc__, "baseless_band_variant.py", run)


if __name__ == "__main__":
    sys.exit(main())
