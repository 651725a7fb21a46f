"""The calibration judged on models its fit did not see (issue 25).

``family_held_out``: timm families are split into folds (a family is never in the fit and the test
at once), and every model is predicted by the fit on the other folds. ``model_held_out``: the same
with models dealt to folds at random, and ``in_sample``, the fit judged on its own models, to read
the family split against. ``held_out_split``: the fit on every published model outside a given test
set (e.g. models profiled after the method was settled), judged on the test set. Baselines, on the
same split: the training models' median speed-up, the best single profile feature (chosen and fitted
on the training models), and the spec-only predictions: visprof's default spec model and any other
the fleet carries (``spec_variants``, e.g. ``excess="fraction"``), nothing fitted. A ceiling to read
them against: ``within_family``, each model predicted by the mean log speed-up of the rest of its
own family (which a family-held-out fit never sees).
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from visprof.analysis.calibrate import MIN_MODELS, Fit, Fleet, family_folds, fit_calibration, random_folds
from visprof.analysis.calibration_band import COVERAGE
from visprof.analysis.metrics import spearman
from visprof.base.errors import BadInputError
from visprof.base.progress import check_callback, counted

# Below this median error of the fleet median, the published speed-ups are one number up to the tables'
# rounding: nothing to rank, and an error "x fleet median" divides by about nothing (a user's table of
# one speed-up for every model printed x126122.41)
FLAT_FLEET_ERROR = 0.001


@dataclass
class MethodFigures:
    spearman: float | None  # None: the method ranks no models (a constant within each fold)
    median_abs_error: float
    models: int | None = None  # set where the method predicts fewer models than the fleet has

    @classmethod
    def of(cls, predicted: np.ndarray, observed: np.ndarray, ranks: bool = True) -> "MethodFigures":
        ok = np.isfinite(predicted)
        predicted, observed_ok = predicted[ok], observed[ok]
        rho = float(spearman(list(predicted), list(observed_ok))) if ranks else None
        return cls(None if rho is None or math.isnan(rho) else rho, float(np.median(np.abs(predicted / observed_ok - 1))),
                   None if ok.all() else int(ok.sum()))


@dataclass
class HeldOut:
    models: int
    families: int
    folds: int
    calibrated: MethodFigures
    fleet_median: MethodFigures
    best_feature: MethodFigures
    spec_only: MethodFigures
    coverage: float  # published speed-up inside the band, over the held-out models
    below: float  # published under the band
    above: float
    lambdas: list[float]
    best_features: list[str]  # the single feature each fold chose
    spec_variants: dict[str, MethodFigures] = field(default_factory=dict)  # other spec-only models
    within_family: MethodFigures | None = None  # the ceiling: the rest of the model's own family
    predictions: list[dict] = field(default_factory=list)
    split: str = "family"  # "family": every family fold held out in turn; "model": random folds; "fixed": one test set
    # The band's coverage of each held-out family, averaged over families: what a new kind of model
    # sees, where ``coverage`` is dominated by the large families.
    family_coverage: float | None = None
    # The same split by whether the fit had a model of the held-out model's family (which band it
    # got): (coverage, models) each; None where no held-out model is of that kind.
    coverage_seen: tuple[float, int] | None = None
    coverage_unseen: tuple[float, int] | None = None

    def __repr__(self) -> str:
        # The table `visprof calibrate` prints, not every held-out prediction (one dict per model).
        return f"<HeldOut {self.lines()}>"

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return asdict(self)

    def lines(self) -> str:
        rows = [("calibrated", self.calibrated), ("fleet median", self.fleet_median),
                ("best single feature", self.best_feature), ("spec only", self.spec_only)]
        rows += [(f"spec only ({name})", m) for name, m in self.spec_variants.items()]
        if self.within_family is not None:
            rows.append(("own family (ceiling)", self.within_family))
        if self.split == "family":
            head = (f"family-held-out ({self.folds} folds, {self.families} families, {self.models} models; a family is "
                    f"never in the fit and the test at once):")
        elif self.split == "model":
            head = (f"model-held-out ({self.folds} folds, {self.families} families, {self.models} models dealt at random; "
                    f"a held-out model's relatives are mostly in the fit):")
        else:
            head = f"held out ({self.models} test models of {self.families} families; the fit saw none of them):"
        out = [head,
               f"  {'method':<26} {'Spearman':>9} {'median |err|':>13} {'x fleet median':>15}"]
        base = self.fleet_median.median_abs_error
        flat = base < FLAT_FLEET_ERROR
        out += [f"  {name:<26} {'-' if m.spearman is None else format(m.spearman, '.3f'):>9} {m.median_abs_error:>12.1%}"
                f" {'-' if flat else format(m.median_abs_error / base, '.2f'):>15}"
                + (f"  ({m.models} models)" if m.models else "") for name, m in rows]
        if flat:
            out.append(f"  the published speed-ups are one number up to rounding (the fleet median's error is "
                       f"{base:.2%}): nothing to rank, and no error to compare with the fleet median's")
        out.append(f"  {COVERAGE:.0%} band: {self.coverage:.1%} of held-out published speed-ups inside "
                   f"({self.below:.1%} below, {self.above:.1%} above)"
                   + (f", {self.family_coverage:.1%} averaged over families" if self.family_coverage is not None else "")
                   + f"; lambda per fold {self.lambdas}; "
                   f"single feature per fold: {', '.join(sorted(set(self.best_features)))}")
        if self.coverage_seen is not None:
            parts = [f"{self.coverage_seen[0]:.1%} of the {self.coverage_seen[1]} whose family the fit had"]
            if self.coverage_unseen is not None:
                parts.append(f"{self.coverage_unseen[0]:.1%} of the {self.coverage_unseen[1]} whose family it had not")
            out.append(f"  {COVERAGE:.0%} band by relatives in the fit: " + ", ".join(parts))
        return "\n".join(out) + "\n"


def _best_single(fleet: Fleet, tr: np.ndarray, te: np.ndarray) -> tuple[str, np.ndarray]:
    """The profile feature with the largest |Spearman| with the speed-up on ``tr``, fitted
    linearly (log speed-up on it) on ``tr``, predicting ``te``."""
    y = fleet.log_obs[tr]
    best = None
    for name, values in sorted(fleet.baseline_features.items()):
        x = values[tr]
        if np.ptp(x) == 0:
            continue
        rho = spearman(list(x), list(y))
        if not math.isnan(rho) and (best is None or abs(rho) > best[0]):
            best = (abs(rho), name)
    if best is None:
        return "-", np.full(len(te), math.exp(float(np.median(y))))
    x = fleet.baseline_features[best[1]]
    b, a = np.polyfit(x[tr], y, 1)
    return best[1], np.exp(a + b * x[te])


def within_family(fleet: Fleet, idx: np.ndarray) -> np.ndarray:
    """Each model's speed-up predicted by the geometric mean of the other models of its family
    among ``idx`` (NaN for a family of one): how consistent the published speed-up is within a
    family, a ceiling of what a per-architecture profile could explain."""
    members: dict[str, list[int]] = defaultdict(list)
    for m, i in enumerate(idx):
        members[fleet.families[i]].append(m)
    y = fleet.log_obs[idx]
    out = np.full(len(idx), np.nan)
    for ms in members.values():
        if len(ms) > 1:
            total = y[ms].sum()
            out[ms] = np.exp((total - y[ms]) / (len(ms) - 1))
    return out


def in_sample(fit: Fit, fleet: Fleet) -> MethodFigures:
    """``fit`` judged on the fleet's published models, the ones it was fitted on: no model held
    out. Not a test; an upper bound on what the buckets can say about the pair, to read the
    held-out figures against."""
    idx = np.flatnonzero(np.isfinite(fleet.log_obs))
    predicted, _, _ = fit.predict(fleet.X[idx], fleet.log_spec[idx])
    return MethodFigures.of(np.asarray(predicted), np.exp(fleet.log_obs[idx]))


def _published(fleet: Fleet) -> np.ndarray:
    """The fleet models with both published numbers; BadInputError when too few to calibrate."""
    idx = np.flatnonzero(np.isfinite(fleet.log_obs))
    if len(idx) < MIN_MODELS:
        raise BadInputError(f"calibration needs at least {MIN_MODELS} models with a profile and both published "
                            f"numbers; there are {len(idx)}")
    return idx


def family_held_out(fleet: Fleet, folds: int = 5, lam: float | None = None, inner_folds: int = 5,
                    on_progress: Callable[[str], None] | None = None) -> HeldOut:
    """Each of ``folds`` folds of whole families predicted by the fit on the others. ``on_progress``
    (e.g. ``visprof.base.progress.Progress.update``) is told after each fold: each is a fit."""
    check_callback(on_progress)
    idx = _published(fleet)
    fams = [fleet.families[i] for i in idx]
    k = min(folds, len(set(fams)))
    if k < 2:
        raise BadInputError("the family-held-out test needs models of at least 2 families")
    fold = np.array(family_folds(fams, k))
    return _judge(fleet, idx, fold, range(k), lam, inner_folds, on_progress=on_progress)


def model_held_out(fleet: Fleet, folds: int = 5, seed: int = 0, lam: float | None = None,
                   inner_folds: int = 5) -> HeldOut:
    """Models dealt to ``folds`` folds at random (``seed``), whatever their family, and each fold
    predicted by the fit on the others. Not a test of transfer: most held-out models have relatives
    in the fit. Read next to ``family_held_out`` on the same fleet, the gap is what an architecture
    the fit has no relative of costs."""
    idx = _published(fleet)
    if folds < 2:
        raise BadInputError("the model-held-out test needs at least 2 folds")
    return _judge(fleet, idx, random_folds(len(idx), folds, seed), range(folds), lam, inner_folds, split="model")


def held_out_split(fleet: Fleet, test: Sequence[bool], lam: float | None = None, inner_folds: int = 5) -> HeldOut:
    """The fit on the published models outside ``test`` (one flag per fleet model), judged on the
    published models in it: e.g. models profiled after the fit was settled, whatever their family.
    The fleet median is the training models' median; the within-family figure, over the test models."""
    test = np.asarray(test, dtype=bool)
    if test.shape != (len(fleet.models),):
        raise BadInputError("held-out split: one test flag per fleet model is needed")
    idx = np.flatnonzero(np.isfinite(fleet.log_obs))
    fold = test[idx].astype(int)  # 1: test, 0: train
    if not fold.any():
        raise BadInputError("held-out split: no published model is in the test set")
    if (fold == 0).sum() < MIN_MODELS:
        raise BadInputError(f"calibration needs at least {MIN_MODELS} training models with a profile and both "
                            f"published numbers; there are {int((fold == 0).sum())}")
    return _judge(fleet, idx, fold, [1], lam, inner_folds, split="fixed")


