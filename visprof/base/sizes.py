"""Checks of the sizes a user gives (batch size, image size), without torch.

They live below the passes so that the CLI can check ``--img-size`` and ``-b`` before it
imports torch and timm (a Ctrl-C is held while those import; a typo should be said first).
"""
from __future__ import annotations

import operator
from typing import Any

from visprof.base.errors import BadInputError

__all__ = ["MIN_IMG_SIZE", "NAMED_SIZES", "normalize_img_size", "parse_img_size", "validate_batch_size"]

MIN_IMG_SIZE = 8


def validate_batch_size(batch_size: Any) -> int:
    """``batch_size`` as an int >= 1, else ``BadInputError``."""
    value = _as_int(batch_size)
    if value is None or value < 1:
        raise BadInputError(f"batch size must be an integer >= 1, got {batch_size!r}")
    return value


# The named sizes of a pretrained config: the test size (the default, as timm's benchmark.py
# resolves it with use_test_size=True) or the training input_size.
NAMED_SIZES = ("test", "train")


def normalize_img_size(img_size: Any, shown: Any = None) -> tuple[int, int] | str | None:
    """``None``, "test", "train", an int N, an (H, W) pair, or the CLI's text ("224", "96x160") ->
    ``None``, the name, or ``(H, W)``, each side >= 8. Python takes what --img-size takes: the
    text form had been refused from Python only."""
    if img_size is None:
        return None
    if isinstance(img_size, str) and img_size.strip().lower() in NAMED_SIZES:
        return img_size.strip().lower()
    if isinstance(img_size, str) and shown is None:
        parsed = parse_img_size(img_size)  # checked there, the user's text in its errors
        return (parsed, parsed) if isinstance(parsed, int) else parsed
    shown = img_size if shown is None else shown  # the user's own text, in errors
    sides = _as_two_ints(img_size)
    if sides is None:
        raise BadInputError(f"image size must be an integer, an (H, W) pair, test or train, got {shown!r}")
    if min(sides) < MIN_IMG_SIZE:
        raise BadInputError(f"image size must be at least {MIN_IMG_SIZE} pixels a side, got {shown!r}")
    return sides


def parse_img_size(text: Any) -> int | tuple[int, int] | str | None:
    """A size as a user writes it -> its one form: ``None``/"default" -> None; "test"/"train" -> the
    name; 224 or "224" -> 224; "384x256" or (384, 256) -> (384, 256); "256x256" -> 256."""
    if text is None or text == "default":
        return None
    if isinstance(text, str) and text.strip().lower() in NAMED_SIZES:
        return text.strip().lower()
    value = text
    if isinstance(text, str):
        parts = text.strip().lower().replace(",", "x").split("x")
        try:
            sides = [int(p) for p in parts]
        except ValueError:
            sides = []
        if len(sides) not in (1, 2):
            raise BadInputError(f"image size must be N, HxW, test or train, got {text!r}")
        value = sides[0] if len(sides) == 1 else sides
    height, width = normalize_img_size(value, shown=text)  # BadInputError for anything else
    return height if height == width else (height, width)


def _as_int(value: Any) -> int | None:
    """Ints and numpy ints; not floats, strings or bools (True as a size is a mistake)."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _as_two_ints(value: Any) -> tuple[int, int] | None:
    side = _as_int(value)
    if side is not None:
        return side, side
    if isinstance(value, (str, bytes)):
        return None
    try:
        items = list(value)
    except TypeError:
        return None
    if len(items) != 2:
        return None
    height, width = _as_int(items[0]), _as_int(items[1])
    return (height, width) if height is not None and width is not None else None
