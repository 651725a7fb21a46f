"""What ``visprof.analysis.compare`` returns: a comparison of two GPUs, a row per model, the
aggregates, and how far the profiles' predictions agree with the measured speed-ups.

Kept apart from the comparing itself so that the notes and sentences about a comparison
(``compare_notes``, ``compare_explain``) and its readers (reports, the calibration) can take
these types without the join and the predictions.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from visprof.analysis.batch_witness import PathChange
from visprof.analysis.gpus import GpuSpec
from visprof.analysis.metrics import ratio_errors, spearman
from visprof.analysis.roofline import LATENCY_SHARES
from visprof.analysis.sources import Measurement
from visprof.analysis.time_basis import END_TO_END
from visprof.base.pandas_import import import_pandas


# A predicted speed-up within this of the measured one: the bounds account for the gain.
EXPLAINED_WITHIN = 0.10


@dataclass
class ModelComparison:
    model: str
    img_size: int | None
    family: str
    base: Measurement
    target: Measurement
    speedup: float
    sensitivity: float = 0.0
    dominant_category: str | None = None
    shares: dict[str, float] = field(default_factory=dict)  # time by bound on the base GPU
    shares_from: str = ""  # "measured on rtx3090" / "predicted from h200"
    predicted_speedup: float | None = None  # from the profile's roofline groups and the two spec rows
    predicted_band: tuple[float, float] | None = None  # predict.speedup_band: over how off-roof time may scale
    # the throughput the profile's groups predict on the base GPU, at the published batch: how the
    # published base number departs from it is a calibration covariate (base_time_over_predicted)
    predicted_base_samples_per_s: float | None = None
    explanation: str = ""
    profile: Measurement | None = None  # the profile all of the above was read from (profile_for)
    # where the two published batches show that the runs held different memory per sample (batch_witness)
    path_change: PathChange | None = None

    def __repr__(self) -> str:
        # The model's line, not its two measurements' every field and the profile inside (40 lines).
        size = f" @{self.img_size}" if self.img_size else ""
        predicted = ""
        if self.predicted_speedup is not None:
            band = f" (band x{self.predicted_band[0]:.3f}-x{self.predicted_band[1]:.3f})" if self.predicted_band else ""
            predicted = f", predicted x{self.predicted_speedup:.3f}{band} from its profile"
        return (f"<ModelComparison {self.model}{size} ({self.family}): x{self.speedup:.3f} {self.base.gpu} -> "
                f"{self.target.gpu}, sensitivity {self.sensitivity:+.1%}{predicted}>")

    @property
    def base_time_over_predicted(self) -> float | None:
        """log(published base time per sample / the time the profile predicts there): the calibration's
        covariate from the base GPU's own number (calibration_fleet.BASE_COVARIATE)."""
        return base_time_over_predicted(self.base.samples_per_s, self.predicted_base_samples_per_s)

    @property
    def intensity(self) -> float | None:
        """MACs per activation (timm's counts): how much math each value moved carries."""
        for m in (self.base, self.target):
            if m.gmacs and m.macts_m:
                return m.gmacs * 1e3 / m.macts_m
        return None

    def row(self) -> dict:
        """Plain fields for JSON/CSV."""
        return {"model": self.model, "img_size": self.img_size, "family": self.family,
                "base_samples_per_s": self.base.samples_per_s, "target_samples_per_s": self.target.samples_per_s,
                "base_batch": self.base.batch_size, "target_batch": self.target.batch_size,
                "speedup": self.speedup, "predicted_speedup": self.predicted_speedup,
                "predicted_base_samples_per_s": self.predicted_base_samples_per_s,
                "predicted_low": self.predicted_band[0] if self.predicted_band else None,
                "predicted_high": self.predicted_band[1] if self.predicted_band else None, "sensitivity": self.sensitivity,
                "dominant_category": self.dominant_category,
                **share_columns(self.shares), "shares_from": self.shares_from,
                "macs_per_activation": self.intensity, "explanation": self.explanation,
                "base_source": self.base.source, "target_source": self.target.source,
                "path_change_run": self.path_change.hungrier if self.path_change else None,
                "path_change_factor": self.path_change.factor if self.path_change else None}


@dataclass
class Aggregate:
    key: str
    count: int
    median_speedup: float
    median_sensitivity: float
    min_speedup: float
    max_speedup: float


@dataclass
class PredictionAgreement:
    """How far the explanations can be trusted: the profiles' predicted speed-ups against the measured ones."""

    models: int
    spearman: float
    median_abs_error: float
    median_signed_error: float
    within: int  # models predicted within EXPLAINED_WITHIN
    # Models whose speed-up band (predict.speedup_band) is at most DECIDED_BAND wide: the spec
    # ratios decide their prediction whatever limits their kernels far below the roof.
    decided: int = 0
    decided_spearman: float | None = None

    @classmethod
    def of(cls, models: list[ModelComparison]) -> "PredictionAgreement | None":
        pairs = [(m.predicted_speedup, m.speedup) for m in models if m.predicted_speedup]
        if len(pairs) < 3:
            return None
        predicted, measured = zip(*pairs)
        errors = ratio_errors(predicted, measured)
        decided = [(m.predicted_speedup, m.speedup) for m in models if m.predicted_speedup and is_decided(m.predicted_band)]
        return cls(len(pairs), spearman(predicted, measured), errors["median_abs"], errors["median_signed"],
                   sum(abs(p / s - 1) <= EXPLAINED_WITHIN for p, s in pairs), len(decided),
                   spearman(*zip(*decided)) if len(decided) >= 3 else None)

    def sentence(self) -> str:
        decided = (f"; on the {self.decided} whose band is within {EXPLAINED_WITHIN:.0%} either way (the spec ratios "
                   f"decide them), Spearman {self.decided_spearman:.2f}" if self.decided_spearman is not None else "")
        return (f"{self.models} profiled model(s): their profiles predict the speed-up with median error "
                f"{self.median_abs_error:.1%} (median signed {self.median_signed_error:+.1%}), rank the models with "
                f"Spearman {self.spearman:.2f}, and account for it within {EXPLAINED_WITHIN:.0%} for {self.within} of them"
                f"{decided}")


