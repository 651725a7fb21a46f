"""The cells of a sweep: every model crossed with every configuration.

One cell is one ``visprof.profile(...)`` call. Its ``key`` is a canonical, readable string
of everything that shapes the measurement (model, requested batch and image size, precision,
layout, passes, extra profile options); the store keys rows by it, with the GPU and the
software versions, so the same sweep run again finds its finished cells.

The driver plans, and skips finished cells, before any worker starts.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from visprof.base.errors import BadInputError
from visprof.base.options import DEFAULT_BATCH, DEFAULT_PRECISION, PRECISIONS, passes_for
from visprof.base.sizes import parse_img_size
from visprof.base.spelling import option
from visprof.store.cell import Cell, ImgSize, img_size_text

__all__ = ["Cell", "SweepPlan", "img_size_text", "split_sized"]

# ``resnet50@160``: a model entry with an image size of its own, as timm's tables list a model once
# per size; the plan's image sizes do not apply to it.
SIZE_MARK = "@"


def split_sized(entry: str) -> tuple[str, ImgSize]:
    """``"resnet50@160"`` -> ("resnet50", 160); a plain name -> (name, None)."""
    name, mark, size = entry.rpartition(SIZE_MARK)
    if not mark:
        return entry, None
    if not name or not size.strip():
        raise BadInputError(f"model entry {entry!r}: give MODEL@SIZE, e.g. resnet50@160")
    try:
        return name, parse_img_size(size)
    except BadInputError as exc:
        raise BadInputError(f"model entry {entry!r}: {exc}") from None


@dataclass
class SweepPlan:
    """Models crossed with batch sizes, image sizes, precisions and layouts, model-major.

    Empty lists take visprof's defaults for ``device_kind`` ("cuda" or "cpu"): batch 64 and
    bf16 on a GPU, batch 2 and fp32 on the CPU, the model's own image size, NCHW. ``passes``
    None takes every pass the device can run (on the CPU not the memory pass, which needs a
    GPU); asking a CPU plan for the memory pass is a BadInputError, as ``visprof.profile``'s.
    """

    models: Sequence[str]
    device_kind: str = "cuda"
    batch_sizes: Sequence[int] = ()
    img_sizes: Sequence[ImgSize] = ()
    precisions: Sequence[str] = ()
    channels_last: Sequence[bool] = ()
    passes: Sequence[str] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.device_kind not in ("cuda", "cpu"):
            raise ValueError(f"device_kind must be 'cuda' or 'cpu', got {self.device_kind!r}")
        self.models = _listed(self.models, "models")
        if not self.models:
            raise BadInputError("the sweep has no models")
        # One value where a list is asked for (run_sweep(precisions="fp32")) is that value, not its
        # letters ("unknown precision 'f'"), nor a TypeError (batch_sizes=2)
        self.batch_sizes, self.img_sizes, self.precisions, self.channels_last = (
            _listed(self.batch_sizes, "batch_sizes"), _listed(self.img_sizes, "img_sizes"),
            _listed(self.precisions, "precisions"), _listed(self.channels_last, "channels_last"))
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
        # As profile() takes them (None: all the device can run; memory refused on the CPU), in the
        # order it runs them, so the same set always makes the same key.
        try:
            self.passes = passes_for(None if self.passes is None else _unique(self.passes), self.device_kind)
        except BadInputError as exc:
            if self.device_kind != "cpu" or "memory" not in self.passes:
                raise
            raise BadInputError(f"this sweep runs on the CPU ({option('device', 'cpu')}, or no GPU visible), "
                                f"and {exc}") from None
        self.options = dict(sorted(self.options.items()))
        self._cells = self._crossed()

    def _crossed(self) -> list[Cell]:
        """Each cell once: ``resnet50@224`` and ``resnet50`` with ``--img-size 224`` name one cell,
        which had run twice (the store kept one row; the summary counted two)."""
        options = tuple(self.options.items())
        cells: dict[str, Cell] = {}
        for entry in self.models:
            model, own = split_sized(entry)
            for img, precision, layout, batch in itertools.product(
                    [own] if own is not None else self.img_sizes, self.precisions, self.channels_last, self.batch_sizes):
                cell = Cell(model, batch, img, precision, layout, tuple(self.passes), options)
                cells.setdefault(cell.key, cell)
        return list(cells.values())

    def cells(self) -> list[Cell]:
        return list(self._cells)

    def __len__(self) -> int:
        return len(self._cells)

    def model_count(self) -> int:
        """Models, not entries: ``resnet50@224`` and ``resnet50@288`` are one model."""
        return len({split_sized(entry)[0] for entry in self.models})


def _listed(values: Any, name: str) -> list[Any]:
    """``values`` as a list: one string, number or bool is a list of that one value."""
    if isinstance(values, (str, int, bool)):
        return [values]
    if not isinstance(values, Iterable):
        raise BadInputError(f"{name} must be a list (or one value), got {type(values).__name__} {values!r}")
    return list(values)


def _unique(values: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(values))
