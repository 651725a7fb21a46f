"""The argument types every ``visprof`` command shares: one definition, one error wording."""
from __future__ import annotations

import argparse
import time

from visprof.base.errors import BadInputError
from visprof.base.options import PASSES
from visprof.base.sizes import parse_img_size

__all__ = ["positive_int", "non_negative_int", "int_at_least", "fold_count", "img_size", "pass_list",
           "COMMAND_STARTED"]

# When the command began, before torch and timm were imported (seconds of their own): a time
# limit the user gives (sweep --time-budget) is of the whole command, not of what follows them.
COMMAND_STARTED = time.monotonic()


def positive_int(text: str) -> int:
    return int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    return int_at_least(text, 0)


def fold_count(text: str) -> int:
    """A number of cross-validation folds: one fold leaves nothing to fit on."""
    return int_at_least(text, 2)


def int_at_least(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
    return value


def img_size(text: str) -> int | tuple[int, int] | str | None:
    """``224``, ``HxW`` (``384x256``), ``test`` or ``train``, each side >= 8: checked here, before
    the command imports torch and timm."""
    try:
        return parse_img_size(text)
    except BadInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def pass_list(text: str) -> tuple[str, ...]:
    """``timing,attributed`` -> ("timing", "attributed"), in the order given, no repeats."""
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in PASSES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"passes must be a comma-separated subset of {','.join(PASSES)}, got {text!r}"
        )
    return tuple(dict.fromkeys(names))
