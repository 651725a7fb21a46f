"""The aligned text table every terminal report prints (no other dependency, so any report can use it)."""
from __future__ import annotations

from typing import Sequence

__all__ = ["format_table"]


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int | None = None) -> list[str]:
    """Left-align the first column, right-align the rest; shrink the first to fit ``width``."""
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    if width is not None:
        excess = sum(widths) + 2 * (len(widths) - 1) - width
        widths[0] = max(8, widths[0] - max(excess, 0))

    def line(cells: Sequence[str]) -> str:
        first = str(cells[0])
        if len(first) > widths[0]:
            first = first[: widths[0] - 1] + "…"
        rest = [str(c).rjust(w) for c, w in zip(cells[1:], widths[1:])]
        return "  ".join([first.ljust(widths[0]), *rest]).rstrip()

    rule = "-" * len(line(headers))
    return [line(headers), rule, *(line(r) for r in rows)]
