"""Calibrating the spec-ratio prediction of a GPU pair from published end-to-end numbers (issue 25).

``visprof compare`` predicts each model's speed-up from base to target GPU from its profile and
the two spec rows. Given published throughputs on both GPUs for some profiled models, this module
fits how much faster or slower each of the profile's time buckets runs on the target than those
spec ratios say, and predicts models that are not in the table:

    log(speed-up) = log(spec-predicted speed-up) + d0 + sum_f share_f * d_f + sum_c z_c * g_c

* ``share_f``: the bucket's share of the model's profiled time per iteration (kernel time of the
  category rows plus the host/launch-bound idle time). The buckets are hierarchical: a category
  (``cat:normalization``), its sub-categories (``sub:normalization/group``), its op types
  (``op:normalization/-/group_norm``, from the roofline groups every profile keeps, so profiles
  made before the op-type tables have them too: ``calibration_buckets``), the idle time (``idle``)
  and, in profiles that record them, kernel families (``kf:...``). A model's correction for
  group norm is then ``d(cat:normalization) + d(op:normalization/-/group_norm)`` (+ its
  sub-category's and kernel families' where recorded), each fitted toward 0.
* four covariates, ``cov:`` columns, fitted toward 0 like the buckets: the log spec prediction
  itself (its slope 1 + its coefficient: where the spec ratios over- or under-state the spread),
  the log time per sample on the profile's GPU and the log FLOPs per byte of the profile (small,
  low-intensity models gaining less or more than their buckets say), and the log of the base
  GPU's published time per sample over the time the profile predicts there: how the model really
  ran on the base GPU against what its profile says; a model without a published base number
  gets the fleet's median (``Fleet.covariate_fills``). It was adopted by a rule committed before
  its test (bench/results/base-residual-2026-12-05/). ``visprof.analysis.calibration_fleet``
  makes them. Each is standardized over the fleet and scaled to COVARIATE_SCALE.
* ``d0``: one unpenalized offset (the pair's bias against its spec ratios, e.g. a newer driver).
* every ``d_f`` has a ridge prior at 0, i.e. at the spec model: a bucket few models spend time in
  stays at its roofline prediction. Weighted least squares, each model weighted
  1/sqrt(models of its family) (normalised to mean 1), so that one large family does not decide
  the fit, under Huber's loss (``fit_robust``), so that rows far off it (a model a PyTorch
  upgrade moved) do not either. The ridge strength lambda is chosen by family-held-out
  cross-validation inside the training set only, from ``LAMBDAS``.
* the band: the 10th and 90th percentiles of the inner cross-validation's out-of-fold log
  residuals, weighted as the fit weighs their models, each divided by sqrt(1 + c h) first
  (h = x' A^-1 x, A = X'WX + lambda P: the predictive-variance factor of the ridge, large for a
  model whose time lies in buckets with little training weight; c estimated from the same
  residuals, ``visprof.analysis.calibration_band``), and multiplied back by sqrt(1 + c h(x)) of
  the model predicted. Two such bands, each with its own c: the inner cross-validation by families
  gives the band of a model whose family the fit has not seen (or whose family is unknown); a
  second one at the chosen lambda, models dealt to folds at random, gives from those held out
  with relatives in their fit the band of a model whose family the fit has seen.

A profile's buckets are ``visprof.analysis.calibration_buckets``'; the fitted ratio per bucket, as
``visprof calibrate`` prints it, is ``visprof.analysis.calibration_ratios``.
``visprof.analysis.held_out`` judges it on models the fit did not see (timm families held out,
or a given test set) against baselines.

Pure NumPy; nothing is read from disk here (``calibration_fleet.fleet_from_comparison`` takes
what ``visprof.analysis.compare`` and ``visprof.analysis.sources`` give).
"""
from __future__ import annotations

import contextlib
import math
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from visprof.analysis.calibration_band import band_from_residuals
from visprof.analysis.families import UNKNOWN as UNKNOWN_FAMILY
from visprof.base.errors import BadInputError

# Ridge strengths the inner family-held-out CV picks from. With 1,200 models the 2,054-result store's
# folds all picked the grid's lowest value, 0.3; the grid was extended down so that the pick is inside
# it (bench/results/calibrate-2026-12-04/README.md).
LAMBDAS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
MIN_MODELS = 20  # fewer published-and-profiled models than this: nothing to fit
# A bucket is a feature when at least this many models spend at least MIN_SHARE of their time in it
# (label-free: it uses only the profiles, never the published numbers).
MIN_SHARE = 0.01
MIN_MODELS_PER_FEATURE = 5
# Covariates (``cov:`` columns) are standardized over the fleet and scaled to this spread, about a
# bucket share's, so that one ridge strength suits both (fixed a priori, not fitted).
COVARIATE_SCALE = 0.25


