"""Each model's calibrated speed-up told from the fitted ratios: which of its work moved it.

A calibration (``visprof.analysis.calibrate``) predicts

    log(speed-up) = log(spec speed-up) + offset + sum_f share_f * delta_f

so a model's prediction differs from the spec ratios' by the pair's offset and, per bucket, by
the factor ``exp(share_f * delta_f)``. Buckets nest (a category, its sub-categories, op types
and kernel families), so the sentence gathers them by category: a category's factor is the
product of its buckets', told with its share of the model's time and the bucket inside it that
moved the model most, at the rate the pair runs that work (its ratio in the ratio table: the
offset and parent buckets included). Idle time and each covariate are groups of their own, e.g.

    efficientnet_b3_gn: x0.90 (band x0.83-0.97) where the spec ratios say x1.62 (published x0.68);
    the pair's offset x0.98; normalization, 31% of its time: x0.80 (most: kernels
    normalization/group/at::native::elementwise_kernel, at x0.38 of its spec ratio); ...

The factors multiply: offset times every group's factor is the calibrated over the spec
speed-up, so a sentence accounts for the whole correction ("everything else": the groups not
listed).
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from visprof.analysis.calibrate import Fit, Fleet
from visprof.analysis.calibration_ratios import bucket_rates
from visprof.analysis.calibration_fleet import BASE_COVARIATE
from visprof.analysis.families import architecture

_KINDS = {"cat": "", "sub": "", "op": "", "kf": "kernels "}
# A covariate whose name alone does not say what it is
_COVARIATE_WORDS = {BASE_COVARIATE: "its published base time over its profile's prediction there"}


def bucket_label(feature: str) -> str:
    """A bucket as a reader names it: ``op:normalization/group/group_norm`` ->
    ``normalization/group/group_norm``; ``kf:...`` -> ``kernels ...``; covariates and idle time in words."""
    if feature == "idle":
        return "idle (launch-bound) time"
    kind, _, name = feature.partition(":")
    if kind == "cov":
        return _COVARIATE_WORDS.get(name, f"its {name.replace('_', ' ')}") + " (covariate)"
    return _KINDS.get(kind, "") + name.replace("/-/", "/")


def group_of(feature: str) -> str:
    """The category a bucket belongs to (``cat:``, ``sub:``, ``op:`` and ``kf:`` buckets of one
    category are one group); idle time and each covariate are their own."""
    kind, _, name = feature.partition(":")
    if kind in _KINDS:
        return name.split("/", 1)[0]
    return feature


@dataclass
class Contribution:
    group: str  # a category, "idle" or a covariate
    share: float  # of the model's profiled time (covariates: their standardized value)
    factor: float  # what the group's buckets change the prediction by, together
    lead: str | None = None  # the bucket of the group that moved it most
    lead_rate: float | None = None  # that bucket's ratio to its spec ratio on the pair

    def phrase(self) -> str:
        if self.group.startswith("cov:"):
            return f"{bucket_label(self.group)}: x{self.factor:.2f}"
        name = bucket_label(self.group) if self.group == "idle" else self.group
        text = f"{name}, {self.share:.0%} of its time: x{self.factor:.2f}"
        if self.lead is not None and self.lead_rate is not None and self.lead not in (f"cat:{self.group}", self.group):
            text += f" (most: {bucket_label(self.lead)}, at x{self.lead_rate:.2f} of its spec ratio)"
        elif self.lead_rate is not None:
            text += f" (at x{self.lead_rate:.2f} of its spec ratio)"
        return text


@dataclass
class ModelSentence:
    model: str
    spec_speedup: float
    calibrated: float
    low: float
    high: float
    offset: float
    published: float | None = None
    contributions: list[Contribution] = field(default_factory=list)  # largest factors first
    rest: float = 1.0  # the product of the factors not listed
    note: str = ""  # about its published numbers (Fleet.notes)
    img_size: int | None = None  # its profile's (Fleet.img_sizes)

    def text(self) -> str:
        at = f" @{self.img_size}" if self.img_size else ""
        head = (f"{self.model}{at}: x{self.calibrated:.2f} (band x{self.low:.2f}-{self.high:.2f}) where the spec ratios "
                f"say x{self.spec_speedup:.2f}" + (f" (published x{self.published:.2f})" if self.published else ""))
        parts = [f"the pair's offset x{self.offset:.2f}"] + [c.phrase() for c in self.contributions]
        if abs(math.log(self.rest)) >= 0.005:
            parts.append(f"everything else x{self.rest:.2f}")
        return f"{head}; " + "; ".join(parts + ([self.note] if self.note else []))

    def row(self) -> dict:
        return {"model": self.model, "img_size": self.img_size, "spec_speedup": self.spec_speedup, "calibrated": self.calibrated, "low": self.low,
                "high": self.high, "published": self.published, "offset": self.offset, "rest": self.rest,
                "contributions": [vars(c) for c in self.contributions], "note": self.note, "sentence": self.text()}


def model_sentence(fit: Fit, fleet: Fleet, index: int, top: int = 3) -> ModelSentence:
    """The sentence of ``fleet``'s model ``index`` from ``fit`` (the fit on the whole pair)."""
    x = fleet.X[index]
    terms = x * fit.delta
    rates = bucket_rates(fit)
    groups: dict[str, list[int]] = defaultdict(list)
    for j in np.flatnonzero(x):
        groups[group_of(fit.features[j])].append(int(j))
    contributions = []
    for group, members in groups.items():
        lead = max(members, key=lambda j: abs(terms[j]))
        own = [j for j in members if fit.features[j] in (f"cat:{group}", group)]
        share = float(x[own[0]]) if own else float(max(x[j] for j in members))
        contributions.append(Contribution(group, share, float(math.exp(sum(terms[j] for j in members))),
                                          fit.features[lead], rates.get(fit.features[lead])))
    contributions.sort(key=lambda c: -abs(math.log(c.factor)))
    listed, others = contributions[:top], contributions[top:]
    rest = float(math.exp(sum(math.log(c.factor) for c in others)))
    # the band unpublished_predictions gives it: a model predicted without its base number gets that band
    filled = fleet.covariate_filled[index:index + 1] if fleet.covariate_filled else None
    mid, low, high = (float(v[0]) for v in fit.predict(x[None, :], fleet.log_spec[index:index + 1],
                                                        fleet.families[index:index + 1], filled))
    observed = fleet.log_obs[index]
    return ModelSentence(fleet.models[index], float(math.exp(fleet.log_spec[index])), mid, low, high,
                         float(math.exp(fit.intercept)), float(math.exp(observed)) if np.isfinite(observed) else None,
                         listed, rest, fleet.notes[index] if fleet.notes else "",
                         fleet.img_sizes[index] if fleet.img_sizes else None)


def sentences(fit: Fit, fleet: Fleet, models: list[str] | None = None, top: int = 3) -> list[ModelSentence]:
    """Sentences for ``models`` (all of the fleet when None), in the fleet's order. A name matches
    the fleet's model of that name; where there is none, every model of its architecture, with or
    without a pretrained tag on either side (``resnet50`` and ``resnet50.tv_in1k`` both match
    ``resnet50.a1_in1k``); a name the fleet does not hold gives nothing (the caller says so)."""
    if models is None:
        return [model_sentence(fit, fleet, i, top) for i in range(len(fleet.models))]
    held = set(fleet.models)
    exact = {name for name in models if name in held}
    loose = {architecture(name) for name in models if name not in held}
    return [model_sentence(fit, fleet, i, top) for i, name in enumerate(fleet.models)
            if name in exact or architecture(name) in loose]


__all__ = ["Contribution", "ModelSentence", "bucket_label", "group_of", "model_sentence", "sentences"]
