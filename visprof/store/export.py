"""``visprof export STORE --format csv|parquet|json|timm``: a store's rows as a file.

    csv      one row per result: every flattened column, then one column per category and
             figure (time_ms.attention, share.attention, ...); with ``failures``, the failures
    parquet  the same table (needs pandas and pyarrow: pip install "visprof[pandas]")
    json     every result whole (``ProfileResult.to_dict()``) with its store row, the failures
             and the references: nothing the store holds is left out
    timm     the columns of timm's benchmark.py CSVs, to join timm's published results

Files are written whole or not at all (``visprof.base.outputs``); without a path, text formats
go to stdout.
"""
from __future__ import annotations

import csv
import io
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any, Sequence

from visprof.base.errors import BadInputError, VisprofWarning
from visprof.base.spelling import either, option
from visprof.store.model_filter import matches_model, model_globs
from visprof.store.result_store import ResultStore, device_name, open_store
from visprof.store.timm_format import TIMM_COLUMNS, to_timm_row

__all__ = ["export_store", "FORMATS", "EXPORT_SCHEMA"]

FORMATS = ("csv", "parquet", "json", "timm")
_KIND = {"csv": "export-csv", "parquet": "parquet", "json": "store-export", "timm": "timm-csv"}  # what each format's file is
EXPORT_SCHEMA = "visprof.store-export/1"


def export_store(store: str | Path | ResultStore, output: str | Path | None, fmt: str = "csv", *,
                 model: str | Sequence[str] | None = None, gpu: str | None = None, failures: bool = False,
                 stdout: IO[str] | None = None, batch_size: int | None = None, precision: str | None = None) -> int:
    """Writes the store's rows to ``output`` (None: ``stdout``) in ``fmt``; returns the
    number of rows written. ``model`` and ``gpu`` filter with shell patterns (``model``: one, a comma
    list or a list of them; a name without a pretrained tag matches its tagged rows too, one with timm's
    default tag its untagged rows); ``batch_size`` and ``precision`` choose the rows of ``fmt="timm"``,
    which has one row per model and image size.

    An ``output`` that is the store itself, by any name (a link, a hard link) or one of its
    SQLite side files (``-wal``, ``-shm``, ``-journal``), is refused before anything is read. Where a
    filter matches no row, an ``output`` already there is left as it is (a typo of a model name had
    replaced a 74-row export with its header)."""
    from visprof.base.output_paths import check_output_paths
    from visprof.base.outputs import atomic_output

    if fmt not in FORMATS:
        raise BadInputError(f"unknown export format {fmt!r}; choose from {', '.join(FORMATS)}")
    if output is None and fmt == "parquet":
        raise BadInputError(f"{_format('parquet')} writes a binary file: give one with "
                            f"{either('output=FILE', '-o FILE')}")
    if failures and fmt not in ("csv", "json"):
        raise BadInputError(f"{option('failures', True)} exports as csv or json")
    _check_patterns(model, gpu)
    if (batch_size is not None or precision is not None) and fmt != "timm":
        raise BadInputError(f"{option('batch_size')} and {option('precision')} choose the rows of {_format('timm')} "
                            f"(one per model and image size); {_format(fmt)} keeps every row, with its batch_size and "
                            "precision columns")
    if output is not None:
        source = store.path if isinstance(store, ResultStore) else store
        check_output_paths({option("output"): output}, inputs={"store": source}, kinds={option("output"): _KIND[fmt]})
    owned = not isinstance(store, ResultStore)
    reader = open_store(store) if owned else store
    filtered = any(value is not None for value in (model, gpu, batch_size, precision))
    try:
        # damage in a part this export does not read (an index page) had let it succeed, a copy of a store
        # that every writer refuses; a tenth of a second on a 140 MB store
        reader.check_intact()
        if not failures and fmt != "json" and reader.count("results") == 0:  # json: its references and failures
            raise BadInputError(_no_results(reader))
        if fmt == "parquet":
            frame = _parquet_frame(reader, model, gpu)
            if not (frame.empty and filtered and os.path.exists(output)):
                with atomic_output(output, "wb", kind="parquet") as fh:
                    _write_parquet(frame, fh)
            return len(frame)
        buffer = io.StringIO()
        count = _write_text(reader, fmt, buffer, model, gpu, failures, batch_size, precision)
    finally:
        if owned:
            reader.close()
    if output is None:
        (stdout or sys.stdout).write(buffer.getvalue())
    elif not (count == 0 and filtered and os.path.exists(output)):
        with atomic_output(output, kind=_KIND[fmt]) as fh:
            fh.write(buffer.getvalue())
    return count