@dataclass
class Fleet:
    """The models a calibration sees: their profile buckets, spec prediction and published speed-up."""

    models: list[str]
    families: list[str]
    features: list[str]
    X: np.ndarray  # models x features: shares of profiled time
    log_spec: np.ndarray  # log spec-predicted speed-up
    log_obs: np.ndarray  # log published speed-up (nan: not published)
    baseline_features: dict[str, np.ndarray] = field(default_factory=dict)  # candidates for the single-feature baseline
    # Other spec-only models' log speed-ups (name -> one per model; NaN where one cannot predict):
    # judged beside log_spec, never fitted.
    spec_variants: dict[str, np.ndarray] = field(default_factory=dict)
    # Each covariate's mean and standard deviation over the fleet, as its column was standardized:
    # a saved calibration applies the same to a profile it never saw.
    covariate_scales: dict[str, tuple[float, float]] = field(default_factory=dict)
    # The value a model without a covariate's input gets (e.g. no published base number): its median
    # over the fleet's models that have one. Only covariates that can be missing have an entry.
    covariate_fills: dict[str, float] = field(default_factory=dict)
    # Per model, what its sentence should add about its published numbers ("" for none): e.g. that
    # its two runs took different paths (visprof.analysis.batch_witness).
    notes: list[str] = field(default_factory=list)
    # Per model, the image size of its profile (where known): one model is often in the fleet at
    # several sizes, and its sentences must say which is which.
    img_sizes: list[int | None] = field(default_factory=list)
    # Whether the fitted models' kernel-family time was split by the category each kernel ran as
    # (``calibration_buckets.buckets_of``): a profile the fit predicts must be bucketed the same way, or a split part
    # lands in a bucket the fit never saw and loses its correction.
    split_families: bool = True
    # Per model, whether a covariate that can be missing was filled (covariate_fills) for it: such a
    # model is predicted with the band of models predicted that way (Fit.filled_bands).
    covariate_filled: list[bool] = field(default_factory=list)
    # The batch of the published rows the fit is made on, at which the models without them are
    # predicted (None: each at its profile's own).
    batch_size: int | None = None

    def __post_init__(self):
        n = len(self.models)
        if self.X.shape != (n, len(self.features)) or len(self.families) != n or self.log_spec.shape != (n,) \
                or self.log_obs.shape != (n,) or (self.notes and len(self.notes) != n):
            raise BadInputError("calibration fleet: models, families, shares and speed-ups differ in length")

    def __repr__(self) -> str:
        # Counts, not the arrays and every model's name.
        published = int(np.isfinite(self.log_obs).sum())
        return (f"<Fleet {len(self.models):,} models of {len(set(self.families)):,} families, {published:,} with a "
                f"published speed-up; {len(self.features):,} buckets and covariates>")

    def weights(self, idx: np.ndarray) -> np.ndarray:
        counts: dict[str, int] = defaultdict(int)
        for i in idx:
            counts[self.families[i]] += 1
        w = np.array([1.0 / math.sqrt(counts[self.families[i]]) for i in idx])
        return w / w.mean()


def select_features(rows: Sequence[dict[str, float]]) -> list[str]:
    """Buckets at least MIN_MODELS_PER_FEATURE models spend MIN_SHARE of their time in (sorted)."""
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        for k, v in row.items():
            if v >= MIN_SHARE:
                counts[k] += 1
    return sorted(k for k, c in counts.items() if c >= MIN_MODELS_PER_FEATURE)


def covariate_scale(values: np.ndarray) -> tuple[float, float]:
    """A covariate's mean and standard deviation over the fleet (1 where it does not vary)."""
    sd = float(values.std())
    return float(values.mean()), sd if sd > 0 else 1.0


def covariate_column(values: np.ndarray, scale: tuple[float, float] | None = None) -> np.ndarray:
    """A covariate as the fit sees it: standardized (over the fleet, or by a saved ``scale``) and
    scaled to COVARIATE_SCALE."""
    mean, sd = scale or covariate_scale(values)
    return (values - mean) / sd * COVARIATE_SCALE


