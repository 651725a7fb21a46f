"""A fitted calibration saved to a file, and applied to profiles it never saw (issue 25, item 4).

``visprof calibrate ... --save CAL.json`` writes the fit of one GPU pair; ``visprof predict ...
--calibration CAL.json`` and ``visprof compare ... --calibration CAL.json`` then give each profiled
model its calibrated speed-up from the pair's base to its target with the 80% band, the way
``visprof calibrate`` predicts the profiled models its published table lacks: the profile's time
buckets and covariates (``calibration_buckets.buckets_of``, ``calibration_fleet.profile_covariates``), the spec-ratio speed-up
at the profile's own batch (or the one the user asks for) and the base table's precision (``spec_at_own_batch``), the fitted
corrections on top, and the band widened by the ridge's leverage (``calibration_band``): the band of a model whose timm
family the fit saw where it did, else that of a family it never saw. The covariates are
standardized with the fitted fleet's own means and spreads, saved with the fit. The one read from
the base GPU's published number (``calibration_fleet.BASE_COVARIATE``) is given where the caller has that
number (compare's published rows); a profile without one gets the fleet's median, saved with the
fit too (``covariate_fills``).

The file is JSON (``visprof.calibration/1``); a file that is not one, or does not fit the schema,
is a one-line BadInputError naming the file.
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from visprof.analysis.calibrate import Fit, Fleet, covariate_column
from visprof.analysis.calibration_buckets import buckets_of
from visprof.analysis.calibration_fleet import BASE_COVARIATE, profile_covariates, spec_at_own_batch
from visprof.analysis.calibration_band import COVERAGE
from visprof.analysis.families import architecture, family
from visprof.base.errors import BadInputError

SCHEMA = "visprof.calibration/1"


@dataclass
class CalibratedSpeedup:
    model: str
    spec_speedup: float  # what the spec ratios say, at the profile's batch
    calibrated: float
    low: float  # the 80% band
    high: float
    fitted: bool  # the model was among those the calibration was fitted on: in sample
    family_seen: bool = False  # its family had models in the fit: the band of such models

    def row(self) -> dict:
        return {"model": self.model, "spec_speedup": self.spec_speedup, "calibrated": self.calibrated,
                "low": self.low, "high": self.high, "fitted": self.fitted, "family_seen": self.family_seen}


@dataclass
class SavedCalibration:
    base: str  # spec ids of the pair
    target: str
    precision: str | None  # the base table's precision, at which the spec ratios predict
    fit: Fit
    covariate_scales: dict[str, tuple[float, float]]
    fitted_models: list[str] = field(default_factory=list)  # the published models the fit saw
    families: int = 0
    held_out: dict[str, Any] = field(default_factory=dict)  # the family-held-out figures of the run that saved it
    created_at: str = ""
    covariate_fills: dict[str, float] = field(default_factory=dict)  # Fleet.covariate_fills
    split_families: bool = False  # Fleet.split_families: how a profile's kernel families are bucketed
    # the published batch the fit (and its band) was made at, and profiles are predicted at;
    # None in files written before it was kept: each profile at its own batch
    batch_size: int | None = None

    @classmethod
    def of(cls, fit: Fit, fleet: Fleet, base: str, target: str, precision: str | None,
           held_out: dict[str, Any] | None = None) -> "SavedCalibration":
        published = [i for i in range(len(fleet.models)) if math.isfinite(fleet.log_obs[i])]
        return cls(base, target, precision, fit, dict(fleet.covariate_scales), [fleet.models[i] for i in published],
                   len({fleet.families[i] for i in published}), dict(held_out or {}),
                   datetime.now(timezone.utc).isoformat(timespec="seconds"), dict(fleet.covariate_fills),
                   fleet.split_families, fleet.batch_size)

    def __repr__(self) -> str:
        # What the file calibrates and how well, not every fitted model's name and the fit's arrays.
        return f"<SavedCalibration {self.describe()}>"

    def to_dict(self) -> dict[str, Any]:
        from visprof import __version__

        fit = self.fit
        return {"schema": SCHEMA, "visprof_version": __version__, "created_at": self.created_at,
                "base": self.base, "target": self.target, "precision": self.precision, "coverage": COVERAGE,
                "features": list(fit.features), "lambda": fit.lam, "intercept": fit.intercept,
                "delta": [float(d) for d in fit.delta],
                # the band's variance factor: 9 significant digits move no band by a visible amount and
                # halve the file (205 x 205 numbers for 201 buckets and covariates)
                "A_inv": [[float(f"{v:.9g}") for v in row] for row in fit.A_inv],
                "q_low": fit.q_low, "q_high": fit.q_high, "q_low_seen": fit.q_low_seen, "q_high_seen": fit.q_high_seen,
                "band_c": fit.c, "band_c_seen": fit.c_seen,
                # the bands of a profile predicted without its published base number: (c, q_low, q_high)
                "filled_bands": {("seen" if seen else "unseen"): list(band) for seen, band in fit.filled_bands.items()},
                "fitted_families": sorted(fit.families),
                "covariate_scales": {k: list(v) for k, v in self.covariate_scales.items()},
                "covariate_fills": dict(self.covariate_fills), "split_families": self.split_families,
                "batch_size": self.batch_size,
                "fitted_models": self.fitted_models, "families": self.families, "held_out": self.held_out}

    def save(self, path: str | Path) -> None:
        from visprof.base.outputs import atomic_write_json

        atomic_write_json(path, json.dumps(self.to_dict(), allow_nan=False) + "\n", kind="calibration")

    @classmethod
    def load(cls, path: str | Path) -> "SavedCalibration":
        from visprof.base.inputs import load_json_file

        doc = load_json_file(path, "calibration file")
        try:
            return cls.from_dict(doc)
        except KeyError as exc:
            raise BadInputError(f"calibration file {path}: not a visprof calibration (no {exc.args[0]!r})") from None
        except (TypeError, ValueError) as exc:
            raise BadInputError(f"calibration file {path}: not a visprof calibration ({exc})") from None

    @classmethod
    def from_dict(cls, doc: Any) -> "SavedCalibration":
        """Raises KeyError, TypeError or ValueError naming what does not fit."""
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            # calibrate --json writes the fit's tables and figures, --save the file to apply
            hint = ("; that is `visprof calibrate --json` output: the file to apply is the one --save writes"
                    if isinstance(doc, dict) and {"ratios", "held_out"} <= set(doc) else "")
            raise ValueError(f"schema is {doc.get('schema') if isinstance(doc, dict) else None!r}, not {SCHEMA!r}{hint}")
        features = _list(doc, "features")
        if not all(isinstance(f, str) and f for f in features):
            raise TypeError("features are not all bucket names")
        delta = _numbers(doc, "delta")
        a_inv = np.array([_numbers({"row": row}, "row") for row in _list(doc, "A_inv")], dtype=float)
        if len(delta) != len(features) or a_inv.shape != (len(features) + 1,) * 2:
            raise ValueError(f"{len(features)} features, {len(delta)} corrections and a {a_inv.shape} variance matrix")
        if not isinstance(doc["covariate_scales"], dict):
            raise TypeError("covariate_scales is not a table of covariates")
        scales = {str(k): tuple(_numbers({"scale": v}, "scale")) for k, v in doc["covariate_scales"].items()}
        unknown = [f for f in features if f.startswith("cov:") and f[4:] not in scales]
        if unknown or any(len(v) != 2 or v[1] <= 0 for v in scales.values()):
            raise ValueError(f"covariate scales missing or invalid ({', '.join(unknown) or 'a spread <= 0'})")
        fills = {str(k): _number({"fill": v}, "fill") for k, v in dict(doc.get("covariate_fills") or {}).items()}
        if f"cov:{BASE_COVARIATE}" in features and BASE_COVARIATE not in fills:
            raise ValueError(f"covariate {BASE_COVARIATE!r} has no value for profiles without a published base number")
        fit = Fit(features, _number(doc, "lambda"), _number(doc, "intercept"), np.array(delta), a_inv,
                  _number(doc, "q_low"), _number(doc, "q_high"))
        # the band of models whose family the fit saw; files written before it predict every model
        # with the families-held-out band
        if doc.get("q_low_seen") is not None or doc.get("q_high_seen") is not None:
            fit.q_low_seen, fit.q_high_seen = _number(doc, "q_low_seen"), _number(doc, "q_high_seen")
            fit.families = frozenset(str(f) for f in _list(doc, "fitted_families"))
        # how fast each band widens with the leverage; files written before it was estimated used 1
        fit.c = _number(doc, "band_c") if doc.get("band_c") is not None else 1.0
        fit.c_seen = _number(doc, "band_c_seen") if doc.get("band_c_seen") is not None else 1.0
        if fit.c < 0 or fit.c_seen < 0:
            raise ValueError(f"band_c {fit.c}, band_c_seen {fit.c_seen}: a band cannot narrow with the leverage")
        # files written before it give a profile without a base number the band of one with it
        filled = doc.get("filled_bands") or {}
        if not isinstance(filled, dict) or not set(filled) <= {"seen", "unseen"}:
            raise TypeError("filled_bands is not a table of the seen and unseen bands")
        fit.filled_bands = {key == "seen": tuple(_numbers(filled, key)) for key in filled}
        if any(len(b) != 3 or b[0] < 0 for b in fit.filled_bands.values()):
            raise ValueError("filled_bands: each band is (c >= 0, q_low, q_high)")
        # files written before the key was kept: from profiles whose families were not split, as no
        # H200 profile's is (the split came with c543069)
        split = doc.get("split_families", False)
        if not isinstance(split, bool):
            raise TypeError("split_families is not true or false")
        batch = doc.get("batch_size")
        if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
            raise TypeError("batch_size is not a positive whole number")
        return cls(str(doc["base"]), str(doc["target"]), doc.get("precision"), fit, scales,
                   [str(m) for m in doc.get("fitted_models", [])], int(doc.get("families", 0)),
                   dict(doc.get("held_out") or {}), str(doc.get("created_at", "")), fills, split, batch)

    def describe(self) -> str:
        """One line: the pair, what it was fitted on and how it held up with families held out."""
        held = self.held_out
        figures = (f"; families held out: Spearman {held['spearman']:.3f}, median error {held['median_abs_error']:.1%}, "
                   f"{COVERAGE:.0%} band holding {held['coverage']:.1%}") if {"spearman", "median_abs_error",
                                                                            "coverage"} <= set(held) else ""
        return (f"calibration {self.base} -> {self.target}, fitted on {len(self.fitted_models)} published models of "
                f"{self.families} families{figures}")

    def predict(self, profile, table, spec: float | None = None, base_over: float | None = None,
                batch_size: int | None = None) -> CalibratedSpeedup | None:
        """``profile`` (a measurement with a result) from the pair's base to its target; None where the
        profile lacks what the fit reads (roofline groups, timing, FLOPs and bytes) or the spec
        ratios cannot predict it. ``spec``: its spec-ratio speed-up where the caller has it (compare's,
        at the published batch); else made at ``batch_size`` (predict's --batch-size), or at the
        published batch the fit was made at (the profile's own in a file written before it was
        kept), and the base table's precision.
        ``base_over``: its ``compare.base_time_over_predicted`` where the caller has its published
        base number (compare's); else the fitted fleet's median."""
        result = profile.result
        # bucketed as the fitted models were: a kernel family split where theirs were
        shares = buckets_of(result, self.split_families) if result is not None else {}
        covs = profile_covariates(result) if shares else None
        if covs is None or profile.gpu_id is None:
            return None
        if spec is None:
            _, _, spec = spec_at_own_batch(profile, table.get(self.base), table.get(self.target), table, self.precision,
                                           batch_size or self.batch_size)
        if not spec or spec <= 0:
            return None
        values = {"spec": math.log(spec), "profile_time_per_sample": covs[0], "profile_flops_per_byte": covs[1],
                  BASE_COVARIATE: self.covariate_fills.get(BASE_COVARIATE) if base_over is None else base_over}
        x = np.array([[covariate_column(np.array([values[f[4:]]]), self.covariate_scales[f[4:]])[0]
                       if f.startswith("cov:") else shares.get(f, 0.0) for f in self.fit.features]])
        fam = family(profile.model)
        filled = base_over is None and self.reads_base_number
        mid, low, high = (float(v[0]) for v in self.fit.predict(x, np.array([math.log(spec)]), [fam], [filled]))
        return CalibratedSpeedup(profile.model, spec, mid, low, high, architecture(profile.model) in self._fitted,
                                 self.fit.seen(fam))

    def batch_words(self, batch_size: int | None = None) -> str:
        """At which batch ``predict(..., batch_size)`` makes its speed-ups, and whether the band's
        coverage was measured there: a caption's words."""
        batch = batch_size or self.batch_size
        if batch is None:
            return "each profile at its own batch (the calibration file does not say the published one)"
        if batch == self.batch_size:
            return f"at the published batch {batch}"
        held = f" (the band's coverage was measured at the published batch {self.batch_size} only)" \
            if self.batch_size else ""
        return f"at batch {batch}{held}"

    @property
    def reads_base_number(self) -> bool:
        """Whether the fit reads the model's published base number (a profile alone gets the median)."""
        return f"cov:{BASE_COVARIATE}" in self.fit.features

    @functools.cached_property
    def _fitted(self) -> set[str]:
        return {architecture(m) for m in self.fitted_models}


def _list(doc: dict, key: str) -> list:
    value = doc[key]
    if not isinstance(value, list):
        raise TypeError(f"{key} is not a list")
    return value


def _number(doc: dict, key: str) -> float:
    value = doc[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TypeError(f"{key} is not a finite number")
    return float(value)


def _numbers(doc: dict, key: str) -> list[float]:
    return [_number({key: v}, key) for v in _list(doc, key)]


__all__ = ["CalibratedSpeedup", "SCHEMA", "SavedCalibration"]
