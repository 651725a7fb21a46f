"""timm's benchmark CSVs -> reference rows (pure functions: text in, plain dicts out).

timm's ``benchmark.py`` writes one row per (model, image size): ``model, infer_img_size,
infer_samples_per_sec, infer_step_time, infer_batch_size, param_count, infer_gmacs,
infer_macts``. Its published files are named like
``benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv``: mode, precision, memory layout,
PyTorch and CUDA versions, GPU.

A reference row is a dict with the fields of the results store's reference table:
``source, gpu_name, model, img_size, batch_size, precision, samples_per_s, step_time_ms,
param_count_m, gmacs, macts_m, extra``. Nothing here touches a store or a file system
beyond the one read of ``read_benchmark_csv`` and of ``check_benchmark_csv``.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from visprof.base.errors import BadInputError
from visprof.base.inputs import NCU_RAW_CSV, SQLITE_HEADER, is_ncu_raw_csv
from visprof.base.spelling import either, option

REQUIRED = ("model", "infer_img_size", "infer_samples_per_sec", "infer_batch_size")
OPTIONAL = {"infer_step_time": "step_time_ms", "param_count": "param_count_m", "infer_gmacs": "gmacs",
            "infer_macts": "macts_m"}
# timm's benchmark.py --amp ran fp16 autocast when these files were made (PyTorch 2.4).
PRECISION_WORDS = {"amp": "amp-fp16", "fp16": "amp-fp16", "amp-fp16": "amp-fp16", "bf16": "amp-bf16",
                   "amp-bf16": "amp-bf16", "fp32": "fp32", "tf32": "tf32"}
STEP_TIME_TOLERANCE = 0.10
# A user's own table may name timm's columns without the ``infer_`` prefix (``img_size``,
# ``samples_per_sec``, ``batch_size``, ...): read as timm's, unless the file has both spellings.
_BARE_NAMES = {column[len("infer_"):]: column for column in (*REQUIRED, *OPTIONAL) if column.startswith("infer_")}


@dataclass
class ParsedBenchmark:
    rows: list[dict[str, Any]]
    test_rows_dropped: int = 0
    warnings: list[str] = field(default_factory=list)


def canonical_precision(text: str | None) -> str | None:
    """A reference's or a result's precision as visprof names it: "amp-fp16" -> "fp16"."""
    if not text:
        return None
    text = text.lower()
    return text[4:] if text.startswith("amp-") else text


def parse_benchmark_filename(name: str) -> dict[str, str | None]:
    """What a timm results file name says: ``benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv``
    -> {mode: infer, precision: amp-fp16, layout: nchw, torch: 2.4.0, cuda: 12.4, gpu: rtx4090}.
    Unknown parts come out as None."""
    stem = Path(name).name
    stem = stem[: -len(".csv")] if stem.lower().endswith(".csv") else stem
    parts = stem.lower().split("-")
    out: dict[str, str | None] = {"mode": None, "precision": None, "layout": None, "torch": None, "cuda": None, "gpu": None}
    if parts and parts[0] == "benchmark":
        parts = parts[1:]
    rest = []
    for i, part in enumerate(parts):
        if part in ("infer", "train") and out["mode"] is None:
            out["mode"] = part
        elif part == "amp" and i + 1 < len(parts) and parts[i + 1] in ("fp16", "bf16") and out["precision"] is None:
            continue  # amp-bf16: the next part says which (read as amp-fp16 with a GPU "bf16-...", it was)
        elif part in PRECISION_WORDS and out["precision"] is None:
            out["precision"] = PRECISION_WORDS[part]
        elif part in ("nchw", "nhwc") and out["layout"] is None:
            out["layout"] = part
        elif re.fullmatch(r"pt\d{3,}", part):
            digits = part[2:]
            out["torch"] = f"{digits[0]}.{digits[1:-1]}.{digits[-1]}"
        elif re.fullmatch(r"cu\d{3,}", part):
            digits = part[2:]
            out["cuda"] = f"{digits[:-1]}.{digits[-1]}"
        else:
            rest.append(part)
    out["gpu"] = "-".join(rest) or None
    return out


# A number with thousands separators ("1,014.45" in some timm files): the commas are dropped. Any
# other comma ("3000,5", "1.014,45": a decimal comma) is refused; dropping it read 3000,5 as 30005.
_GROUPED = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$")


def _number(text: str, where: str, column: str, integer: bool = False, positive: bool = True) -> float | int | None:
    text = (text or "").strip()
    if "," in text:
        if not _GROUPED.match(text):
            raise BadInputError(f"{where}: column {column!r} is not a number: {text!r} (a decimal comma? write "
                                "numbers with a decimal point)")
        text = text.replace(",", "")
    if text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise BadInputError(f"{where}: column {column!r} is not a number: {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise BadInputError(f"{where}: column {column!r} is not a finite number: {text!r}")
    if positive and value <= 0:
        raise BadInputError(f"{where}: column {column!r} must be > 0, got {text}")
    if integer:
        if value != int(value):
            raise BadInputError(f"{where}: column {column!r} must be a whole number, got {text}")
        return int(value)
    return value


def parse_benchmark_csv(text: str, *, source: str, gpu_name: str, precision: str | None = None,
                        extra: dict[str, Any] | None = None) -> ParsedBenchmark:
    """Rows of one timm inference benchmark CSV, checked; ``test_*`` rows (timm's own test
    models) are dropped. ``precision`` defaults to what ``source``'s file name says.

    Raises BadInputError, naming the file and line, for a missing column, a value that is
    not a positive number, or a (model, image size) listed twice."""
    reader = csv.DictReader(io.StringIO(text))
    given = [name.strip() for name in reader.fieldnames or []]
    reader.fieldnames = _timm_columns(reader.fieldnames)
    as_given = dict(zip(reader.fieldnames or [], given))  # messages name the user's column: batch_size, not infer_batch_size
    _checked_header(reader.fieldnames, source, given)
    meta = parse_benchmark_filename(source)  # after the columns: a file that is no timm CSV is said to be none first
    precision = precision or meta["precision"]
    if precision is None:
        # compare, predict and calibrate read such CSVs too, but only import-timm takes a precision
        remedy = either("give it with precision=P (read_benchmark_csv(FILE, GPU, precision=P))",
                        "give it to visprof import-timm FILE --precision P --gpu GPU --store STORE; compare, predict "
                        "and calibrate then read that store")
        raise BadInputError(f"{source}: the file name does not say the precision (amp, fp32, ...): {remedy}")
    if precision.lower() not in PRECISION_WORDS:  # it is stored with every row: a typo would stay there
        raise BadInputError(f"{source}: unknown precision {precision!r}; choose from {', '.join(PRECISION_WORDS)}")
    precision = PRECISION_WORDS[precision.lower()]
    if meta["precision"] is not None and precision != meta["precision"]:  # as a --gpu against the name is refused
        raise BadInputError(f"{source}: its name says {meta['precision']}, but {option('precision', precision)} was "
                            f"given for it; leave {option('precision')} out to take the name's, or rename the file if "
                            "its name is wrong")
    base_extra = {k: v for k, v in meta.items() if k in ("layout", "torch", "cuda", "mode") and v}
    base_extra.update(extra or {})
    parsed = ParsedBenchmark(rows=[])
    seen: dict[tuple[str, int], tuple[int, str]] = {}  # (name casefolded, size) -> (line, name)
    for line, raw in enumerate(reader, start=2):
        where = f"{source} line {line}"
        if None in raw:  # more cells than header columns
            raise BadInputError(f"{where}: more values than columns")
        if None in raw.values():  # fewer: DictReader leaves the last columns None, which read as "empty"
            missing = [as_given.get(k, k) for k, v in raw.items() if v is None]
            raise BadInputError(f"{where}: fewer values than columns (none for {', '.join(map(repr, missing))})")
        model = (raw.get("model") or "").strip()
        if not model:
            raise BadInputError(f"{where}: empty model name")
        if model.startswith("test_"):
            parsed.test_rows_dropped += 1
            continue
        img_size = _number(raw["infer_img_size"], where, as_given["infer_img_size"], integer=True)
        samples = _number(raw["infer_samples_per_sec"], where, as_given["infer_samples_per_sec"])
        batch = _number(raw["infer_batch_size"], where, as_given["infer_batch_size"], integer=True)
        for column, value in (("infer_img_size", img_size), ("infer_samples_per_sec", samples), ("infer_batch_size", batch)):
            if value is None:
                raise BadInputError(f"{where}: column {as_given[column]!r} is empty")
        # Names are matched to profiles as written; two that differ only in case (EFFICIENTVIT_M0,
        # efficientvit_m0) are one model typed twice, and had been imported as two.
        key = (model.casefold(), img_size)
        if key in seen:
            line_before, as_written = seen[key]
            also = f"also line {line_before}" + (f", as {as_written}" if as_written != model else "")
            raise BadInputError(f"{where}: {model} at {img_size}px is listed twice ({also})")
        seen[key] = (line, model)
        row: dict[str, Any] = {"source": Path(source).name, "gpu_name": gpu_name, "model": model, "img_size": img_size,
                               "batch_size": batch, "precision": precision, "samples_per_s": samples}
        for column, name in OPTIONAL.items():
            row[name] = _number(raw[column], where, column) if column in raw else None
        row["extra"] = dict(base_extra)
        step = row["step_time_ms"]
        if step is not None and abs(batch / samples * 1e3 / step - 1) > STEP_TIME_TOLERANCE:
            parsed.warnings.append(f"{where}: {model}: step time {step} ms disagrees with batch / samples/s "
                                   f"= {batch / samples * 1e3:.3f} ms")
        parsed.rows.append(row)
    if not parsed.rows:
        raise BadInputError(f"{source}: no benchmark rows (only {parsed.test_rows_dropped} test_* rows)")
    return parsed


def _timm_columns(header: list[str] | None) -> list[str] | None:
    """The header with surrounding spaces dropped and bare names (``img_size``) read as timm's
    (``infer_img_size``) where the file does not also have timm's."""
    if header is None:
        return None
    names = [name.strip() for name in header]
    return [_BARE_NAMES[name] if name in _BARE_NAMES and _BARE_NAMES[name] not in names else name
            for name in names]


