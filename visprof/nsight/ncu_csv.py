"""Parsing Nsight Compute's CSV output (``ncu --csv``) into one record per profiled kernel.

Two layouts are read:

* wide (``--page raw``): a header row ("ID", "Process ID", ..., "Kernel Name", ..., then one
  column per metric), a units row (empty identification cells, then units such as "nsecond",
  "byte", "%"), then one row per kernel;
* long (``--page details``): one row per kernel and metric, with "Metric Name",
  "Metric Unit" and "Metric Value" columns.

With ``--nvtx``, ncu adds a column per thread with the NVTX push/pop stack each kernel ran
in, as ``"domain:range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"`` entries, outermost
first; ``NcuKernel.nvtx`` keeps visprof's, with their payloads (the op id).

Lines ncu writes around the CSV (``==PROF==``, ``==WARNING==``, the program's own output when
it shares the stream) are skipped. Values may carry thousands separators ("1,048,576") and
"n/a"; units are converted to nanoseconds, bytes and percent whatever ``--print-units`` was.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

from visprof.base.errors import BadInputError

# Unit -> factor to the base unit (ns, bytes, %, counts).
UNIT_SCALE = {
    "nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9,
    "byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
    "kib": 1024.0, "mib": 1024.0 ** 2, "gib": 1024.0 ** 3,
}
_VISPROF_RANGE = re.compile(r"visprof:(.+?):(?:Int64|UInt64|Uint64|int64|uint64):(-?\d+):")
ID_COLUMNS = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
              "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value",
              "Function Name", "Demangled Name", "Estimated Speedup", "Estimated Speedup Type"}


@dataclass
class NcuKernel:
    id: int  # ncu's profile order (0, 1, ...)
    name: str
    metrics: dict[str, float | None] = field(default_factory=dict)  # base units
    stream: str = ""
    block: str = ""
    grid: str = ""
    nvtx: list[tuple[str, int]] = field(default_factory=list)  # visprof ranges around it: (name, payload)

    @property
    def op_id(self) -> int | None:
        """The payload of the innermost visprof range: the id of the op that launched it."""
        return self.nvtx[-1][1] if self.nvtx else None


def to_number(text: str, unit: str = "") -> float | None:
    """"1,048,576" -> 1048576.0, scaled by its unit; None for "n/a" or an empty cell."""
    text = (text or "").strip().replace(",", "")
    if text in ("", "n/a", "N/A", "-"):
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value * UNIT_SCALE.get(unit.strip().lower(), 1.0)


def visprof_ranges(cells: list[str]) -> list[tuple[str, int]]:
    """visprof's NVTX ranges (name, payload), outermost first, from ncu's NVTX stack cells."""
    found = []
    for cell in cells:
        found += [(name, int(payload)) for name, payload in _VISPROF_RANGE.findall(cell)]
    return found


def _is_metric(column: str) -> bool:
    return "__" in column  # ncu metrics are named unit__counter[.rollup...]


def _rows(text: str) -> list[list[str]]:
    lines = [line for line in text.splitlines() if line.startswith('"')]
    return list(csv.reader(io.StringIO("\n".join(lines))))


def parse_ncu_csv(text: str) -> list[NcuKernel]:
    """The kernels of an ncu CSV report, in profile order."""
    rows = _rows(text)
    header_at = next((i for i, row in enumerate(rows) if row and row[0] == "ID"), None)
    if header_at is None:
        if "==PROF== No kernels were profiled" in text or "No kernels were profiled" in text:
            return []
        raise BadInputError("not Nsight Compute CSV output: no header row starting with \"ID\"")
    header = rows[header_at]
    body = rows[header_at + 1:]
    if "Metric Name" in header:
        return _parse_long(header, body)
    return _parse_wide(header, body)


def _parse_wide(header: list[str], body: list[list[str]]) -> list[NcuKernel]:
    col = {name: i for i, name in enumerate(header)}
    metric_columns = [i for i, name in enumerate(header) if _is_metric(name)]
    other_columns = [i for i, name in enumerate(header) if name not in ID_COLUMNS and not _is_metric(name)]
    units = [""] * len(header)
    if body and body[0] and body[0][0] == "":  # the units row
        units = body[0] + [""] * (len(header) - len(body[0]))
        body = body[1:]
    kernels = []
    for row in body:
        if len(row) < len(header) or row == header:
            continue
        kernels.append(NcuKernel(
            id=int(to_number(row[col["ID"]]) or 0), name=row[col["Kernel Name"]],
            metrics={header[i]: to_number(row[i], units[i]) for i in metric_columns},
            stream=row[col["Stream"]] if "Stream" in col else "", block=row[col["Block Size"]] if "Block Size" in col else "",
            grid=row[col["Grid Size"]] if "Grid Size" in col else "",
            nvtx=visprof_ranges([row[i] for i in other_columns])))
    return kernels


def _parse_long(header: list[str], body: list[list[str]]) -> list[NcuKernel]:
    col = {name: i for i, name in enumerate(header)}
    other_columns = [i for i, name in enumerate(header) if name not in ID_COLUMNS and not _is_metric(name)]
    by_id: dict[int, NcuKernel] = {}
    for row in body:
        if len(row) < len(header):
            continue
        kid = int(to_number(row[col["ID"]]) or 0)
        kernel = by_id.get(kid)
        if kernel is None:
            kernel = by_id[kid] = NcuKernel(id=kid, name=row[col["Kernel Name"]],
                                            stream=row[col["Stream"]] if "Stream" in col else "",
                                            nvtx=visprof_ranges([row[i] for i in other_columns]))
        kernel.metrics[row[col["Metric Name"]]] = to_number(row[col["Metric Value"]], row[col["Metric Unit"]])
    return [by_id[k] for k in sorted(by_id)]