def _format(fmt: str) -> str:
    """The export format as the caller gives it: ``fmt='timm'``, or ``--format timm``."""
    return option("fmt", fmt, flag="--format")


# What each filter selects, for the message when it is given empty (it would match nothing).
_PATTERN_EXAMPLES = {"model": "a model name or pattern ('vit_*')",
                     "gpu": "a GPU name or pattern ('*H200*'), or cpu for the CPU's rows"}


def _check_patterns(model: str | Sequence[str] | None, gpu: str | None) -> None:
    for keyword, empty in (("model", model is not None and not model_globs(model)),
                           ("gpu", gpu is not None and not gpu.strip())):
        if empty:
            raise BadInputError(f"{option(keyword)} is empty: give {_PATTERN_EXAMPLES[keyword]}, or leave "
                                f"{option(keyword)} out for every row")


def _no_results(store: ResultStore) -> str:
    """Why an export of results has nothing to write: the store holds none, and what it holds instead."""
    sweep = either(f"run_sweep(..., store={str(store.path)!r})", f"visprof sweep --store {store.path}")
    text = f"{store.path} holds no profile results ({sweep} adds them)"
    references, failures = store.count("references"), store.count("failures")
    if references:
        text += (f"; its {references} reference rows come from visprof import-timm and are read by compare and "
                 f"calibrate ({_format('json')} exports them)")
    if failures:
        text += f"; {failures} cells failed ({option('failures', True)} exports them)"
    return text


def _write_text(store: ResultStore, fmt: str, out: IO[str], model, gpu, failures: bool, batch_size=None,
                precision=None) -> int:
    if fmt == "json":
        return _write_json(store, out, model, gpu, failures)
    if failures:
        globs = model_globs(model)
        rows = [r for r in store.failures() if _matches(r, globs, gpu)]
        columns = list(rows[0]) if rows else _failure_columns(store)
        return _write_csv(out, columns, rows)
    if fmt == "timm":
        # the batch asked for or the one that ran: -b 16 of a cell that decayed to 8 had found nothing
        rows = [r for r in store.rows(model, gpu)
                if (batch_size is None or batch_size in (r.get("batch_size"), r.get("batch_size_requested")))
                and (precision is None or r.get("precision") == precision)]
        gpus = sorted({device_name(r) for r in rows})
        if len(gpus) > 1:
            raise BadInputError(f"{_format('timm')} writes one device's results and the store holds several "
                                f"({', '.join(gpus)}); choose one with {option('gpu')}")
        timm_rows = _one_row_per_key(rows, [to_timm_row(r) for r in rows])
        return _write_csv(out, list(TIMM_COLUMNS), timm_rows)
    columns, rows = store.table_rows(model, gpu)
    return _write_csv(out, columns, rows)


# What can tell two stored rows of one model and size apart, where timm's columns cannot.
_TIMM_DISTINGUISHES = ("batch_size", "precision", "channels_last", "grad_mode", "autocast", "img_size_requested",
                       "torch_version", "timm_version", "visprof_version", "host")
# Of those, what --batch-size and --precision choose between: rows differing only in the others
# (measured again, another grad mode or visprof version) are one measurement told again.
_TIMM_CHOSEN_BY_OPTIONS = ("batch_size", "precision")


