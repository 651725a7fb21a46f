"""The store's reference table: throughputs measured elsewhere (timm's benchmark CSVs, a user's
own table), which ``visprof compare`` and ``calibrate`` set against the profiles.

A reference row is identified by its source, GPU, model, image size, batch and precision
(``schema.REFERENCE_IDENTITY``); adding one the store holds already keeps the stored row.
``ResultStore.add_references`` / ``references`` / ``differing_references`` are the entry points.
"""
from __future__ import annotations

import fnmatch
import json
import sqlite3
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping

from visprof.base.errors import BadInputError
from visprof.base.pandas_import import import_pandas
from visprof.store.flatten import compact_json
from visprof.store.model_filter import matches_model, model_globs
from visprof.store.schema import REFERENCE_IDENTITY
from visprof.store.store_file import utc_now

__all__ = ["Reference", "reference_rows", "insert_reference_rows", "differing_references", "read_references",
           "references_frame"]


@dataclass
class Reference:
    """A throughput measured elsewhere, e.g. one row of a timm benchmark CSV.

    Units follow timm's CSVs: ``step_time_ms`` per batch, ``param_count_m`` in millions,
    ``gmacs`` per sample, ``macts_m`` (activations) in millions."""

    source: str  # where it came from: a file name, a URL, a paper
    gpu_name: str  # e.g. "NVIDIA GeForce RTX 4090"
    model: str
    img_size: int
    batch_size: int
    precision: str  # e.g. "amp-fp16", "bf16", "fp32"
    samples_per_s: float | None = None
    step_time_ms: float | None = None
    param_count_m: float | None = None
    gmacs: float | None = None
    macts_m: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # any other columns of the source

    _COLUMNS = ("source", "gpu_name", "model", "img_size", "batch_size", "precision", "samples_per_s",
                "step_time_ms", "param_count_m", "gmacs", "macts_m")


def reference_rows(references: Iterable[Reference | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The table's rows of ``references`` (Reference objects or their fields as a mapping), each
    checked for what identifies it; BadInputError for one without a source, GPU name or model."""
    rows = []
    for ref in references:
        ref = ref if isinstance(ref, Reference) else Reference(**ref)
        if not ref.model or not ref.gpu_name or not ref.source:
            raise BadInputError(f"a reference needs a source, a GPU name and a model: {ref}")
        values = asdict(ref)
        values["extra"] = compact_json(values.pop("extra") or {})
        values["imported_at"] = utc_now()
        rows.append(values)
    return rows


def insert_reference_rows(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> int:
    """Inserts ``rows`` (``reference_rows``) inside the caller's transaction; how many were new."""
    names = list(rows[0])
    before = conn.total_changes
    conn.executemany(f'INSERT OR IGNORE INTO "references" ({", ".join(names)}) '
                     f'VALUES ({", ".join("?" * len(names))})', [[r[n] for n in names] for r in rows])
    return conn.total_changes - before


def differing_references(conn: sqlite3.Connection,
                         references: Iterable[Reference | Mapping[str, Any]]
                         ) -> list[tuple[Mapping[str, Any], float | None]]:
    """(reference, stored samples/s) for each of ``references`` already stored with another throughput;
    None where the stored one has none (samples_per_s is optional: a reference may give its step time alone)."""
    out = []
    for ref in references:
        ref = asdict(ref) if isinstance(ref, Reference) else ref
        row = conn.execute(
            f'SELECT samples_per_s FROM "references" WHERE {" AND ".join(f"{c} = ?" for c in REFERENCE_IDENTITY)}',
            [ref.get(c) for c in REFERENCE_IDENTITY]).fetchone()
        if row is not None and row[0] != ref.get("samples_per_s"):
            out.append((ref, None if row[0] is None else float(row[0])))
    return out


def read_references(conn: sqlite3.Connection, *, gpu_name: str | None = None, model: str | None = None,
                    source: str | None = None) -> list[Reference]:
    """The stored references, oldest first; each filter is a shell pattern (``*4090*``, ``vit_*``)."""
    out, globs = [], model_globs(model)
    for row in conn.execute('SELECT * FROM "references" ORDER BY id'):
        if not matches_model(str(row["model"]), globs) or any(
                pattern is not None and not fnmatch.fnmatchcase(str(row[column]), pattern)
                for column, pattern in (("gpu_name", gpu_name), ("source", source))):
            continue
        values = {name: row[name] for name in Reference._COLUMNS}
        out.append(Reference(**values, extra=json.loads(row["extra"] or "{}")))
    return out


def references_frame(references: list[Reference]):
    """A pandas DataFrame of ``references``, a row each (``extra`` left out)."""
    pd = import_pandas("store.references_dataframe()")
    return pd.DataFrame([{k: getattr(r, k) for k in Reference._COLUMNS} for r in references],
                        columns=list(Reference._COLUMNS))
