"""A fitted calibration told per bucket: how many times what the spec ratios say the pair runs
each bucket's work at (``visprof calibrate``'s table: "group norm x0.4 ... flash attention x1.1").
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from visprof.analysis.calibrate import COVARIATE_SCALE, MIN_SHARE, Fit, Fleet
from visprof.analysis.calibration_buckets import parent_buckets

__all__ = ["BucketRatio", "bucket_rates", "format_ratio_table", "ratio_table"]


@dataclass
class BucketRatio:
    feature: str
    ratio: float  # x of what the spec ratios say, this bucket alone (with the pair's offset)
    own: float  # exp(delta_f): this level's own factor, over its parent's
    weight: float  # training weight: sum over models of w * share
    models: int  # models spending >= MIN_SHARE of their time in it

    def row(self) -> dict:
        return {"feature": self.feature, "ratio": self.ratio, "own": self.own, "weight": self.weight, "models": self.models}


def bucket_rates(fit: Fit) -> dict[str, float]:
    """Per bucket: how many times what the spec ratios say the pair runs it at (its own factor
    times its parents' and the pair's offset)."""
    d = dict(zip(fit.features, fit.delta))
    return {f: math.exp(fit.intercept + d[f] + sum(d.get(p, 0.0) for p in parent_buckets(f)))
            for f in fit.features if not f.startswith("cov:")}


def ratio_table(fit: Fit, fleet: Fleet) -> list[BucketRatio]:
    """Per bucket: its rate (``bucket_rates``), own factor, training weight and models, sorted by
    how far it is from the offset."""
    rates = bucket_rates(fit)
    # the models it was fitted on: the fleet's others (predicted only) had counted too, 1,454 for a fit of 28
    counts = (fleet.X[np.isfinite(fleet.log_obs)] >= MIN_SHARE).sum(axis=0)
    out = [BucketRatio(f, rates[f], math.exp(fit.delta[j]), float(fit.weight[j]), int(counts[j]))
           for j, f in enumerate(fit.features) if f in rates]
    out.sort(key=lambda b: -abs(math.log(b.ratio) - fit.intercept))
    return out


def format_ratio_table(rows: list[BucketRatio], fit: Fit, top: int = 20) -> str:
    lines = [f"pair offset x{math.exp(fit.intercept):.3f} of the spec-ratio prediction (lambda {fit.lam:g}); "
             f"per bucket (x of what the spec ratios say, offset and parent buckets included):",
             f"  {'bucket':<58} {'ratio':>7} {'own':>7} {'weight':>7} {'models':>6}"]
    for b in rows[:top]:
        lines.append(f"  {b.feature[:58]:<58} x{b.ratio:>6.3f} x{b.own:>6.3f} {b.weight:>7.1f} {b.models:>6}")
    if len(rows) > top:
        lines.append(f"  ... {len(rows) - top} more buckets, closer to the offset")
    lines.append(f"  (own: the bucket's factor over its parent's; weight: the models' time in it, family-weighted; "
                 f"models: the fitted ones spending >= {MIN_SHARE:.0%} of their time in it)")
    covs = [(f, d) for f, d in zip(fit.features, fit.delta) if f.startswith("cov:")]
    if covs:
        lines.append("  covariates (x per standard deviation over the fleet): "
                     + ", ".join(f"{f[4:]} x{math.exp(d * COVARIATE_SCALE):.3f}" for f, d in covs))
    return "\n".join(lines) + "\n"
