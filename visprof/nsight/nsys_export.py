"""Reading an ``nsys export --type sqlite`` file: the tables visprof needs, as NumPy columns.

Tables read (names and columns of the Nsight Systems export schema 3.x):

==============================  ===============================================================
META_DATA_EXPORT                export schema version (``EXPORT_META_DATA`` in 2022.x files)
StringIds                       the string table registered NVTX messages and names point into
NVTX_EVENTS                     domains (eventType 75), push/pop ranges (59), marks (34)
CUPTI_ACTIVITY_KIND_RUNTIME     CUDA API calls: thread, time, correlationId
CUPTI_ACTIVITY_KIND_KERNEL      kernels: device, stream, time, correlationId, names, launch shape
CUPTI_ACTIVITY_KIND_MEMCPY      copies: bytes, copyKind
CUPTI_ACTIVITY_KIND_MEMSET      fills: bytes
TARGET_INFO_GPU                 the GPUs: name, memory, SMs, clocks
==============================  ===============================================================

nsys writes a table only when it recorded rows for it, so a missing table means "nothing
of that kind was recorded"; ``Export.missing()`` says what that costs.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from visprof.base.errors import BadInputError
from visprof.base.inputs import SQLITE_HEADER

META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")  # current name first; 2022.x used the second
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
NVTX = "NVTX_EVENTS"
GPU_INFO = "TARGET_INFO_GPU"
GPU_TABLES = (KERNEL, MEMCPY, MEMSET)
# What SQLite says of a file it cannot read as a database: cut short, or overwritten in places.
_DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
_DAMAGED_WORDS = ("malformed", "not a database")  # the same, in SQLite's messages
_NOT_IN_SCHEMA = ("no such table", "no such column")  # SQLite's words for what a query names and the file lacks

# ENUM_NSYS_EVENT_TYPE ids (stable across 3.x schemas; read from the file when it has the enum).
EVENT_TYPES = {"NvtxMark": 34, "NvtxPushPopRange": 59, "NvtxStartEndRange": 60, "NvtxDomainCreate": 75}

WHAT_IT_COSTS = {
    NVTX: "no NVTX ranges: run nsys with --trace nvtx (and the program with visprof's ranges)",
    RUNTIME: "no CUDA API calls, so GPU work cannot be tied to the ranges that launched it: run nsys with --trace cuda",
    KERNEL: "no kernels were recorded",
    MEMCPY: "no memcpy rows (none ran, or CUDA tracing was off)",
    MEMSET: "no memset rows (none ran, or CUDA tracing was off)",
    GPU_INFO: "no GPU description (name, memory, SM count)",
}


@dataclass
class Export:
    """An open export: its schema version and the tables it has."""

    path: Path
    connection: sqlite3.Connection
    meta: dict[str, str]
    tables: set[str]
    event_types: dict[str, int] = field(default_factory=lambda: dict(EVENT_TYPES))

    @property
    def schema_version(self) -> str:
        return self.meta.get("EXPORT_SCHEMA_VERSION", "unknown")

    @property
    def nsys_version(self) -> str:
        return self.meta.get("EXPORT_PRODUCT_VERSION", "unknown")

    def has(self, table: str) -> bool:
        return table in self.tables

    def missing(self) -> dict[str, str]:
        """{table: what its absence costs} for the tables visprof reads that this file lacks."""
        return {t: why for t, why in WHAT_IT_COSTS.items() if t not in self.tables}

    def columns(self, table: str) -> set[str]:
        return {row[1] for row in self.query(f"PRAGMA table_info({table})")}

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        try:
            return self.connection.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            # A damaged page shows only when a query reaches it; any other error is visprof's.
            # (sqlite_errorname is Python 3.11's; 3.10 has the message only.)
            name = getattr(exc, "sqlite_errorname", None)
            if name not in _DAMAGED and not (name is None and any(w in str(exc) for w in _DAMAGED_WORDS)):
                if any(word in str(exc) for word in _NOT_IN_SCHEMA):  # a table or column this file lacks
                    raise self.not_as_written(exc) from None
                raise
            raise _unreadable(self.path, exc) from None

    def not_as_written(self, cause: Exception) -> BadInputError:
        """The error for a file that lacks a table or column nsys writes, or holds a value nsys
        would not (text where a time goes): altered since, or not written by nsys."""
        return BadInputError(f"{self.path} (nsys {self.nsys_version}, export schema {self.schema_version}) is not as "
                             f"nsys export writes it: {cause}; export the report again "
                             "(nsys export --type sqlite)")

    def ints(self, values) -> np.ndarray:
        """``values`` of a column nsys writes as integers, as int64: a value of another type (a time
        that is text) is the file's fault, said in one line, not a traceback of NumPy's conversion."""
        try:
            return np.asarray(values, dtype=np.int64)
        except (ValueError, TypeError, OverflowError) as exc:
            raise self.not_as_written(exc) from None

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> "Export":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_export(path: str | Path) -> Export:
    """Opens an export read-only; BadInputError for anything that is not one."""
    path = Path(path)
    if not path.exists():
        raise BadInputError(f"no such file: {path}")
    if not path.is_file():
        raise BadInputError(f"{path} is not a regular file; give an nsys SQLite export")
    if path.stat().st_size == 0:  # SQLite reads an empty file as an empty database: say what it is
        raise BadInputError(f"{path} is empty; give the output of nsys export --type sqlite")
    if path.suffix == ".nsys-rep" or path.suffix == ".qdrep":
        raise BadInputError(f"{path} is an Nsight Systems report; export it first: "
                            f"nsys export --type sqlite --output {path.with_suffix('.sqlite')} {path}")
    try:
        connection = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise _unreadable(path, exc) from None
    meta_table = next((t for t in META_TABLES if t in tables), None)
    if meta_table is None:
        connection.close()
        raise BadInputError(f"{path} is an SQLite file but not an nsys export (no {' or '.join(META_TABLES)} table)")
    export = Export(path, connection, {}, tables)
    export.meta = dict(export.query(f"SELECT name, value FROM {meta_table}"))
    if "ENUM_NSYS_EVENT_TYPE" in tables:
        known = dict(export.query("SELECT name, id FROM ENUM_NSYS_EVENT_TYPE"))
        export.event_types.update({name: known[name] for name in EVENT_TYPES if name in known})
    return export


def _unreadable(path: Path, exc: sqlite3.DatabaseError) -> BadInputError:
    """The error for a file SQLite cannot read: one that starts as an SQLite file does is damaged
    or cut short (an interrupted copy or export), anything else is another kind of file."""
    try:
        with open(path, "rb") as fh:
            start = fh.read(len(SQLITE_HEADER))
    except OSError as os_error:
        return BadInputError(f"{path} cannot be read: {os_error.strerror or os_error}")
    if start.startswith(b"\x1f\x8b"):  # gzip's magic: an export kept compressed
        return BadInputError(f"{path} is gzip-compressed; SQLite reads it unpacked: gunzip -k {path}, then import "
                             f"{path.with_suffix('') if path.suffix == '.gz' else 'the unpacked file'}")
    damaged = start == SQLITE_HEADER
    if damaged:
        return BadInputError(f"{path} is a damaged or truncated SQLite file ({exc}); export the report again "
                             "with nsys export --type sqlite")
    return BadInputError(f"{path} is not an SQLite file ({exc}); give the output of nsys export --type sqlite")


# --- tables as columns ----------------------------------------------------------------------
@dataclass
class NvtxRanges:
    """Push/pop ranges of one domain, one entry per range, in file order."""

    start: np.ndarray  # int64 ns
    end: np.ndarray  # int64 ns; open ranges (no end recorded) end at INT64_MAX
    tid: np.ndarray  # int64 globalTid
    kind: np.ndarray  # int64 NVTX category (visprof's kinds, see nvtx_scheme)
    color: np.ndarray  # int64 ARGB
    payload: np.ndarray  # int64 payload (int64Value, or uint64Value)
    text: list[str]

    def __len__(self) -> int:
        return len(self.start)


OPEN_END = np.iinfo(np.int64).max


def domain_ids(export: Export, name: str) -> list[int]:
    """The NVTX domain ids named `name` (one per process that created it)."""
    if not export.has(NVTX):
        return []
    rows = export.query(f"SELECT DISTINCT domainId FROM {NVTX} WHERE eventType = ? AND text = ?",
                        (export.event_types["NvtxDomainCreate"], name))
    return export.ints([r[0] for r in rows if r[0] is not None]).tolist()


def _text_expression(export: Export) -> str:
    """NVTX text: ASCII messages are in `text`, registered ones in StringIds via `textId`."""
    if "textId" in export.columns(NVTX) and export.has("StringIds"):
        return f"COALESCE({NVTX}.text, (SELECT value FROM StringIds WHERE id = {NVTX}.textId))"
    return f"{NVTX}.text"


def read_ranges(export: Export, domains: list[int]) -> NvtxRanges:
    """Push/pop ranges of the given domains, ordered by thread, then start, outermost first."""
    columns = export.columns(NVTX)
    payload = "COALESCE(int64Value, uint64Value, 0)" if "uint64Value" in columns else "COALESCE(int64Value, 0)"
    where = f"eventType = ? AND domainId IN ({','.join('?' * len(domains))})"
    rows = export.query(
        f"SELECT start, COALESCE(end, {OPEN_END}), COALESCE(globalTid, 0), COALESCE(category, 0), "
        f"COALESCE(color, 0), {payload}, {_text_expression(export)} FROM {NVTX} WHERE {where} "
        f"ORDER BY globalTid, start, end DESC",
        (export.event_types["NvtxPushPopRange"], *domains))
    if not rows:
        empty = np.zeros(0, dtype=np.int64)
        return NvtxRanges(empty, empty, empty, empty, empty, empty, [])
    start, end, tid, kind, color, value, text = zip(*rows)
    as_int = export.ints
    return NvtxRanges(as_int(start), as_int(end), as_int(tid), as_int(kind), as_int(color), as_int(value),
                      [t or "" for t in text])


def read_marks(export: Export, domains: list[int], prefix: str) -> list[str]:
    """Texts of the marks in `domains` that start with `prefix`, in time order."""
    if not domains:
        return []
    rows = export.query(
        f"SELECT {_text_expression(export)} AS t FROM {NVTX} WHERE eventType = ? "
        f"AND domainId IN ({','.join('?' * len(domains))}) ORDER BY start",
        (export.event_types["NvtxMark"], *domains))
    return [r[0] for r in rows if r[0] and r[0].startswith(prefix)]


@dataclass
class RuntimeCalls:
    start: np.ndarray
    end: np.ndarray
    tid: np.ndarray  # globalTid
    correlation: np.ndarray


def read_runtime(export: Export) -> RuntimeCalls:
    rows = export.query(f"SELECT start, end, COALESCE(globalTid, 0), COALESCE(correlationId, 0) FROM {RUNTIME} "
                        f"WHERE correlationId IS NOT NULL") if export.has(RUNTIME) else []
    cols = [export.ints(c) for c in zip(*rows)] if rows else [np.zeros(0, np.int64)] * 4
    return RuntimeCalls(*cols)


@dataclass
class GpuRows:
    """Kernels, memcpys and memsets, as parallel columns (kind: visprof.native.records KIND_*)."""

    kind: np.ndarray
    start: np.ndarray
    end: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    correlation: np.ndarray
    pid: np.ndarray  # globalPid
    name: list[str]
    grid: np.ndarray  # (n, 3)
    block: np.ndarray  # (n, 3)
    registers: np.ndarray
    shared_mem: np.ndarray
    nbytes: np.ndarray

    def __len__(self) -> int:
        return len(self.start)


def _kernel_name_column(export: Export) -> str:
    """The kernel name CUPTI reports (mangled), as visprof records it; else the demangled one."""
    columns = export.columns(KERNEL)
    for column in ("mangledName", "demangledName", "shortName"):
        if column in columns:
            if column == "mangledName":  # NULL for kernels without a C++ mangled name (e.g. nvjet_*)
                return "COALESCE(k.mangledName, k.demangledName)"
            return f"k.{column}"
    raise BadInputError(f"{export.path}: {KERNEL} has no kernel name column (mangledName/demangledName/shortName)")


def read_gpu_rows(export: Export) -> GpuRows:
    from visprof.native.records import KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET

    parts = []
    if export.has(KERNEL):
        name = _kernel_name_column(export)
        parts.append(export.query(
            f"SELECT {KIND_KERNEL}, k.start, k.end, k.deviceId, k.streamId, COALESCE(k.correlationId, 0), "
            f"COALESCE(k.globalPid, 0), s.value, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ, "
            f"k.registersPerThread, k.staticSharedMemory + k.dynamicSharedMemory, 0 "
            f"FROM {KERNEL} AS k LEFT JOIN StringIds AS s ON s.id = {name}"))
    for table, kind, label in ((MEMCPY, KIND_MEMCPY, "[memcpy]"), (MEMSET, KIND_MEMSET, "[memset]")):
        if export.has(table):
            parts.append(export.query(
                f"SELECT {kind}, start, end, deviceId, streamId, COALESCE(correlationId, 0), COALESCE(globalPid, 0), "
                f"'{label}', 0, 0, 0, 0, 0, 0, 0, 0, bytes FROM {table}"))
    rows = [row for part in parts for row in part]
    n = len(rows)
    cols = list(zip(*rows)) if rows else [()] * 17
    as_int = lambda xs: export.ints(xs).reshape(n)  # noqa: E731
    return GpuRows(
        kind=as_int(cols[0]), start=as_int(cols[1]), end=as_int(cols[2]), device=as_int(cols[3]),
        stream=as_int(cols[4]), correlation=as_int(cols[5]), pid=as_int(cols[6]),
        name=[str(x) if x is not None else "[unknown kernel]" for x in cols[7]],
        grid=np.stack([as_int(cols[8]), as_int(cols[9]), as_int(cols[10])], axis=1) if n else np.zeros((0, 3), np.int64),
        block=np.stack([as_int(cols[11]), as_int(cols[12]), as_int(cols[13])], axis=1) if n else np.zeros((0, 3), np.int64),
        registers=as_int(cols[14]), shared_mem=as_int(cols[15]), nbytes=as_int(cols[16]),
    )


def read_gpus(export: Export) -> dict[int, dict]:
    """{device id: facts} from TARGET_INFO_GPU, in visprof.base.hardware's key names where they match."""
    if not export.has(GPU_INFO):
        return {}
    columns = export.columns(GPU_INFO)
    wanted = {"name": "name", "totalMemory": "memory_total_bytes", "smCount": "sm_count",
              "clockRate": "clock_rate_hz", "memoryBandwidth": "memory_bandwidth_bytes_per_s",
              "l2CacheSize": "l2_cache_bytes", "busLocation": "pci_bus_id", "uuid": "uuid", "chipName": "chip"}
    present = [c for c in wanted if c in columns]
    out: dict[int, dict] = {}
    for row in export.query(f"SELECT id, {', '.join(present)}" + (", computeMajor, computeMinor" if
                            {"computeMajor", "computeMinor"} <= columns else "") + f" FROM {GPU_INFO}"):
        facts = {wanted[c]: v for c, v in zip(present, row[1:]) if v is not None}
        if len(row) > len(present) + 1 and row[-2] is not None:
            facts["compute_capability"] = f"{row[-2]}.{row[-1]}"
        out.setdefault(int(export.ints(row[0])), facts)
    return out


def why_no_gpu_rows(export: Export) -> str:
    """Why an export has no kernel, memcpy or memset rows, as far as the file tells."""
    if export.has(RUNTIME):
        return (f"it has CUDA API calls but no {KERNEL} table: this nsys ({export.nsys_version}) did not record the "
                "GPU side; Nsight Systems 2022.4 records none under CUDA 13 (it does not know CUDA 13's runtime "
                "API), use a release that supports your CUDA (2025.x for CUDA 13)")
    return "it has no CUDA activity at all: a CPU-only run, or nsys ran without --trace cuda"


def pid_of(global_id: np.ndarray) -> np.ndarray:
    """The process part of a serialized GlobalId (globalTid or globalPid): bits 24-63."""
    return np.asarray(global_id, dtype=np.int64) >> 24