# Columns only visprof export's flat rows of a results store have (visprof.store's export), told
# apart so that such a file given where a timm CSV is read is named for what it is.
_EXPORT_COLUMNS = {"cell_key", "run_id", "visprof_version"}


def _checked_header(header: list[str] | None, source: str, given: list[str] | None = None) -> None:
    """The columns of a timm inference benchmark CSV (``header``, read as timm's: ``_timm_columns``);
    BadInputError for any other file, quoting the file's own header (``given``)."""
    if not header:
        raise BadInputError(f"{source}: empty file, expected a timm benchmark CSV")
    if "train_samples_per_sec" in header and "infer_samples_per_sec" not in header:
        raise BadInputError(f"{source}: a training benchmark; import-timm reads inference benchmarks (infer_* columns)")
    missing = [c for c in REQUIRED if c not in header]
    if missing and _EXPORT_COLUMNS <= set(header):
        raise BadInputError(f"{source}: a results store's rows from visprof export --format csv, not a timm benchmark "
                            "CSV; compare, predict and calibrate read the store itself, and export --format timm "
                            "writes timm's columns")
    if missing and len(header) == 1 and any(sep in header[0] for sep in (";", "\t")):
        # one column holding every name: another separator (a spreadsheet's export in a comma-decimal locale)
        sep = "semicolons" if ";" in header[0] else "tabs"
        raise BadInputError(f"{source}: its columns are separated by {sep}; timm's CSVs (and visprof) use commas: "
                            "save it with commas as the separator")
    if missing:
        what = "a JSON file, " if header[0].lstrip().startswith(("{", "[")) else ""
        columns = ", ".join(given if given is not None else header)  # the file's names, not timm's spelling of them
        raise BadInputError(f"{source}: {what}not a timm inference benchmark CSV: missing column(s) {missing}, "
                            f"or without the infer_ prefix (header: {columns if len(columns) <= 200 else columns[:197] + '...'})")


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise BadInputError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise BadInputError(f"{path} is a directory; give a timm benchmark CSV file") from None
    except OSError as exc:
        raise BadInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if data.startswith(SQLITE_HEADER):  # the likeliest wrong file next to a CSV: said by name
        raise BadInputError(f"{path}: an SQLite file (a results store?), expected a timm benchmark CSV; compare, "
                            "predict and calibrate read a results store as it is")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = None
    if text is None or "\x00" in text:  # NULs decode as UTF-8, yet no text file holds them
        raise BadInputError(f"{path}: not a text file, expected a timm benchmark CSV")
    return text


def check_benchmark_csv(path: str | Path) -> None:
    """BadInputError unless ``path`` is a readable timm inference benchmark CSV (by its columns),
    so that a file of another kind is said to be one before its name is read for a GPU or a
    precision."""
    text = _read_text(Path(path))
    if is_ncu_raw_csv(text):  # its ==PROF== line had been quoted as the header of a timm table
        raise BadInputError(f"{path} {NCU_RAW_CSV}")
    header = next(csv.reader(io.StringIO(text)), None)
    _checked_header(_timm_columns(header), str(path), [name.strip() for name in header] if header else None)


def read_benchmark_csv(path: str | Path, gpu_name: str, precision: str | None = None,
                       extra: dict[str, Any] | None = None) -> ParsedBenchmark:
    """``parse_benchmark_csv`` of a file; a file that cannot be read is a BadInputError."""
    path = Path(path)
    return parse_benchmark_csv(_read_text(path), source=str(path), gpu_name=gpu_name, precision=precision, extra=extra)


__all__ = ["ParsedBenchmark", "canonical_precision", "check_benchmark_csv", "parse_benchmark_csv", "parse_benchmark_filename",
           "read_benchmark_csv"]