def _one_row_per_key(rows: list[dict[str, Any]], timm_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """timm's CSVs have one row per (model, image size), the key they are joined on. Rows of one
    model at one size from several batches or precisions would make that join many-to-one: refused,
    for --batch-size or --precision to choose. Rows that differ in nothing those can choose (a cell
    measured again, under another grad mode or version) give their newest, as report and predict
    do; every store with repeated sweeps had been refused, with no option that could help."""
    by_key: dict[tuple, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for row, timm_row in zip(rows, timm_rows):
        by_key.setdefault((timm_row["model"], timm_row["infer_img_size"]), []).append((row, timm_row))
    choosable = {key: [r for r, _ in group] for key, group in by_key.items()
                 if any(len({str(r.get(c)) for r, _ in group}) > 1 for c in _TIMM_CHOSEN_BY_OPTIONS)}
    if choosable:
        _refuse_repeated(choosable)
    told_again = sum(len(group) > 1 for group in by_key.values())
    if told_again:
        import warnings

        warnings.warn(f"{_format('timm')}: {told_again} model(s) have several rows at one size that "
                      f"{option('batch_size')} and {option('precision')} cannot tell apart (measured again, or under "
                      f"another grad mode or version): the newest of each is written; {_format('csv')} keeps every "
                      "row", VisprofWarning, stacklevel=2)
    # the newest: the highest row id (rows come oldest first)
    return [max(group, key=lambda pair: pair[0].get("id") or 0)[1] for group in by_key.values()]


def _refuse_repeated(repeated: dict[tuple, list[dict[str, Any]]]) -> None:
    (name, size), group = next(iter(repeated.items()))
    values = {column: sorted({str(r.get(column)) for r in group}) for column in _TIMM_DISTINGUISHES}
    # What the options choose between first; the rest is said as "also": no option chooses it.
    chosen = [f"{column} {', '.join(values[column])}" for column in _TIMM_CHOSEN_BY_OPTIONS if len(values[column]) > 1]
    also = [f"{column} {', '.join(seen)}" for column, seen in values.items()
            if len(seen) > 1 and column not in _TIMM_CHOSEN_BY_OPTIONS]
    raise BadInputError(
        f"{_format('timm')} writes one row per model and image size, as timm's CSVs (the key they join on), and the "
        f"store has {len(group)} for {name} at {size} ({'; '.join(chosen)}"
        + (f"; they also differ in {'; '.join(also)}" if also else "") + ")"
        + (f", and {len(repeated) - 1} more such model(s)" if len(repeated) > 1 else "")
        + f"; choose with {option('batch_size')} or {option('precision')}, or export {_format('csv')}, which keeps "
          "every row with its settings")


def _write_csv(out: IO[str], columns: list[str], rows: list[dict[str, Any]]) -> int:
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return len(rows)


def _write_json(store: ResultStore, out: IO[str], model, gpu, failures_only: bool) -> int:
    globs = model_globs(model)
    failures = [r for r in store.failures() if _matches(r, globs, gpu)]
    if failures_only:
        json.dump({"schema": EXPORT_SCHEMA, "failures": failures}, out, indent=1)
        return len(failures)
    rows = store.rows(model, gpu)
    docs = list(store.result_documents(model, gpu))
    document = {
        "schema": EXPORT_SCHEMA,
        "store": {"path": str(store.path), **store.meta()},
        "results": [{"row": row, "result": doc} for row, doc in zip(rows, docs)],
        "failures": failures,
        "references": [asdict(r) for r in store.references(model=model, gpu_name=gpu)],
    }
    json.dump(document, out, indent=1)
    out.write("\n")
    # every row it holds: a store of imported timm rows only had said "wrote 0 rows"
    return len(rows) + len(failures) + len(document["references"])


def _parquet_frame(store: ResultStore, model, gpu):
    try:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        raise BadInputError(f'{_format("parquet")} needs pandas and pyarrow: pip install "visprof[pandas]"') from None
    return store.dataframe(model, gpu)


def _write_parquet(frame, fh) -> None:
    """``frame.to_parquet``, with the mark in the schema's metadata that lets a later export replace
    the file (and no Parquet file of the user's)."""
    import pyarrow
    import pyarrow.parquet

    from visprof.base.output_paths import PARQUET_MARK

    table = pyarrow.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), PARQUET_MARK: b"1"})
    pyarrow.parquet.write_table(table, fh)


def _matches(row: dict[str, Any], globs: list[str] | None, gpu: str | None) -> bool:
    """``globs``: ``model_globs`` of the model filter, made once for all rows."""
    import fnmatch

    return matches_model(str(row.get("model")), globs) and (gpu is None or fnmatch.fnmatchcase(device_name(row), gpu))


def _failure_columns(store: ResultStore) -> list[str]:
    return store.columns("failures")