DECIDED_BAND = 2 * EXPLAINED_WITHIN


def is_decided(band: tuple[float, float] | None) -> bool:
    """A speed-up band narrow enough that its scaling cannot move the prediction by more than
    EXPLAINED_WITHIN either way."""
    return bool(band) and band[1] / band[0] - 1 <= DECIDED_BAND


@dataclass
class Comparison:
    base: str  # GPU key (spec id, else name)
    target: str
    base_spec: GpuSpec | None
    target_spec: GpuSpec | None
    models: list[ModelComparison]
    median_speedup: float
    by_family: list[Aggregate]
    by_category: list[Aggregate]
    by_bound: list[Aggregate]
    unmatched: dict[str, int] = field(default_factory=dict)  # GPU key -> models without a partner
    notes: list[str] = field(default_factory=list)
    prediction: PredictionAgreement | None = None  # also the last note
    software: str | None = None  # where the two GPUs' numbers come from different software: why it matters (a note too)
    paths: str | None = None  # the models whose two published runs took different paths (batch_witness; a note too)
    host: str | None = None  # profiles on both sides whose end-to-end time carries their hosts (time_basis; a note too)
    cpu_results: str | None = None  # the CPU results left out (cpu_results_note; a note too)
    implausible: str | None = None  # speed-ups that say a table is wrong, not the GPUs (implausible_note; a note too)
    base_name: str = ""  # the GPUs as sentences name them ("RTX 4090")
    target_name: str = ""
    # (architecture, image size) -> its base GPU measurement, for models measured on the base only:
    # what a calibration predicts the target from (a reference row where there is one)
    base_only: dict[tuple, Measurement] = field(default_factory=dict)
    time: str = END_TO_END  # which time the speed-ups divide (time_basis.TIME_BASES)

    def __post_init__(self) -> None:
        self.base_name = self.base_name or self.base
        self.target_name = self.target_name or self.target

    def __repr__(self) -> str:
        # The headline, not every model's row (megabytes for a published table): to_dict() has them.
        agreement = (f"; {self.prediction.models:,} profiled, predicted at Spearman {self.prediction.spearman:.2f}, "
                     f"median error {self.prediction.median_abs_error:.1%}" if self.prediction else "")
        return (f"<Comparison {self.base} -> {self.target}: {len(self.models):,} models, median speed-up "
                f"x{self.median_speedup:.3f}{agreement}; {len(self.notes)} note(s)>")

    @property
    def not_compared(self) -> str | None:
        """"not compared: 1 only on rtx3090, 2 only on rtx4090" (models measured on one GPU only), or None."""
        unmatched = ", ".join(f"{n} only on {k}" for k, n in self.unmatched.items() if n)
        return f"not compared: {unmatched}" if unmatched else None

    def dataframe(self):
        """A pandas DataFrame of the models, a row each (the columns of ``visprof compare --csv`` without a calibration)."""
        pd = import_pandas("Comparison.dataframe()")
        return pd.DataFrame([m.row() for m in self.models])

    def to_dict(self) -> dict:
        return {"base": self.base, "target": self.target, "time": self.time,
                "base_spec": self.base_spec.as_dict() if self.base_spec else None,
                "target_spec": self.target_spec.as_dict() if self.target_spec else None,
                "median_speedup": self.median_speedup, "models": [m.row() for m in self.models],
                "by_family": [asdict(a) for a in self.by_family], "by_category": [asdict(a) for a in self.by_category],
                "by_bound": [asdict(a) for a in self.by_bound], "unmatched": self.unmatched, "notes": self.notes,
                "prediction": asdict(self.prediction) if self.prediction else None}


def base_time_over_predicted(published_samples_per_s: float | None, predicted_samples_per_s: float | None) -> float | None:
    """log of the base GPU's published time per sample over the time per sample a profile predicts
    there (both at the published batch); None without both."""
    if not published_samples_per_s or not predicted_samples_per_s or published_samples_per_s <= 0 \
            or predicted_samples_per_s <= 0:
        return None
    return math.log(predicted_samples_per_s / published_samples_per_s)


__all__ = ["Aggregate", "Comparison", "DECIDED_BAND", "EXPLAINED_WITHIN", "ModelComparison", "PredictionAgreement",
           "base_time_over_predicted", "is_decided"]


def share_columns(shares: dict[str, float]) -> dict[str, float | None]:
    """``share_tensor`` ... ``share_launch``: every bound, 0 where none of the time is in it; None for
    all where there are no shares (a published pair without a profile)."""
    return {f"share_{b}": (shares.get(b, 0.0) if shares else None) for b in LATENCY_SHARES}
