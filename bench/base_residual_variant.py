"""The test of bench/results/base-residual-2026-12-05/prereg.md, judged by bench/calibrate_check.py: how
far the base GPU's published time per sample is from the one the profile predicts there, as a fourth
calibration covariate.

    python bench/base_residual_variant.py --pair /tmp/pair1.db rtx3090 rtx4090 \\
        --pair /tmp/pair2.db rtx4090 rtx5090 --pair /tmp/pair3.db rtx3090 rtx5090 \\
        --store /tmp/profiles.db --model-held-out 0 --out bench/results/base-residual-2026-12-05/after

Arguments: calibrate_check's own. The covariate is log(published base time per sample / the time per
sample `predict.predict_result` gives the profile on the base GPU at the published row's batch and
precision, ``excess="clock"``), the prediction the ``spec`` covariate's speed-up is made from. A fleet
row without a published base number gets the median over the rows that have one. After calibrate_check's
own output, ``without-own-base.txt`` gives the prereg's second figure: the same family-held-out fits with
each held-out model's covariate at its training rows' median, as for a model on neither table. It wraps
`visprof.analysis.calibrate.fleet_from_comparison` for the run instead of changing it, until the prereg's
rule says whether the covariate is adopted.
"""
from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import numpy as np

import visprof.analysis.calibrate as calibrate
from visprof.analysis.held_out import MethodFigures
from visprof.analysis.predict import predict_result
from visprof.base.errors import BadInputError
from visprof.base.outputs import atomic_write_text

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibrate_check  # noqa: E402

COVARIATE = "base_residual"
_default_fleet = calibrate.fleet_from_comparison


def base_residual(mc, base_spec, table) -> float | None:
    """log(published / predicted) time per sample of ``mc``'s model on the base GPU (None: no prediction)."""
    result = mc.profile.result if mc.profile is not None else None
    rate = mc.base.samples_per_s
    if result is None or base_spec is None or not rate or rate <= 0:
        return None
    precision = mc.base.precision if mc.base.precision in ("fp16", "bf16") else None
    try:
        on_base = predict_result(result, base_spec, batch_size=mc.base.batch_size, table=table, excess="clock",
                                 precision=precision)
    except BadInputError:
        return None
    if not on_base.samples_per_s or on_base.samples_per_s <= 0:
        return None
    return math.log(on_base.samples_per_s / rate)


def accepted(mc) -> bool:
    """Whether ``fleet_from_comparison`` makes a fleet row of ``mc`` (its ``add``'s test)."""
    result = mc.profile.result if mc.profile is not None else None
    return bool(mc.predicted_speedup) and result is not None and bool(calibrate.buckets_of(result)) \
        and calibrate.profile_covariates(result) is not None


def with_base_residual(fleet: calibrate.Fleet, values: list[float | None]) -> calibrate.Fleet:
    """``fleet`` with one more covariate column, rows without a value at the median of those with one."""
    have = [v for v in values if v is not None]
    if not have:
        raise BadInputError("no fleet row has a base residual")
    fill = float(np.median(have))
    column = np.array([fill if v is None else v for v in values])
    scale = calibrate.covariate_scale(column)
    return dataclasses.replace(fleet, X=np.hstack([fleet.X, calibrate.covariate_column(column, scale)[:, None]]),
                               features=[*fleet.features, f"cov:{COVARIATE}"],
                               covariate_scales={**fleet.covariate_scales, COVARIATE: scale})


FLEETS: list[tuple[str, calibrate.Fleet]] = []  # each pair's fleet, for the second figure


def fleet_with_base_residual(comparison, profiles, table=None, spec_excess=()):
    fleet, missing = _default_fleet(comparison, profiles, table, spec_excess=spec_excess)
    rows = [mc for mc in comparison.models if accepted(mc)]
    published = int(np.isfinite(fleet.log_obs).sum())
    if len(rows) != published or any(fleet.models[i] != mc.model for i, mc in enumerate(rows)):
        raise BadInputError("base residual: the fleet's published rows are not the comparison's accepted models")
    values = [base_residual(mc, comparison.base_spec, table) for mc in rows]
    values += [None] * (len(fleet.models) - len(rows))  # profiled models without a published pair
    print(f"base residual: {sum(v is not None for v in values)} of {published} published rows; median "
          f"x{math.exp(float(np.median([v for v in values if v is not None]))):.3f} of the predicted time", flush=True)
    fleet = with_base_residual(fleet, values)
    FLEETS.append((f"{comparison.base} -> {comparison.target}", fleet))
    return fleet, missing


def without_own_base(fleet: calibrate.Fleet, folds: int) -> str:
    """Families held out as calibrate_check folds them, each held-out row's covariate at the training median."""
    idx = np.flatnonzero(np.isfinite(fleet.log_obs))
    fams = [fleet.families[i] for i in idx]
    k = min(folds, len(set(fams)))
    fold = np.array(calibrate.family_folds(fams, k))
    col = fleet.features.index(f"cov:{COVARIATE}")
    with_own, without = np.full(len(idx), np.nan), np.full(len(idx), np.nan)
    for j in range(k):
        tr, te = idx[fold != j], idx[fold == j]
        fit = calibrate.fit_calibration(fleet, tr)
        X = fleet.X[te].copy()
        with_own[fold == j] = fit.predict(X, fleet.log_spec[te])[0]
        X[:, col] = np.median(fleet.X[tr, col])
        without[fold == j] = fit.predict(X, fleet.log_spec[te])[0]
    obs = np.exp(fleet.log_obs[idx])
    a, b = MethodFigures.of(with_own, obs), MethodFigures.of(without, obs)
    return (f"  with each model's own base row: Spearman {a.spearman:.3f}, median |err| {a.median_abs_error:.1%}\n"
            f"  its covariate at the training median: Spearman {b.spearman:.3f}, median |err| {b.median_abs_error:.1%}\n")


def main(argv=None) -> int:
    calibrate_check.fleet_from_comparison = fleet_with_base_residual
    rc = calibrate_check.main(argv)
    if rc:
        return rc
    args = list(argv if argv is not None else sys.argv[1:])
    out = Path(args[args.index("--out") + 1])
    folds = int(args[args.index("--folds") + 1]) if "--folds" in args else 5
    text = "".join(f"== {name}: families held out, the calibration with the base residual ==\n"
                   + without_own_base(fleet, folds) for name, fleet in FLEETS)
    print(text, end="")
    atomic_write_text(out / "without-own-base.txt", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
