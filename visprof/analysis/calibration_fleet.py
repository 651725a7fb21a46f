"""The calibration's fleet from a comparison (``visprof.analysis.compare``): which models the fit
sees, their time buckets, spec-ratio speed-ups, published speed-ups and covariates (issue 25).

``fleet_from_comparison`` joins the compared models that have a profile and the profiled models
without a published pair (which the fit predicts). Besides the buckets (``calibration_buckets.buckets_of``)
each model has four covariates: its log spec-ratio speed-up, log time per sample and log FLOPs
per byte of its profile (``profile_covariates``), and ``BASE_COVARIATE``, how it really ran on the
base GPU against its profile's prediction there (``base_time_over_predicted``), the fleet's median
for a model without a published base number.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Sequence

import numpy as np

from visprof.analysis.calibrate import MIN_MODELS, Fleet, make_fleet
from visprof.analysis.calibration_buckets import buckets_of, splits_families
from visprof.analysis.compare import on_base_and_target, profile_for
from visprof.analysis.comparison import base_time_over_predicted
from visprof.base.errors import BadInputError

# The covariate read from the base GPU's published number, which a model outside the base table lacks.
BASE_COVARIATE = "base_time_over_predicted"


def fleet_from_comparison(comparison, profiles, table=None, spec_excess: Sequence[str] = ()) -> tuple[Fleet, int]:
    """The fleet of ``comparison``'s models (``visprof.analysis.compare``) that have a spec
    prediction and a profile (the one compare read, ``ModelComparison.profile``).
    Given the GPU ``table``, the models of ``profiles`` (measurements with a result) without both
    published numbers join it too, with no speed-up (NaN): the fit predicts them. One measured on
    the base GPU only is predicted from that measurement (``Comparison.base_only``: its batch,
    precision and base number), as a user predicts a new GPU from the one they have; any other at
    the published base rows' most common batch and precision (``fleet.batch_size``), the ones the
    fit and its band were made at (at a profile's own batch 64 the band held 15% of the published
    3090 -> 4090 values, not 80%), its base covariate at the fleet's median. ``spec_excess``: other ways to scale time off the roof
    (``group_scaling.EXCESS_MODES``) whose spec-only speed-ups the fleet carries as ``spec_variants``
    (needs ``table``). Returns the fleet and how many joined models had no usable profile."""
    if spec_excess and table is None:
        raise BadInputError("spec-model variants need the GPU table")
    by_key: dict[tuple, list] = defaultdict(list)
    for m in profiles:
        if m.result is not None:
            by_key[(m.arch, m.img_size)].append(m)
    names, fams, buckets, spec, obs, bounds, time, intensity, notes = [], [], [], [], [], [], [], [], []
    base_over: list[float | None] = []
    split: list[bool] = []
    sizes: list[int | None] = []
    variants: dict[str, list] = {mode: [] for mode in spec_excess}
    # Each published model's kernel families are bucketed as its profile has them; the models the fit
    # only predicts, as the published ones were (set below, before they are added), as a saved fit does.
    split_families = True

    def add(name, fam, chosen, base, predicted, speedup, shares, note="", over=None) -> bool:
        row = buckets_of(chosen.result, split_families) if chosen is not None else {}
        covs = profile_covariates(chosen.result) if row else None
        if not predicted or not row or covs is None:
            return False
        for mode, values in variants.items():
            values.append(on_base_and_target(chosen, base, comparison.base_spec, comparison.target_spec, table,
                                             excess=mode).speedup)
        names.append(name)
        sizes.append(chosen.img_size)
        fams.append(fam)
        buckets.append(row)
        spec.append(predicted)
        obs.append(speedup)
        bounds.append(shares)
        time.append(covs[0])
        intensity.append(covs[1])
        notes.append(note)
        base_over.append(over)
        split.append(splits_families(chosen.result))
        return True

    missing = 0
    joined = set()
    for mc in comparison.models:
        key = (mc.base.arch, mc.img_size)
        joined.add(key)
        note = mc.path_change.clause(comparison.base_name, comparison.target_name) if mc.path_change else ""
        if not add(mc.model, mc.family, mc.profile, mc.base, mc.predicted_speedup, mc.speedup, mc.shares, note,
                   mc.base_time_over_predicted):
            missing += 1
    published = len(obs)
    if published < MIN_MODELS:
        # why a store of profiles counted none: its results were the CPU's
        cpu = f" ({comparison.cpu_results})" if comparison.cpu_results else ""
        raise BadInputError(f"{published} model(s) have a profile, a spec prediction and both published numbers "
                            f"for {comparison.base} -> {comparison.target}; calibration needs at least {MIN_MODELS}{cpu}")
    split_families = any(split)
    batch = base_batch(comparison)  # the published batch: the models the fit only predicts are made there
    if table is not None and comparison.base_spec is not None and comparison.target_spec is not None:
        from visprof.analysis.families import family

        precision = base_precision(comparison)
        for key, cands in sorted(by_key.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
            if key in joined:
                continue
            with_spec = [m for m in cands if m.gpu_id]
            if not with_spec:
                continue
            base_row = comparison.base_only.get(key)
            if base_row is not None:  # measured on the base only: the target predicted from that number
                chosen = profile_for(with_spec, comparison.base, base_row.batch_size)
                on = on_base_and_target(chosen, base_row, comparison.base_spec, comparison.target_spec, table)
                add(chosen.model, family(chosen.model), chosen, base_row, on.speedup, float("nan"), on.shares,
                    over=base_time_over_predicted(base_row.samples_per_s, on.base_samples_per_s))
                continue
            chosen = with_spec[-1]
            base, shares, predicted = spec_at_own_batch(chosen, comparison.base_spec, comparison.target_spec, table,
                                                        precision, batch)
            add(chosen.model, family(chosen.model), chosen, base, predicted, float("nan"), shares)
    bound_keys = sorted({b for s in bounds for b in s})
    extra = {f"bound:{b}": [s.get(b, 0.0) for s in bounds] for b in bound_keys}
    extra.update({"h200_time_per_sample": time, "flops_per_byte": intensity})
    # the models without a base number (profiled, measured on neither GPU) at the median
    known = [v for v in base_over if v is not None]
    fill = float(np.median(known)) if known else 0.0
    covariates = {"spec": np.log(spec), "profile_time_per_sample": time, "profile_flops_per_byte": intensity,
                  BASE_COVARIATE: [fill if v is None else v for v in base_over]}
    fleet = make_fleet(names, fams, buckets, spec, obs, baseline_features=extra, covariates=covariates,
                       spec_variants=variants, notes=notes, covariate_fills={BASE_COVARIATE: fill})
    fleet.split_families = split_families
    fleet.covariate_filled = [v is None for v in base_over]
    fleet.img_sizes = sizes
    fleet.batch_size = batch
    return fleet, missing


def profiling_gpus_note(profiles) -> str | None:
    """A line for a fleet whose profiles come from more than one GPU, else None. Each model reads one
    profile (``compare.profile_for``), so such a fit mixes shares of time measured on different GPUs:
    a consistent fleet is one GPU's."""
    counts = Counter(m.gpu_name for m in profiles)
    if len(counts) < 2:
        return None
    listed = ", ".join(f"{name}: {n:,}" for name, n in counts.most_common())
    return (f"the profiles come from {len(counts)} GPUs ({listed}); each model reads one of its profiles (nearest "
            f"the published batch, the newest of equals), so the fit mixes their time shares: give one GPU's "
            f"profiles for one consistent fleet")