def make_fleet(models: Sequence[str], families: Sequence[str], buckets: Sequence[dict[str, float]],
               spec_speedups: Sequence[float], speedups: Sequence[float],
               baseline_features: dict[str, Sequence[float]] | None = None,
               features: Sequence[str] | None = None, covariates: dict[str, Sequence[float]] | None = None,
               spec_variants: dict[str, Sequence[float]] | None = None, notes: Sequence[str] | None = None,
               covariate_fills: dict[str, float] | None = None) -> Fleet:
    """``covariates``: per model, values whose log-speed-up slope is fitted toward 0 too (e.g. the
    log spec prediction itself, whose slope is then 1 + its coefficient): standardized over the
    fleet and scaled to COVARIATE_SCALE. ``covariate_fills``: the value each covariate that can be
    missing gave the models without it (kept for a saved calibration). ``spec_variants``: other
    spec models' speed-ups per model (None or NaN where one has none), judged beside the default,
    not fitted."""
    features = list(features) if features is not None else select_features(buckets)
    col = {f: j for j, f in enumerate(features)}
    X = np.zeros((len(models), len(features)))
    for i, row in enumerate(buckets):
        for k, v in row.items():
            if k in col:
                X[i, col[k]] = v
    scales = {}
    for name, values in (covariates or {}).items():
        c = np.asarray(values, dtype=float)
        if c.shape != (len(models),) or not np.all(np.isfinite(c)):
            raise BadInputError(f"calibration covariate {name!r}: one finite value per model is needed")
        scales[name] = covariate_scale(c)
        X = np.hstack([X, covariate_column(c, scales[name])[:, None]])
        features.append(f"cov:{name}")
    spec = np.asarray(spec_speedups, dtype=float)
    obs = np.asarray(speedups, dtype=float)
    if np.any(~np.isfinite(spec)) or np.any(spec <= 0):
        raise BadInputError("calibration: every model needs a positive spec-predicted speed-up")
    base = {k: np.asarray(v, dtype=float) for k, v in (baseline_features or {}).items()}
    for f in features:
        if not f.startswith(("kf:", "cov:", "op:")):  # kernel families exist in some profiles only; op types are many
            base.setdefault(f, X[:, col[f]])
    variants = {}
    for name, values in (spec_variants or {}).items():
        v = np.array([np.nan if x is None else x for x in values], dtype=float)
        if v.shape != spec.shape:
            raise BadInputError(f"spec model {name!r}: one speed-up per model is needed")
        variants[name] = np.log(np.where(v > 0, v, np.nan))
    return Fleet(list(models), list(families), features, X, np.log(spec), np.log(np.where(obs > 0, obs, np.nan)), base,
                 variants, scales, dict(covariate_fills or {}), list(notes) if notes is not None else [""] * len(models))


# --- the fit ---------------------------------------------------------------------------------

