"""One cell of a sweep: a model crossed with one configuration, and the key the store files it under.

One cell is one ``visprof.profile(...)`` call. Its ``key`` is a canonical, readable string
of everything that shapes the measurement (model, requested batch and image size, precision,
layout, passes, extra profile options); the store keys rows by it, with the GPU and the
software versions, so the same sweep run again finds its finished cells.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from visprof.base.options import PASSES, PROFILE_OPTION_DEFAULTS

__all__ = ["Cell", "ImgSize", "canonical_key", "img_size_text"]

ImgSize = Any  # None (the model's default), an int, or an (H, W) pair


def img_size_text(img_size: ImgSize) -> str:
    if img_size is None:
        return "default"
    if isinstance(img_size, (tuple, list)):
        height, width = img_size
        return str(height) if height == width else f"{height}x{width}"
    return str(img_size)


def _option_text(name: str, value: Any) -> str:
    return f"{name}={json.dumps(value, sort_keys=True, separators=(',', ':'))}"


# A key names a cell by what is measured: the size the model runs at by default is its test size,
# and profile()'s own defaults restated change nothing, so neither appears in a key.
_DEFAULT_SIZE_PART, _TEST_SIZE_PART = "img=default", "img=test"
_DEFAULT_OPTION_PARTS = frozenset(_option_text(name, value) for name, value in PROFILE_OPTION_DEFAULTS.items())


def canonical_key(key: str) -> str:
    """A stored cell key as ``Cell.key`` writes it now. Keys written before it dropped restated
    defaults (``img=test``, ``grad_mode="inference_mode"``) name the cell without them, so a store
    swept with ``--img-size test`` is resumed, not swept again, by a run without it."""
    parts = key.split("|")
    head, options = parts[:6], parts[6:]
    head = [_DEFAULT_SIZE_PART if part == _TEST_SIZE_PART and i == 2 else part for i, part in enumerate(head)]
    return "|".join(head + [part for part in options if part not in _DEFAULT_OPTION_PARTS])


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
        parts += [_option_text(k, v) for k, v in self.options]
        return canonical_key("|".join(parts))

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