def base_precision(comparison) -> str | None:
    """The precision most of the base GPU's published rows were measured at: a profile without a
    published pair is predicted at it."""
    return Counter(mc.base.precision for mc in comparison.models).most_common(1)[0][0]


def base_batch(comparison) -> int | None:
    """The batch most of the base GPU's published rows were measured at (timm's: 1024 where it fits)."""
    return Counter(mc.base.batch_size for mc in comparison.models).most_common(1)[0][0]


def spec_at_own_batch(profile, base_spec, target_spec, table, precision: str | None, batch_size: int | None = None):
    """A profile with no published pair: the base measurement it stands for (the profile's own
    batch, or ``batch_size`` where the user names one; the base table's ``precision``), its time by
    bound and its spec-predicted speed-up from base to target (None where it cannot be predicted)."""
    import dataclasses

    base = dataclasses.replace(profile, gpu_name=base_spec.id, gpu_id=base_spec.id, result=None, precision=precision,
                               kind="reference", samples_per_s=None, batch_size=batch_size or profile.batch_size)
    on = on_base_and_target(profile, base, base_spec, target_spec, table)
    return base, on.shares, on.speedup


def profile_covariates(result) -> tuple[float, float] | None:
    """log time per sample on the profile's GPU, log FLOPs per byte over its category rows; None
    where the profile lacks either."""
    rate = result.timing.samples_per_s if result.timing else None
    flops = sum(r.flops or 0.0 for r in result.categories)
    moved = sum(r.bytes or 0.0 for r in result.categories)
    if not rate or rate <= 0 or flops <= 0 or moved <= 0:
        return None
    return math.log(1.0 / rate), math.log(flops / moved)


__all__ = ["BASE_COVARIATE", "base_precision", "base_time_over_predicted", "fleet_from_comparison", "profile_covariates",
           "profiling_gpus_note", "spec_at_own_batch", "base_batch"]
