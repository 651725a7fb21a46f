"""The cells of a sweep: every model crossed with every configuration.

One cell is one ``visprof.profile(...)`` call. Its ``key`` is a canonical, readable string
of everything that shapes the measurement (model, requested batch and image size, precision,
layout, passes, extra profile options); the store keys rows by it, with the GPU and the
software versions, so the same sweep run again finds its finished cells.

The driver plans, and skips finished cells, before any worker starts.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from visprof.errors import BadInputError
from visprof.options import DEFAULT_BATCH, DEFAULT_PRECISION, PASSES, PRECISIONS

__all__ = ["Cell", "SweepPlan", "img_size_text", "parse_img_size"]

ImgSize = Any  # None (the model's default), an int, or an (H, W) pair


def img_size_text(img_size: ImgSize) -> str:
    if img_size is None:
        return "default"
    if isinstance(img_size, (tuple, list)):
        height, width = img_size
        return str(height) if height == width else f"{height}x{width}"
    return str(img_size)


def parse_img_size(text: Any) -> ImgSize:
    """``None``/"default" -> None; 224 or "224" -> 224; "384x256" or (384, 256) -> (384, 256)."""
    from visprof.models import normalize_img_size

    if text is None or text == "default":
        return None
    value = text
    if isinstance(text, str):
        parts = text.strip().lower().replace(",", "x").split("x")
        try:
            sides = [int(p) for p in parts]
        except ValueError:
            raise BadInputError(f"image size must be N or HxW, got {text!r}") from None
        value = sides[0] if len(sides) == 1 else sides
    height, width = normalize_img_size(value)  # BadInputError for anything else
    return height if height == width else (height, width)


@dataclass(frozen=True)
class Cell:
    """One profile call of the sweep (the requested configuration, before any batch decay)."""

    model: str
    batch_size: int
    img_size: ImgSize = None
    precision: str = "bf16"
    channels_last: bool = False
    passes: tuple[str, ...] = PASSES
    # Further keyword arguments of visprof.profile (warmup, iterations, compile, ...), sorted.
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def key(self) -> str:
        parts = [
            self.model,
            f"b{self.batch_size}",
            f"img={img_size_text(self.img_size)}",
            self.precision,
            "nhwc" if self.channels_last else "nchw",
            "+".join(self.passes),
        ]
        parts += [f"{k}={json.dumps(v, sort_keys=True, separators=(',', ':'))}" for k, v in self.options]
        return "|".join(parts)

    @property
    def config_text(self) -> str:
        """The configuration without the model, for progress lines."""
        return self.key.split("|", 1)[1]

    def profile_kwargs(self, batch_size: int, device: str) -> dict[str, Any]:
        """The keyword arguments of the ``visprof.profile`` call for this cell at ``batch_size``."""
        return {
            "batch_size": batch_size,
            "img_size": self.img_size,
            "precision": self.precision,
            "channels_last": self.channels_last,
            "device": device,
            "passes": list(self.passes),
            **dict(self.options),
            "progress": False,
            "search_batch": False,  # the sweep decays the batch itself, as timm's benchmark.py does
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "batch_size": self.batch_size,
            "img_size": list(self.img_size) if isinstance(self.img_size, tuple) else self.img_size,
            "precision": self.precision,
            "channels_last": self.channels_last,
            "passes": list(self.passes),
            "options": [[k, v] for k, v in self.options],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Cell":
        img = data.get("img_size")
        return cls(
            model=data["model"],
            batch_size=int(data["batch_size"]),
            img_size=tuple(img) if isinstance(img, list) else img,
            precision=data["precision"],
            channels_last=bool(data["channels_last"]),
            passes=tuple(data["passes"]),
            options=tuple((k, v) for k, v in data.get("options", [])),
        )


@dataclass
class SweepPlan:
    """Models crossed with batch sizes, image sizes, precisions and layouts, model-major.

    Empty lists take visprof's defaults for ``device_kind`` ("cuda" or "cpu"): batch 64 and
    bf16 on a GPU, batch 2 and fp32 on the CPU, the model's own image size, NCHW.
    """

    models: Sequence[str]
    device_kind: str = "cuda"
    batch_sizes: Sequence[int] = ()
    img_sizes: Sequence[ImgSize] = ()
    precisions: Sequence[str] = ()
    channels_last: Sequence[bool] = ()
    passes: Sequence[str] = PASSES
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.device_kind not in ("cuda", "cpu"):
            raise ValueError(f"device_kind must be 'cuda' or 'cpu', got {self.device_kind!r}")
        self.models = list(self.models)
        if not self.models:
            raise BadInputError("the sweep has no models")
        self.batch_sizes = _unique(self.batch_sizes) or [DEFAULT_BATCH[self.device_kind]]
        for batch in self.batch_sizes:
            if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
                raise BadInputError(f"batch sizes must be integers >= 1, got {batch!r}")
        self.img_sizes = _unique(parse_img_size(s) for s in self.img_sizes) or [None]
        self.precisions = _unique(self.precisions) or [DEFAULT_PRECISION[self.device_kind]]
        bad = [p for p in self.precisions if p not in PRECISIONS]
        if bad:
            raise BadInputError(f"unknown precision {bad[0]!r}; choose from {', '.join(PRECISIONS)}")
        self.channels_last = _unique(bool(c) for c in self.channels_last) or [False]
        passes = _unique(self.passes)
        unknown = [p for p in passes if p not in PASSES]
        if unknown or not passes:
            raise BadInputError(f"unknown pass(es) {unknown or passes!r}; choose from {', '.join(PASSES)}")
        # The order profile() runs them in, so the same set always makes the same key.
        self.passes = tuple(p for p in PASSES if p in passes)
        if self.device_kind == "cpu":  # the memory pass needs a GPU; profile() would drop it too
            self.passes = tuple(p for p in self.passes if p != "memory") or ("timing",)
        self.options = dict(sorted(self.options.items()))

    def cells(self) -> list[Cell]:
        options = tuple(self.options.items())
        return [
            Cell(model, batch, img, precision, layout, tuple(self.passes), options)
            for model, img, precision, layout, batch in itertools.product(
                self.models, self.img_sizes, self.precisions, self.channels_last, self.batch_sizes)
        ]

    def __len__(self) -> int:
        return (len(self.models) * len(self.img_sizes) * len(self.precisions) * len(self.channels_last)
                * len(self.batch_sizes))


def _unique(values: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(values))
