"""A sweep's arguments checked before it starts: numbers (timeout, retries, budget, workers) and
the ``visprof.profile`` options it passes on to every cell (``-O KEY=VALUE``). A value every cell
would refuse is one error now, not a final failure stored per cell and a sweep that exits 0.
"""
from __future__ import annotations

import json
import math
from typing import Any, Mapping

from visprof.base.errors import BadInputError
from visprof.base.spelling import option

__all__ = ["check_numbers", "check_profile_options"]

_CALLABLES = {"on_trace"}  # profile() options that take a function
# Keyword arguments of visprof.profile that the sweep sets itself, per cell: a refusal of one in
# profile_options (-O) names the sweep's own option for it (keyword, flag) ...
_SWEEP_OWN = {"model": ("models", "MODEL arguments"), "batch_size": ("batch_sizes", "--batch-size"),
              "img_size": ("img_sizes", "--img-size"), "precision": ("precisions", "--precision"),
              "channels_last": ("channels_last", "--memory-format"), "device": ("device", "--device"),
              "passes": ("passes", "--passes"), "progress": ("progress", "--quiet")}
# ... or says why a sweep has none.
_NO_FILES = "a sweep writes no file per cell (profile one model for that)"
_OWN_CATEGORIES = "a sweep attributes every cell with the built-in categories"
_NOT_IN_A_SWEEP = {"search_batch": "the sweep decays a batch that does not fit itself, as timm's benchmark.py does",
                   "trace_path": _NO_FILES, "recording_path": _NO_FILES,
                   "table": _OWN_CATEGORIES, "category_file": _OWN_CATEGORIES,
                   "in_chans": "a sweep profiles timm models, built with their own channels (in_chans is for a module "
                               "of yours, profiled with visprof.profile)"}
_SET_BY_SWEEP = _SWEEP_OWN.keys() | _NOT_IN_A_SWEEP.keys()


def check_numbers(timeout_s, retries, time_budget_s, workers) -> None:
    for name, seconds in ((option("timeout_s", flag="--timeout"), timeout_s),
                          (option("time_budget_s", flag="--time-budget"), time_budget_s)):
        if seconds is not None and not _positive_seconds(seconds):
            raise BadInputError(f"{name} must be a positive, finite number of seconds, got {seconds!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise BadInputError(f"{option('retries')} must be an integer >= 0, got {retries!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise BadInputError(f"{option('workers')} must be an integer >= 1, got {workers!r}")


def _positive_seconds(value) -> bool:
    # NaN compares false with everything: "nan <= 0" let it through, and the wait loop then failed on it.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def check_profile_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` checked, with a choice's value as profile() reads it (``grad_mode=NO_GRAD`` is
    ``no_grad``): the cell key is made of these values, and a key keeping the case as typed made the
    same measurement a new cell, measured and stored again."""
    if not options:
        return {}
    import inspect

    from visprof.profiler import profile

    accepted = set(inspect.signature(profile).parameters) - _SET_BY_SWEEP
    checked = {}
    for key, value in options.items():
        if key in _SET_BY_SWEEP:
            raise BadInputError(_refusal(key))
        if key not in accepted:
            # Only what a sweep can pass on: on_trace is a keyword of profile() but is refused below.
            raise BadInputError(f"unknown profile option {key!r}; a sweep passes on "
                                f"{', '.join(sorted(accepted - _CALLABLES))}")
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise BadInputError(f"profile option {key}={value!r} is not a plain value (number, string, list)") from None
        checked[key] = _check_profile_value(key, value)
    return checked


def _refusal(key: str) -> str:
    """Why profile option ``key`` (one of ``_SET_BY_SWEEP``) is refused, and what to give instead."""
    if key in _SWEEP_OWN:
        keyword, flag = _SWEEP_OWN[key]
        return f"profile option {key!r} is set by the sweep itself: use the sweep's own {option(keyword, flag=flag)}"
    return f"profile option {key!r} is not for a sweep: {_NOT_IN_A_SWEEP[key]}"


def _check_profile_value(key: str, value: Any) -> Any:
    """``value`` as profile() reads it. The values profile() would refuse, refused before the sweep: else
    every cell fails with the same BadInputError, each stored as a final failure, and the sweep exits 0."""
    from visprof.base.options import AUTOCAST_MODES, GRAD_MODES
    from visprof.passes.setup import COUNT_MINIMUMS, check_counts, check_flag, choice

    if key in _CALLABLES:  # "-O on_trace=x" was taken, and every cell then failed calling "x"
        raise BadInputError(f"profile option {key} takes a Python function, which a sweep cannot hand its workers; "
                            f"call visprof.profile({key}=...) from a script")
    try:
        if key in COUNT_MINIMUMS:
            check_counts(**{key: value})
        elif key == "grad_mode":
            return choice("grad_mode", value, GRAD_MODES)
        elif key == "autocast":
            return choice("autocast", value, AUTOCAST_MODES)
        elif key == "compile":
            check_flag("compile", value)
    except BadInputError as error:
        raise BadInputError(f"profile option {key}: {error}") from None
    return value