def _check_training_sizes(fleet: Fleet, idx: np.ndarray, fold: np.ndarray, tests) -> None:
    """BadInputError when the fit without a tested fold has too few models, naming the fold's families:
    fit_calibration's own message had counted that fold's training set as all the user had (16 of 25
    models, a family of 9 held out), and more folds cannot help, since a family is never split."""
    for j in tests:
        left = int((fold != j).sum())
        if left < MIN_MODELS:
            held = sorted({fleet.families[i] for i in idx[fold == j]})
            names = ", ".join(held[:4]) + (f" and {len(held) - 4} more" if len(held) > 4 else "")
            raise BadInputError(f"the held-out test fits on the models outside each fold: without the fold of {names} "
                                f"({int((fold == j).sum())} of the {len(idx)} models with a profile and both published "
                                f"numbers) {left} remain, fewer than the {MIN_MODELS} a fit needs; add profiles of "
                                "models of other families (more folds do not help: a family is never split)")


def _judge(fleet: Fleet, idx: np.ndarray, fold: np.ndarray, tests, lam: float | None, inner_folds: int,
           split: str = "family", on_progress: Callable[[str], None] | None = None) -> HeldOut:
    """Each fold in ``tests`` predicted by the fit on every other fold of ``idx``; figures over the tested models."""
    _check_training_sizes(fleet, idx, fold, tests)
    cal, low, high, med, single = (np.full(len(idx), np.nan) for _ in range(5))
    seen = np.zeros(len(idx), dtype=bool)
    lambdas, chosen = [], []
    for j in counted(tests, len(tests), "folds", on_progress):
        tr, te = idx[fold != j], idx[fold == j]
        # its test models are published, each with its base number: no prediction needs a filled band
        fit = fit_calibration(fleet, tr, lam=lam, inner_folds=inner_folds, filled_bands=False)
        families = [fleet.families[i] for i in te]
        p, lo, hi = fit.predict(fleet.X[te], fleet.log_spec[te], families)
        cal[fold == j], low[fold == j], high[fold == j] = p, lo, hi
        seen[fold == j] = [fit.seen(f) for f in families]
        med[fold == j] = math.exp(float(np.median(fleet.log_obs[tr])))
        name, s = _best_single(fleet, tr, te)
        single[fold == j] = s
        lambdas.append(fit.lam)
        chosen.append(name)
    tested = np.isin(fold, list(tests))
    idx, fold, cal, low, high, med, single, seen = (a[tested] for a in (idx, fold, cal, low, high, med, single, seen))
    obs = np.exp(fleet.log_obs[idx])
    spec = np.exp(fleet.log_spec[idx])
    inside = (obs >= low) & (obs <= high)
    # ``inside`` is kept exact: a file's rounded speed-ups and bands would move models near an edge
    preds = [{"model": fleet.models[i], "family": fleet.families[i], "fold": int(fold[m]), "speedup": float(obs[m]),
              "spec_speedup": float(spec[m]), "calibrated": float(cal[m]), "low": float(low[m]), "high": float(high[m]),
              "inside": bool(inside[m]), "seen": bool(seen[m]), "fleet_median": float(med[m]),
              "best_feature": float(single[m])}
             for m, i in enumerate(idx)]
    variants = {name: np.exp(v[idx]) for name, v in fleet.spec_variants.items()}
    by_family: dict[str, list[bool]] = defaultdict(list)
    for m, i in enumerate(idx):
        by_family[fleet.families[i]].append(bool(inside[m]))
    for name, v in variants.items():
        for m, row in enumerate(preds):
            row[f"spec_{name}"] = float(v[m])
    return HeldOut(len(idx), len(by_family), len(tests), MethodFigures.of(cal, obs),
                   MethodFigures.of(med, obs, ranks=False), MethodFigures.of(single, obs), MethodFigures.of(spec, obs),
                   float(np.mean(inside)), float(np.mean(obs < low)), float(np.mean(obs > high)),
                   lambdas, chosen, {name: MethodFigures.of(v, obs) for name, v in variants.items()},
                   MethodFigures.of(within_family(fleet, idx), obs), preds, split,
                   float(np.mean([np.mean(v) for v in by_family.values()])),
                   *((_coverage(inside, seen), _coverage(inside, ~seen)) if seen.any() else (None, None)))


def _coverage(inside: np.ndarray, among: np.ndarray) -> tuple[float, int] | None:
    """(share inside, models) among the flagged held-out models; None where none is."""
    n = int(among.sum())
    return (float(np.mean(inside[among])), n) if n else None


__all__ = ["HeldOut", "MethodFigures", "family_held_out", "held_out_split", "in_sample", "model_held_out", "within_family"]
