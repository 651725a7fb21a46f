"""The trial of bench/results/band-leverage-2026-12-05/prereg.md: the calibration band's variance factor
1 + c h, with c estimated from the cross-validation residuals the band's quantiles come from, where today's
band takes c = 1.

    python bench/band_leverage_variant.py quartiles --pair /tmp/pair1.db rtx3090 rtx4090 \\
        --pair /tmp/pair2.db rtx4090 rtx5090 --store /tmp/profiles.db            # today's band
    python bench/band_leverage_variant.py --variant quartiles ...                   # the trial's
    python bench/band_leverage_variant.py --variant calibrate_check ARGS...         # its arguments
    python bench/band_leverage_variant.py --variant forward_check ARGS...

`quartiles`: per pair, families held out (the folds of bench/calibrate_check.py), the 80% band's coverage
over all held-out models, by quartile of their leverage h under their fold's fit, by quartile of their
family's size, and averaged over families; the median band width; the c each fold's fit chose. The
predictions are the same either way. `calibrate_check` and `forward_check` run those scripts with the
trial's band. It wraps `visprof.analysis.calibrate` for the run instead of changing it, until the
prereg's rule says whether it is adopted.
"""
from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np

import visprof.analysis.calibrate as calibrate
import visprof.analysis.held_out as held_out
from visprof.analysis import sources
from visprof.analysis.compare import compare
from visprof.analysis.gpus import gpu_table
from visprof.base.errors import BadInputError

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The coefficients tried, fixed in the prereg; 1 is today's band.
LEVERAGE_C_GRID = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)


def leverage_coefficient(res: np.ndarray, h: np.ndarray, w: np.ndarray) -> float:
    """The c of LEVERAGE_C_GRID under which the residuals ``res`` are most likely as Laplace with scale
    b sqrt(1 + c h) (b at its weighted maximum-likelihood value for each c), weights ``w``."""
    best, best_ll = 1.0, -math.inf
    for c in LEVERAGE_C_GRID:
        s = np.sqrt(1.0 + c * h)
        b = float(np.sum(w * np.abs(res) / s) / np.sum(w))
        if b <= 0:
            continue
        # log-likelihood up to a constant: the sum of w |r| / (b s) is sum(w) at this b
        ll = -float(np.sum(w * np.log(b * s)))
        if ll > best_ll:
            best, best_ll = c, ll
    return best


def _band(res, scale, w, ok) -> tuple[float, float, float]:
    """c and the band's quantiles from cross-validation residuals (``scale``: their sqrt(1 + h))."""
    h = scale[ok] ** 2 - 1.0
    c = leverage_coefficient(res[ok], h, w[ok])
    low, high = calibrate.band_quantiles(res[ok] / np.sqrt(1.0 + c * h), w[ok])
    return c, low, high


def with_estimated_band(fit_calibration):
    """``fit_calibration`` whose two bands take the c their own cross-validation residuals estimate."""

    def wrapped(fleet, idx=None, lam=None, inner_folds=5):
        fit = fit_calibration(fleet, idx, lam, inner_folds)
        idx = np.flatnonzero(np.isfinite(fleet.log_obs)) if idx is None else np.asarray(idx)
        k = min(inner_folds, len({fleet.families[i] for i in idx}))
        w = fleet.weights(idx)
        res, scale, _ = calibrate.cv_residuals(fleet, idx, fit.lam, k)  # as fit_calibration's, at its lambda
        fit.c, fit.q_low, fit.q_high = _band(res, scale, w, np.isfinite(res))
        res, scale, seen = calibrate.cv_residuals(fleet, idx, fit.lam, k,
                                                  folds=calibrate.random_folds(len(idx), k, seed=0))
        ok = np.isfinite(res) & seen
        if ok.any():
            fit.c_seen, fit.q_low_seen, fit.q_high_seen = _band(res, scale, w, ok)
        return fit

    return wrapped


def predict(self, X, log_spec, families=None):
    """``Fit.predict`` with each band's own c (1, today's band, for a fit that has none)."""
    mid = log_spec + self.correction(X)
    h = self.leverage(X)
    seen = np.array([self.seen(f) for f in (() if families is None else families)], dtype=bool)
    seen = seen if seen.shape == mid.shape else np.zeros(len(mid), dtype=bool)
    c = np.where(seen, getattr(self, "c_seen", 1.0), getattr(self, "c", 1.0))
    scale = np.sqrt(1.0 + c * h)
    q_low = np.where(seen, self.q_low_seen or 0.0, self.q_low)  # seen only where the fit has that band
    q_high = np.where(seen, self.q_high_seen or 0.0, self.q_high)
    return np.exp(mid), np.exp(mid + q_low * scale), np.exp(mid + q_high * scale)


def install() -> None:
    wrapped = with_estimated_band(calibrate.fit_calibration)
    calibrate.fit_calibration = wrapped
    held_out.fit_calibration = wrapped  # imported by name there
    calibrate.Fit.predict = predict


def quartile_coverage(values: np.ndarray, inside: np.ndarray) -> tuple[np.ndarray, list[float]]:
    edges = np.quantile(values, [0.25, 0.5, 0.75])
    bins = np.digitize(values, edges)
    return edges, [float(inside[bins == b].mean()) for b in range(4)]


def quartiles(refs: Path, base: str, target: str, store: Path, folds: int = 5) -> str:
    table = gpu_table()
    loaded = sources.load([refs, store], table)
    fleet, _ = calibrate.fleet_from_comparison(compare(loaded.measurements, base, target, table), loaded.profiles, table)
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
        chosen.append((getattr(fit, "c", 1.0), getattr(fit, "c_seen", 1.0)))
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", action="store_true", help="the trial's band (default: today's)")
    parser.add_argument("command", choices=("quartiles", "calibrate_check", "forward_check"))
    args, rest = parser.parse_known_args(argv)
    if args.variant:
        install()
    if args.command != "quartiles":
        return __import__(args.command).main(rest)
    q = argparse.ArgumentParser(prog="band_leverage_variant.py quartiles")
    q.add_argument("--pair", nargs=3, action="append", required=True, metavar=("REFS_DB", "BASE", "TARGET"))
    q.add_argument("--store", type=Path, required=True)
    qa = q.parse_args(rest)
    missing = [str(p) for p in [qa.store, *(Path(p[0]) for p in qa.pair)] if not p.is_file()]
    if missing:
        print(f"band_leverage_variant.py: not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        for refs, base, target in qa.pair:
            print(quartiles(Path(refs), base, target, qa.store), flush=True)
    except BadInputError as exc:
        print(f"band_leverage_variant.py: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
