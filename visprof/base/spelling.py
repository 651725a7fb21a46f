"""An option named in the caller's terms.

A message that tells the user which option to change names it as the user gives it: a Python
caller (a script, a notebook) reads the keyword argument, ``batch_size=8``; a user of the command
line reads the flag, ``--batch-size 8``. Messages are written once, with ``option()`` where an
option is named:

    f"the largest batch that fits is {best} ({option('batch_size', best)})"

Outside the CLI that reads ``(batch_size=8)``. The CLI runs every command inside
``command_line()`` (visprof/cli/app.py), where it reads ``(--batch-size 8)``; a sweep's workers
and ``visprof ncu``'s child process are told which their driver uses. The text is made when the
message is: an error keeps a plain string, so it pickles, and a sweep stores it as it was said.

A plain module-level switch rather than a context variable: a command's threads (a sweep's
Ray tasks, a worker's pumps) say what the command says.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

__all__ = ["command_line", "on_command_line", "option", "options", "either"]

_on_command_line = False
_NO_VALUE = object()


@contextlib.contextmanager
def command_line(on: bool = True) -> Iterator[None]:
    """Messages made inside name options as the command line's flags (``on=False``: as Python's
    keywords, the default outside)."""
    global _on_command_line
    before, _on_command_line = _on_command_line, bool(on)
    try:
        yield
    finally:
        _on_command_line = before


def on_command_line() -> bool:
    return _on_command_line


def either(python: str, command_line: str) -> str:
    """``python`` or ``command_line``, whichever the caller speaks: for a remedy that is not one
    option (``gpu_table(extra=FILE)`` against ``--gpus FILE``)."""
    return command_line if _on_command_line else python


def option(keyword: str, value: Any = _NO_VALUE, *, flag: str | None = None, metavar: str | None = None) -> str:
    """The option ``keyword`` (a Python keyword argument), in the caller's terms.

    ``flag`` is its command-line flag where that is not ``--`` and the keyword with dashes
    (``time_budget_s`` is ``--time-budget``). With a ``value``: ``batch_size=8`` or
    ``--batch-size 8``; ``device='cpu'`` or ``--device cpu``; a tuple or list is a list in Python
    and comma-separated on the command line (``passes=['timing', 'attributed']``,
    ``--passes timing,attributed``);
    True is the bare flag there (``retry_failed=True``, ``--retry-failed``). Without a value:
    ``img_size`` or ``--img-size``; with a ``metavar`` standing for one, ``model_list=FILE`` or
    ``--model-list FILE``.
    """
    if not _on_command_line:
        if value is _NO_VALUE:
            return f"{keyword}={metavar}" if metavar else keyword
        if isinstance(value, tuple):
            value = list(value)  # passes=['timing'], not passes=('timing',)
        return f"{keyword}={value!r}"
    flag = flag or "--" + keyword.replace("_", "-")
    if value is _NO_VALUE:
        return f"{flag} {metavar}" if metavar else flag
    if value is True:
        return flag
    if isinstance(value, (tuple, list)):
        value = ",".join(map(str, value))
    return f"{flag} {value}"


def options(**values: Any) -> str:
    """Several options with values, as one would give them: ``grad_mode='no_grad', autocast='whole-loop'``
    or ``--grad-mode no_grad --autocast whole-loop`` (flags as ``option`` makes them)."""
    return (" " if _on_command_line else ", ").join(option(keyword, value) for keyword, value in values.items())
