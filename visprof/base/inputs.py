"""Input files (results, category rules): read whole, and refused with one line when unreadable.

A user hands visprof files it wrote earlier, files they wrote by hand, and files that are
neither (a truncated copy, a folder, a binary). Each problem becomes a ``BadInputError``
that names the file and says what is wrong with it, never a bare ``JSONDecodeError`` or
``UnicodeDecodeError``:

    data = load_json_file(path, "result file")     # gzip is recognised by its magic bytes
    data = load_toml_file(path, "category rules file")
"""
from __future__ import annotations

import gzip
import json
import os
import zlib
from pathlib import Path
from typing import Any

from visprof.base.errors import BadInputError

__all__ = ["NCU_RAW_CSV", "SQLITE_HEADER", "describe_value", "input_path", "is_ncu_raw_csv", "load_json_file", "load_toml_file",
           "read_input_bytes", "toml_reader"]

_GZIP_MAGIC = b"\x1f\x8b"
SQLITE_HEADER = b"SQLite format 3\x00"  # the first bytes of every SQLite database file


def input_path(path: Any, what: str) -> Path:
    """``path`` as a Path; what is no path (None, a number, an open file) is one BadInputError
    naming ``what``, where pathlib's TypeError had come out of a Python caller's call."""
    if not isinstance(path, (str, os.PathLike)):
        raise BadInputError(f"{what}: expected a file path, got {'None' if path is None else type(path).__name__}")
    path = Path(path)
    refuse_a_long_name(path, what)
    return path


# The longest name of one file or folder: 255 bytes on every file system visprof meets (ext4,
# XFS, tmpfs, APFS, NTFS in UTF-16 units). A longer one is ENAMETOOLONG wherever it is used: it
# had been a traceback, or a refusal that blamed the folder.
NAME_MAX = 255


def refuse_a_long_name(path: Path, what: str, room: int = 0) -> None:
    """BadInputError for a part of ``path`` longer than NAME_MAX, or for a last part that leaves
    less than ``room`` bytes for the suffixes of files named after it (SQLite's ``-journal``)."""
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > NAME_MAX:
            raise BadInputError(f"{what}: the name {part[:24]}...{part[-12:]} is {size} bytes long; a file system "
                                f"takes at most {NAME_MAX}")
    size = len(os.fsencode(path.name))
    if size + room > NAME_MAX:
        raise BadInputError(f"{what}: the name {path.name[:24]}...{path.name[-12:]} is {size} bytes long; files "
                            f"named after it have up to {room} bytes more, and a file system takes at most {NAME_MAX}: "
                            f"give a name of at most {NAME_MAX - room} bytes")


def read_input_bytes(path: str | Path, what: str, allow_empty: bool = False) -> bytes:
    """The file's bytes (decompressed when gzipped); missing, folder, unreadable, empty
    (unless ``allow_empty``) or broken gzip files are one BadInputError naming ``what`` and
    the path."""
    path = input_path(path, what)
    if path.is_dir():
        raise BadInputError(f"{what} {path} is a directory, not a file")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise BadInputError(f"{what} {path}: no such file") from None
    except OSError as exc:
        raise BadInputError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None
    if raw.startswith(_GZIP_MAGIC):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise BadInputError(f"{what} {path} is a damaged or truncated gzip file ({exc})") from None
    if not allow_empty and not raw.strip():
        raise BadInputError(f"{what} {path} is empty")
    return raw


def _text(raw: bytes, path: Path, what: str) -> str:
    if raw.startswith(SQLITE_HEADER):  # a results store given where a file of text is read
        raise BadInputError(f"{what} {path} is an SQLite database (a visprof results store?), not a {what}: a store's "
                            "results are read by compare, predict, report and calibrate, and from Python by "
                            "visprof.sweep.open_store(path).results()")
    if b"\x00" in raw[:4096]:
        raise BadInputError(f"{what} {path} is a binary file, not text")
    try:
        return raw.decode("utf-8-sig")  # -sig: a byte-order mark (Windows editors write one) is not text
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{what} {path} is not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start})") from None


def _no_nan(name: str) -> Any:
    raise ValueError(name)


def is_ncu_raw_csv(text: str) -> bool:
    """Whether ``text`` is Nsight Compute's raw CSV (``visprof ncu --csv``): its ==PROF== lines, then a
    header of quoted columns starting with ID and Process ID."""
    first = next((line for line in text.splitlines() if line.strip() and not line.startswith("==")), "")
    return first.startswith('"ID","Process ID"')


# Said where a visprof ncu result is read and ncu's raw CSV was given (the likelier mix-up than any other)
NCU_RAW_CSV = "is Nsight Compute's raw CSV (visprof ncu --csv); give the result visprof ncu wrote with --json"


def load_json_file(path: str | Path, what: str) -> Any:
    """The parsed JSON of ``path`` (NaN and Infinity refused: visprof never writes them)."""
    path = input_path(path, what)
    text = _text(read_input_bytes(path, what), path, what)
    try:
        return json.loads(text, parse_constant=_no_nan)
    except json.JSONDecodeError as exc:
        if is_ncu_raw_csv(text):
            raise BadInputError(f"{what} {path} {NCU_RAW_CSV}") from None
        # The text ran out: at the end, or inside a string that never closes (JSON strings
        # cannot span lines, so an unterminated one on the last line is the end of the file).
        unterminated = exc.msg.startswith("Unterminated string") and "\n" not in text[exc.pos:].rstrip()
        msg = exc.msg.removesuffix(" at")  # "Unterminated string starting at", which the position follows
        if exc.pos >= len(text.rstrip()) or unterminated:
            raise BadInputError(f"{what} {path} ends in the middle of its JSON (truncated?): "
                                f"{msg} at line {exc.lineno} column {exc.colno}") from None
        raise BadInputError(f"{what} {path} is not valid JSON: {msg} at line {exc.lineno} "
                            f"column {exc.colno}") from None
    except ValueError as exc:  # from _no_nan
        raise BadInputError(f"{what} {path} contains {exc}, which is not a JSON number") from None
    except RecursionError:
        raise BadInputError(f"{what} {path} nests its JSON too deeply to be read") from None


def load_toml_file(path: str | Path, what: str, hint: str = "") -> dict[str, Any]:
    """The parsed TOML of ``path`` (an empty file is an empty table, as TOML says); ``hint``
    is added to the message when it is not TOML (what the file should be)."""
    tomllib = toml_reader()
    path = input_path(path, what)
    text = _text(read_input_bytes(path, what, allow_empty=True), path, what)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInputError(f"{what} {path} is not valid TOML: {exc}" + (f" ({hint})" if hint else "")) from None


def toml_reader():
    """The standard library's TOML reader (Python 3.11+), or on Python 3.10 tomli, the same reader
    published apart (a dependency there): without it, every profile on 3.10 stopped on the import
    as it read the category table."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib


def describe_value(value: Any) -> str:
    """``value`` as a reader of an error message wants it: its JSON kind and a short excerpt."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"an integer ({value})"
    if isinstance(value, float):
        return f"a number ({value:g})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string ({shown!r})"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object" if value else "an empty object"
    return type(value).__name__
