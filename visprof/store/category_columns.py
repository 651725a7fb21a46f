"""The wide form of a store's per-category figures: one column per category and figure
(``time_ms.attention``, ``share.attention``, ``flops.attention``, ``live_bytes.attention``,
``reserved_bytes.attention``) beside each result's flattened row, as ``store.dataframe()`` and
``visprof export`` give them. Sub-categories are summed into their category.
"""
from __future__ import annotations

import sqlite3
from typing import Any

__all__ = ["with_category_columns"]

# The figures in the order their columns follow the flattened ones.
_FIGURE_ORDER = ("time_ms", "share", "flops", "live_bytes", "reserved_bytes")


def with_category_columns(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> list[str]:
    """Adds each result row's category figures to it (None where a result lacks one that another
    has) and returns the added column names, figure by figure, categories in the order first met."""
    wide = _category_figures(conn, {row["id"] for row in rows})
    extra: dict[str, None] = {}
    for row in rows:
        figures = wide.get(row["id"], {})
        extra.update(dict.fromkeys(figures))
        row.update(figures)
    first_met = list(extra)
    columns = sorted(extra, key=lambda c: (_FIGURE_ORDER.index(c.split(".", 1)[0]), first_met.index(c)))
    for row in rows:
        for column in columns:
            row.setdefault(column, None)
    return columns


def _category_figures(conn: sqlite3.Connection, ids: set[int]) -> dict[int, dict[str, Any]]:
    """{result id: {column: value}} of the results ``ids`` from result_categories and result_memory."""
    wide: dict[int, dict[str, Any]] = {}
    for row in conn.execute("SELECT result_id, category, time_ms, share, flops FROM result_categories"
                            " ORDER BY result_id, rowid"):
        if row["result_id"] not in ids:
            continue
        out = wide.setdefault(row["result_id"], {})
        for figure in ("time_ms", "share", "flops"):
            if row[figure] is not None:
                key = f"{figure}.{row['category']}"
                out[key] = out.get(key, 0.0) + row[figure]
    exact: set[tuple[int, str]] = set()
    for row in conn.execute("SELECT result_id, key, allocated_at_peak, reserved_at_peak FROM result_memory"
                            " ORDER BY result_id, rowid"):
        if row["result_id"] not in ids:
            continue
        out = wide.setdefault(row["result_id"], {})
        category, _, sub = row["key"].partition("/")
        for figure, column in (("live_bytes", "allocated_at_peak"), ("reserved_bytes", "reserved_at_peak")):
            if row[column] is None:
                continue
            key = f"{figure}.{category}"
            # A category-level figure is the category's own; sub-keys add up only without one.
            if not sub:
                out[key] = row[column]
                exact.add((row["result_id"], key))
            elif (row["result_id"], key) not in exact:
                out[key] = out.get(key, 0) + row[column]
    return wide