@dataclass
class Fit:
    features: list[str]
    lam: float
    intercept: float
    delta: np.ndarray
    A_inv: np.ndarray  # (1 + features) square: for the predictive-variance factor
    q_low: float = 0.0  # standardized log-residual quantiles (10th, 90th percentiles), families held out
    q_high: float = 0.0
    weight: np.ndarray | None = None  # training weight per feature: sum of w * share
    # The band of a model whose family the fit has seen: quantiles of the residuals of models held
    # out with relatives in the fit (None: not known, every model takes q_low, q_high).
    q_low_seen: float | None = None
    q_high_seen: float | None = None
    # How fast each band widens with the leverage h: sqrt(1 + c h) (calibration_band); 1 in files
    # saved before c was estimated.
    c: float = 1.0
    c_seen: float = 1.0
    families: frozenset[str] = frozenset()  # the families of the models fitted
    # The bands of a model predicted without an input a covariate needs (its published base number),
    # the covariate at the fleet's fill: (c, q_low, q_high) by whether its family was in the fit.
    # Estimated with the held-out models predicted that way (bench/results/baseless-band-2026-12-05);
    # empty: not known, such a model takes the band above.
    filled_bands: dict[bool, tuple[float, float, float]] = field(default_factory=dict)

    def __repr__(self) -> str:
        # The headline, not the inverse matrix; ratio_table() and the CLI's tables have the ratios.
        return (f"<Fit {len(self.features):,} buckets and covariates, lambda {self.lam:g}, pair offset "
                f"x{math.exp(self.intercept):.3f}, fitted on {len(self.families):,} families>")

    def design(self, X: np.ndarray) -> np.ndarray:
        return np.hstack([np.ones((X.shape[0], 1)), X])

    def correction(self, X: np.ndarray) -> np.ndarray:
        return self.intercept + X @ self.delta

    def leverage(self, X: np.ndarray) -> np.ndarray:
        Z = self.design(X)
        return np.sum((Z @ self.A_inv) * Z, axis=1)  # diag(Z A_inv Z^T) as one matrix product (an einsum was 10x slower)

    def predict(self, X: np.ndarray, log_spec: np.ndarray, families: Sequence[str] | None = None,
                filled: Sequence[bool] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Speed-ups and their band (low, high). ``families``, one per row where known: a model
        whose family the fit has seen gets the band of such models; the others (and all rows
        without ``families``) the band of a family the fit never saw. ``filled``, one per row: the
        row's missing covariate input was filled, so it gets the band of such predictions."""
        mid = log_spec + self.correction(X)
        h = self.leverage(X)
        q_low, q_high, c = np.full(len(mid), self.q_low), np.full(len(mid), self.q_high), np.full(len(mid), self.c)
        seen = np.array([self.seen(f) for f in (() if families is None else families)], dtype=bool)
        if seen.any():
            q_low[seen], q_high[seen], c[seen] = self.q_low_seen, self.q_high_seen, self.c_seen
        for m in np.flatnonzero(np.asarray(filled if filled is not None else [], dtype=bool)):
            band = self.filled_bands.get(bool(seen[m]) if len(seen) else False)
            if band is not None:
                c[m], q_low[m], q_high[m] = band
        scale = np.sqrt(1.0 + c * h)
        return np.exp(mid), np.exp(mid + q_low * scale), np.exp(mid + q_high * scale)

    def seen(self, family: str | None) -> bool:
        """Whether a model of ``family`` gets the band of families the fit has seen."""
        return (self.q_low_seen is not None and self.q_high_seen is not None and family in self.families
                and family != UNKNOWN_FAMILY)


def fit_ridge(X: np.ndarray, y: np.ndarray, w: np.ndarray, lam: float, features: list[str]) -> Fit:
    """Weighted ridge of y (log residual of the spec model) on X with an unpenalized intercept."""
    A, b = _normal_equations(X, y, w, lam)
    A_inv = np.linalg.inv(A)
    beta = A_inv @ b
    return Fit(features, lam, float(beta[0]), beta[1:], A_inv, weight=(X * w[:, None]).sum(axis=0))


def _normal_equations(X: np.ndarray, y: np.ndarray, w: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """A beta = b of the weighted ridge, the intercept first and (all but) unpenalized."""
    Z = np.hstack([np.ones((X.shape[0], 1)), X])
    P = np.eye(Z.shape[1]) * lam
    P[0, 0] = 1e-9
    return Z.T @ (Z * w[:, None]) + P, Z.T @ (w * y)


def _ridge_correction(X: np.ndarray, y: np.ndarray, w: np.ndarray, lam: float) -> np.ndarray:
    """The fitted correction of each row of X: ``fit_ridge(...).correction(X)`` without the inverse,
    which only the last of the robust fit's reweightings needs."""
    A, b = _normal_equations(X, y, w, lam)
    beta = np.linalg.solve(A, b)
    return beta[0] + X @ beta[1:]


# Huber's constant (95% efficiency at normal errors), the MAD's consistency factor, and the
# reweightings of the robust fit: textbook values, not tuned (bench/results/robust-fit-2026-12-05).
HUBER_K, MAD_SCALE, HUBER_STEPS = 1.345, 1.4826, 5


def fit_robust(X: np.ndarray, y: np.ndarray, w: np.ndarray, lam: float, features: list[str]) -> Fit:
    """``fit_ridge`` with Huber's loss, by iteratively reweighted least squares: a model whose
    residual is more than HUBER_K robust standard deviations off has its weight cut in proportion.
    A table whose two GPUs were measured under different PyTorch versions has rows the software
    moved (FastViT x1.82 on the same RTX 4090): to a model of the hardware they are outliers, and
    least squares follows them."""
    robust_w = w
    for _ in range(HUBER_STEPS):
        res = np.abs(y - _ridge_correction(X, y, robust_w, lam))
        scale = MAD_SCALE * float(np.quantile(res, 0.5, weights=w, method="inverted_cdf"))
        if scale <= 0:
            break
        robust_w = w * np.minimum(1.0, HUBER_K * scale / np.maximum(res, 1e-300))
    fit = fit_ridge(X, y, robust_w, lam, features)
    fit.weight = (X * w[:, None]).sum(axis=0)  # the models' own weights: how much of the fleet a bucket has
    return fit


def family_folds(families: Sequence[str], k: int, salt: str = "") -> list[int]:
    """A fold per model, by family: families sorted by a stable hash and dealt round-robin by size,
    so that folds are about equal in models and a family is in one fold only."""
    groups: dict[str, int] = defaultdict(int)
    for f in families:
        groups[f] += 1
    order = sorted(groups, key=lambda f: (-groups[f], zlib.crc32((salt + f).encode())))
    sizes = [0] * k
    fold_of = {}
    for f in order:
        j = min(range(k), key=lambda i: (sizes[i], i))
        fold_of[f] = j
        sizes[j] += groups[f]
    return [fold_of[f] for f in families]


def _cv_residuals(fleet: Fleet, idx: np.ndarray, lam: float, k: int, folds: np.ndarray | None = None,
                  fill_columns: Sequence[int] = ()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Out-of-fold log residuals over ``idx`` (family folds unless ``folds`` is given), their
    leverages h under their fold's fit, and whether each held-out model had a model of its family
    in its fit. ``fill_columns``: covariate columns of X that each held-out model is predicted with
    at its training fold's median instead of its own value, as a model without their input is."""
    if folds is None:
        folds = np.array(family_folds([fleet.families[i] for i in idx], k, salt="inner"))
    res = np.full(len(idx), np.nan)
    h = np.zeros(len(idx))
    seen = np.zeros(len(idx), dtype=bool)
    y = fleet.log_obs - fleet.log_spec
    for j in range(k):
        tr, te = idx[folds != j], idx[folds == j]
        if len(te) == 0 or len(tr) < 2:
            continue
        f = fit_robust(fleet.X[tr], y[tr], fleet.weights(tr), lam, fleet.features)
        x = fleet.X[te].copy()
        for column in fill_columns:
            x[:, column] = np.median(fleet.X[tr, column])
        res[folds == j] = y[te] - f.correction(x)
        h[folds == j] = f.leverage(x)
        fitted = {fleet.families[i] for i in tr}
        seen[folds == j] = [fleet.families[i] in fitted for i in te]
    return res, h, seen


def random_folds(n: int, k: int, seed: int = 0) -> np.ndarray:
    """``n`` models dealt to ``k`` folds at random (``seed``), as evenly as they go."""
    fold = np.empty(n, dtype=int)
    fold[np.random.default_rng(seed).permutation(n)] = np.arange(n) % k
    return fold


def fit_calibration(fleet: Fleet, idx: np.ndarray | None = None, lam: float | None = None, inner_folds: int = 5,
                    filled_bands: bool = True) -> Fit:
    """The fit on the models ``idx`` (default: all with a published speed-up): lambda by inner
    family-held-out CV (mean |log residual|, family-weighted) unless given; each band's c and
    quantiles from the inner CV's residuals, family-weighted too (``calibration_band``).
    ``filled_bands``: also the bands of predictions with a covariate filled (two more inner CVs,
    a fifth of the fit's time); a fit judged only on published models, which have every input,
    has no use for them."""
    # Some 1,900 solves of a few hundred unknowns: BLAS threads buy nothing at that size, and on a
    # busy machine OpenBLAS's waiting threads made `visprof calibrate` of 1,579 models take 137 s
    # instead of 37 s (2 cores, bench/results/calibrate-speed-2026-12-06).
    with _one_blas_thread():
        return _fit_calibration(fleet, idx, lam, inner_folds, filled_bands)


def _one_blas_thread():
    """A context in which BLAS runs on one thread; a source tree run without its dependencies
    installed (the lent GPU machine) has no threadpoolctl: the same fit, slower when busy."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def _fit_calibration(fleet: Fleet, idx: np.ndarray | None, lam: float | None, inner_folds: int,
                     filled_bands: bool) -> Fit:
    if idx is None:
        idx = np.flatnonzero(np.isfinite(fleet.log_obs))
    idx = np.asarray(idx)
    if len(idx) < MIN_MODELS:
        raise BadInputError(f"calibration needs at least {MIN_MODELS} models with a profile and both published "
                            f"numbers; there are {len(idx)}")
    families = {fleet.families[i] for i in idx}
    k = min(inner_folds, len(families))
    if k < 2:
        raise BadInputError(f"calibration needs models of at least 2 families to hold one out; there is {len(families)}")
    w = fleet.weights(idx)
    best = None
    for candidate in ([lam] if lam is not None else LAMBDAS):
        res, h, _ = _cv_residuals(fleet, idx, candidate, k)
        ok = np.isfinite(res)
        loss = float(np.sum(w[ok] * np.abs(res[ok])) / np.sum(w[ok]))
        if best is None or loss < best[0]:
            best = (loss, candidate, res, h)
    _, lam, res, h = best
    y = fleet.log_obs - fleet.log_spec
    fit = fit_robust(fleet.X[idx], y[idx], w, lam, fleet.features)
    bands = _bands(fleet, idx, lam, k, w, family_cv=(res, h))
    fit.c, fit.q_low, fit.q_high = bands[False]
    if True in bands:
        fit.c_seen, fit.q_low_seen, fit.q_high_seen = bands[True]
    fit.families = frozenset(fleet.families[i] for i in idx)
    fit.filled_bands = _filled_bands(fleet, idx, lam, k, w) if filled_bands else {}
    return fit


def _bands(fleet: Fleet, idx: np.ndarray, lam: float, k: int, w: np.ndarray, fill_columns: Sequence[int] = (),
           family_cv: tuple[np.ndarray, np.ndarray] | None = None) -> dict[bool, tuple[float, float, float]]:
    """(c, q_low, q_high) by whether a model's family is in the fit. False: from the family-held-out
    inner CV (``family_cv``, its residuals and leverages, where the caller has them). True: a model
    with relatives in the fit is predicted better than one without (the 253 models profiled last,
    most with relatives: 86-90% inside the families-held-out band), so from models held out at
    random, those with relatives in their inner fit (bench/results/band-relatives-2026-12-05);
    absent where none has. ``fill_columns``: as ``_cv_residuals``."""
    res, h = family_cv if family_cv is not None else _cv_residuals(fleet, idx, lam, k, fill_columns=fill_columns)[:2]
    ok = np.isfinite(res)
    bands = {False: band_from_residuals(res[ok], h[ok], w[ok])}
    res, h, seen = _cv_residuals(fleet, idx, lam, k, folds=random_folds(len(idx), k, seed=0), fill_columns=fill_columns)
    ok = np.isfinite(res) & seen
    if ok.any():
        bands[True] = band_from_residuals(res[ok], h[ok], w[ok])
    return bands


def _filled_bands(fleet: Fleet, idx: np.ndarray, lam: float, k: int, w: np.ndarray) -> dict:
    """Both bands again, the held-out models predicted with the covariates that can be missing at
    their training fold's median: a model predicted without its published base number errs more than
    one with it, and its band held 74% of such held-out predictions on 4090 -> 5090 where 80% was
    stated; estimated this way, 80% (prereg and figures: bench/results/baseless-band-2026-12-05)."""
    columns = [fleet.features.index(f"cov:{name}") for name in fleet.covariate_fills
               if f"cov:{name}" in fleet.features]
    return _bands(fleet, idx, lam, k, w, fill_columns=columns) if columns else {}


def unpublished_predictions(fit: Fit, fleet: Fleet) -> list[dict]:
    """The fit's speed-up and band for the fleet's models without a published speed-up."""
    idx = np.flatnonzero(~np.isfinite(fleet.log_obs))
    if not len(idx):
        return []
    filled = [fleet.covariate_filled[i] for i in idx] if fleet.covariate_filled else None
    p, lo, hi = fit.predict(fleet.X[idx], fleet.log_spec[idx], [fleet.families[i] for i in idx], filled)
    # the image size and batch tell apart one model's predictions at several sizes
    return [{"model": fleet.models[i], "img_size": fleet.img_sizes[i] if fleet.img_sizes else None,
             "batch_size": fleet.batch_size, "family": fleet.families[i],
             "spec_speedup": float(math.exp(fleet.log_spec[i])),
             "calibrated": float(a), "low": float(b), "high": float(c)} for i, a, b, c in zip(idx, p, lo, hi)]


__all__ = ["COVARIATE_SCALE", "Fit", "Fleet", "LAMBDAS", "MIN_MODELS", "covariate_column", "covariate_scale",
           "family_folds", "fit_calibration", "fit_ridge", "fit_robust", "make_fleet", "random_folds", "select_features",
           "unpublished_predictions"]
