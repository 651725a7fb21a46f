"""The JSON documents visprof writes, and how each says what it is: a visprof document by the
schema in its first key (``"schema": "visprof.profile/1"``; a bound library's ``"format"``), a
Chrome trace by its ``traceEvents``. An output replaces only a document of its own kind
(``visprof.base.output_paths``); a reader given another kind says which it was given (a result
loaded from a recording, a recording from a result).
"""
from __future__ import annotations

import re
from typing import Any

__all__ = ["CHROME_TRACE", "SUMMARY_KINDS", "described", "document_name", "mark_of", "mark_of_head", "summary_document"]

CHROME_TRACE = "chrome-trace"

# mark -> (what it is, where it comes from or what reads it)
_DOCUMENTS = {
    "visprof.profile": ("profile result", "visprof.ProfileResult.load reads it"),
    "visprof.trace": ("trace recording", "session.save; visprof.CapturedTrace.load reads it"),
    "visprof.calibration": ("calibration", "calibrate --save; predict and compare --calibration read it"),
    "visprof.store-export": ("store export", "visprof export --format json"),
    "visprof.bounds": ("bound library", "visprof bounds build"),
    CHROME_TRACE: ("Chrome trace", "--trace, chrome_trace(); Perfetto or chrome://tracing opens it"),
    # the commands' --json summaries
    "visprof.diff": ("diff summary of two results", "visprof diff --json"),
    "visprof.compare": ("comparison of two GPUs", "visprof compare --json"),
    "visprof.calibrate": ("calibration summary", "visprof calibrate --json; predict reads calibrate --save's file"),
    "visprof.predict": ("set of predictions", "visprof predict --json"),
    "visprof.sweep": ("sweep summary", "visprof sweep --json; its results are in the store (visprof export)"),
    "visprof.compare-compile": ("comparison of an eager and a compiled run", "visprof compare-compile --json; its 'eager' and "
                                "'compiled' hold the two profile results"),
    "visprof.bounds-coverage": ("bounds coverage summary", "visprof bounds coverage --json"),
}
# The output kind (visprof.base.output_paths) of each command's --json summary, and its mark.
SUMMARY_KINDS = {kind: f"visprof.{kind}" for kind in
                 ("diff", "compare", "calibrate", "predict", "sweep", "compare-compile", "bounds-coverage")}
# Summaries written before they carried a schema: known by a key of theirs (for a reader's message only;
# an output does not replace them, as a user's own JSON may have such a key).
_SUMMARIES = (
    ("differences", "visprof diff's --json summary of two results"),
    ("predictions", "visprof predict's --json output"),
    ("slowest", "visprof sweep's --json summary; its results are in the store (visprof export)"),
)
_MARK_FIRST = re.compile(rb'^\s*\{\s*"(?:schema|format)"\s*:\s*"(visprof\.[\w.-]+)/')


def summary_document(kind: str, doc: dict) -> dict:
    """A command's --json summary ``doc`` with its schema first, so that the next run's output of
    the same kind may replace the file and no other output does."""
    return {"schema": f"{SUMMARY_KINDS[kind]}/1", **doc}


def mark_of_head(head: bytes) -> str | None:
    """The mark of the JSON document whose first bytes (unpacked) are ``head``: a visprof schema's
    name ("visprof.profile"), CHROME_TRACE, or None (other JSON, or none)."""
    found = _MARK_FIRST.match(head.lstrip(b"\xef\xbb\xbf"))
    if found:
        return found.group(1).decode()
    return CHROME_TRACE if b'"traceEvents"' in head else None


def mark_of(data: Any) -> str | None:
    """``mark_of_head`` of a parsed document."""
    if not isinstance(data, dict):
        return None
    mark = data.get("schema") or data.get("format")
    if isinstance(mark, str) and mark.startswith("visprof."):
        return mark.rsplit("/", 1)[0]
    return CHROME_TRACE if "traceEvents" in data else None


def document_name(mark: str) -> str:
    """"a visprof profile result", "a Chrome trace", ...: what a file of that mark holds."""
    if mark not in _DOCUMENTS:
        return f"a {mark} document"
    return f"a {'visprof ' if mark.startswith('visprof.') else ''}{_DOCUMENTS[mark][0]}"


def described(data: Any) -> str:
    """": it is a trace recording (session.save; ...)" for a document of visprof's (or a Chrome
    trace), for the message of a reader that expected another kind; "" for any other."""
    mark = mark_of(data)
    if mark in _DOCUMENTS:
        noun, origin = _DOCUMENTS[mark]
        return f": it is a {noun} ({origin})"
    if isinstance(data, dict):
        return next((f": it is {what}" for key, what in _SUMMARIES if key in data), "")
    return ""
