"""The cells of a sweep: every model crossed with every configuration.

One cell is one ``visprof.profile(...)`` call. Its ``key`` is a canonical, readable string
of everything that shapes the measurement (model, requested batch and image size, precision,
layout, passes, extra profile options); the store keys rows by it, with the GPU and the
software versions, so the same sweep run again finds its finished cells.

The driver plans, and skips finished cells, before any worker starts.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

from visprof.base.errors import BadInputError
from visprof.base.options import DEFAULT_BATCH, DEFAULT_PRECISION, PRECISIONS, idle_autocast_note, passes_for
from visprof.base.sizes import parse_img_size
from visprof.base.spelling import option
from visprof.store.cell import Cell, ImgSize, img_size_text

__all__ = ["Cell", "ModelSizes", "SweepPlan", "img_size_text", "split_sized"]

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


@dataclass(frozen=True)
class ModelSizes:
    """What a model runs at by default, as its pretrained config says, without building it."""

    name: str  # the name with its pretrained tag spelled out: resnet18 is resnet18.a1_in1k
    train: tuple[int, int]  # the size the model is built for, and fed at --img-size train
    test: tuple[int, int]  # fed at --img-size test and by default: train where the config has no test size


@dataclass
class SweepPlan:
    """Models crossed with batch sizes, image sizes, precisions and layouts, model-major.

    Empty lists take visprof's defaults for ``device_kind`` ("cuda" or "cpu"): batch 64 and
    bf16 on a GPU, batch 2 and fp32 on the CPU, the model's own image size, NCHW. ``passes``
    None takes every pass the device can run (on the CPU not the memory pass, which needs a
    GPU); asking a CPU plan for the memory pass is a BadInputError, as ``visprof.profile``'s.

    ``sizes`` (a model name -> its ``ModelSizes``, or None where unknown) lets the plan see cells
    that measure the same thing under other spellings (``--img-size test,train,224`` of a model
    with no test size, ``resnet18`` beside ``resnet18.a1_in1k``) and make them one cell, under the
    first spelling's key; ``spellings(cell)`` gives every key it stands for, and ``merged`` how
    many were folded in. Without it, only identical keys are one cell.
    """

    models: Sequence[str]
    device_kind: str = "cuda"
    batch_sizes: Sequence[int] = ()
    img_sizes: Sequence[ImgSize] = ()
    precisions: Sequence[str] = ()
    channels_last: Sequence[bool] = ()
    passes: Sequence[str] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    sizes: Callable[[str], ModelSizes | None] | None = None

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
        self._cells, self._spellings, self.merged = self._crossed()

    def _crossed(self) -> tuple[list[Cell], dict[str, list[str]], int]:
        """Each cell once (with the keys of every spelling of it, and how many spellings were folded
        into another's cell): ``resnet50@224`` and ``resnet50`` with ``--img-size 224`` name one cell,
        which had run twice (the store kept one row; the summary counted two), and so do the
        spellings ``_measured`` finds alike."""
        options = tuple(self.options.items())
        firsts: dict[Hashable, Cell] = {}
        spellings: dict[str, list[str]] = {}
        merged = 0
        for entry in self.models:
            model, own = split_sized(entry)
            sizes = self.sizes(model) if self.sizes is not None else None
            aliases = self._aliases(model, sizes)
            for img, precision, layout, batch in itertools.product(
                    [own] if own is not None else self.img_sizes, self.precisions, self.channels_last, self.batch_sizes):
                cell = Cell(model, batch, img, precision, layout, tuple(self.passes), options)
                first = firsts.setdefault(_measured(cell, sizes), cell)
                merged += first is not cell
                keys = spellings.setdefault(first.key, [])
                # the model's other name too: a store swept as `resnet18` holds `resnet18.a1_in1k`'s cell
                for key in [cell.key, *(replace(cell, model=alias).key for alias in aliases)]:
                    if key not in keys:
                        keys.append(key)
        return list(firsts.values()), spellings, merged

    def _aliases(self, model: str, sizes: ModelSizes | None) -> list[str]:
        """The model's other name in timm: its default tag spelled out (``resnet18.a1_in1k`` for
        ``resnet18``), or left out where ``model`` names the default tag."""
        if sizes is None:
            return []
        if sizes.name != model:
            return [sizes.name]
        untagged = model.split(".", 1)[0]
        if untagged != model and self.sizes(untagged) == sizes:
            return [untagged]
        return []

    def cells(self) -> list[Cell]:
        return list(self._cells)

    def spellings(self, cell: Cell) -> list[str]:
        """The keys ``cell`` stands for, its own first: a store holds it under any of them."""
        return list(self._spellings[cell.key])

    def __len__(self) -> int:
        return len(self._cells)

    def notes(self) -> list[str]:
        """Options that change nothing in some of the plan's cells, as ``visprof.profile`` notes them in
        a result (``autocast=whole-loop`` at fp32: those cells get keys and rows of their own)."""
        notes = (idle_autocast_note(self.options.get("autocast"), precision) for precision in self.precisions)
        return [note for note in notes if note is not None]

    def model_count(self) -> int:
        """Models, not entries: ``resnet50@224`` and ``resnet50@288`` are one model (and so are
        ``resnet18`` and ``resnet18.a1_in1k`` where ``sizes`` says they are)."""
        return len({cell.model for cell in self._cells})


def _measured(cell: Cell, sizes: ModelSizes | None) -> Hashable:
    """What ``cell`` measures: equal for two cells that build the same model and feed it the same
    input in the same configuration. Without ``sizes`` that is its key. With them, a named size is
    the size it resolves to (``test`` is ``train`` where the config has no test size), an untagged
    name is its default tag, and an explicit size equal to the training size is the default build:
    timm builds a model for its training size when given none. Checked on timm 1.0.31's 1371
    architectures (on the meta device): 692 take no ``img_size``; the 570 of fixed input size get
    ``img_size=<train>`` from timm itself (same module tree and parameter shapes either way); the
    other 109 built the same tree, shapes and plain attributes with it and without. Any other explicit
    size is kept apart, even where it equals the test size: a model that takes ``img_size`` is built
    for it, while ``test`` feeds it to the default build."""
    if sizes is None:
        return cell.key
    img = cell.img_size
    if img is None or isinstance(img, str):
        build, fed = "default", sizes.train if img == "train" else sizes.test
    else:
        fed = (img, img) if isinstance(img, int) else tuple(img)
        build = "default" if fed == sizes.train else fed
    # the rest of the configuration as the key writes it (option values may be lists: not hashable)
    return build, replace(cell, model=sizes.name, img_size=fed).key


def _listed(values: Any, name: str) -> list[Any]:
    """``values`` as a list: one string, number or bool is a list of that one value."""
    if isinstance(values, (str, int, bool)):
        return [values]
    if not isinstance(values, Iterable):
        raise BadInputError(f"{name} must be a list (or one value), got {type(values).__name__} {values!r}")
    return list(values)


def _unique(values: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(values))
