"""Writes SQLite files in the layout of `nsys export --type sqlite` (export schema 3.x), for
tests and for tests/data/nsys/make_schema_fixture.py.

The DDL holds the tables visprof reads with the columns, in order, that NVIDIA's SQLite
schema reference documents for current Nsight Systems releases (2023-2025; checked against
a real 2022.4 export for NVTX_EVENTS and StringIds, which 2022.4 writes identically). Timestamps
are nanoseconds; globalTid = pid << 24 | tid, globalPid = pid << 24, as nsys serializes them.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

DDL = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL PRIMARY KEY, value TEXT);
CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, label TEXT);
CREATE TABLE TARGET_INFO_GPU (
    vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT, isDiscrete INTEGER,
    l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER,
    pageableMemoryAccess INTEGER, computeMajor INTEGER, computeMinor INTEGER, ctaPerSm INTEGER,
    threadsPerWarp INTEGER, maxIPC INTEGER, maxWarpsPerSm INTEGER, uuid TEXT, chipName TEXT);
CREATE TABLE NVTX_EVENTS (
    start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER,
    color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER REFERENCES StringIds(id),
    domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
    int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData BLOB);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
    start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER,
    correlationId INTEGER, nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL,
    callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
    greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
    demangledName INTEGER NOT NULL REFERENCES StringIds(id), shortName INTEGER NOT NULL REFERENCES StringIds(id),
    mangledName INTEGER REFERENCES StringIds(id), launchType INTEGER, cacheConfig INTEGER,
    registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
    blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
    dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
    gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (
    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
    greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
    bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,
    srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
    graphNodeId INTEGER, virtualAddress INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (
    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
    greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
    value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER, virtualAddress INTEGER);
"""
EVENT_TYPES = [(33, "NvtxCategory"), (34, "NvtxMark"), (39, "NvtxThread"), (59, "NvtxPushPopRange"),
               (60, "NvtxStartEndRange"), (75, "NvtxDomainCreate"), (76, "NvtxDomainDestroy")]
H200 = dict(name="NVIDIA H200", busLocation="0000:00:06.0", l2CacheSize=62914560, totalMemory=150_083_092_480,
            memoryBandwidth=4_800_000_000_000, clockRate=1_980_000_000, smCount=132, computeMajor=9,
            computeMinor=0, uuid="GPU-fixture", chipName="GH100")


def global_tid(pid: int, tid: int) -> int:
    return pid << 24 | tid


class ExportBuilder:
    """Accumulates rows; ``write(path)`` creates the file (only tables that got rows, as nsys does)."""

    def __init__(self, meta: dict[str, str] | None = None):
        self.strings: dict[str, int] = {}
        self.meta = meta or {"EXPORT_SCHEMA_VERSION": "3.x", "EXPORT_PRODUCT_VERSION": "test"}
        self.rows: dict[str, list[list]] = {}
        self.domain_id = 0

    def string(self, text: str) -> int:
        return self.strings.setdefault(text, len(self.strings) + 1)

    def _add(self, table: str, row: list) -> int:
        self.rows.setdefault(table, []).append(row)
        return len(self.rows[table]) - 1

    def _nvtx(self, start, end, event_type, tid, *, category=None, color=None, text=None, text_id=None,
              payload=None, domain=None) -> int:
        return self._add("NVTX_EVENTS", [start, end, event_type, None, category, color, text, tid, tid if end else None,
                                         text_id, self.domain_id if domain is None else domain, None, payload,
                                         None, None, None, None, None, None, None])

    def domain(self, name: str, tid: int, domain_id: int = 1, categories: dict[int, str] | None = None) -> None:
        self.domain_id = domain_id
        self._nvtx(0, None, 75, tid, text=name)
        for category, label in (categories or {}).items():
            self._nvtx(0, None, 33, tid, category=category, text=label)

    def push(self, tid: int, start: int, text: str, *, kind: int = 0, color: int = 0, payload: int = 0,
             end: int | None = None, registered: bool = True) -> int:
        """A push/pop range (end None: still open when recording stopped); returns its row."""
        if registered:
            return self._nvtx(start, end, 59, tid, category=kind, color=color, text_id=self.string(text), payload=payload)
        return self._nvtx(start, end, 59, tid, category=kind, color=color, text=text, payload=payload)

    def close(self, row: int, end: int) -> None:
        self.rows["NVTX_EVENTS"][row][1] = end
        self.rows["NVTX_EVENTS"][row][8] = self.rows["NVTX_EVENTS"][row][7]

    def mark(self, tid: int, start: int, text: str) -> None:
        self._nvtx(start, None, 34, tid, text=text)

    def call(self, tid: int, start: int, end: int, correlation: int, name: str = "cudaLaunchKernel_v7000") -> None:
        self._add("CUPTI_ACTIVITY_KIND_RUNTIME", [start, end, 0, tid, correlation, self.string(name), 0, None])

    def kernel(self, pid: int, start: int, end: int, correlation: int, name: str, *, device: int = 0,
               stream: int = 7, mangled: bool = True, grid=(1, 1, 1), block=(128, 1, 1), registers: int = 32,
               shared: int = 0, demangled: str | None = None) -> None:
        demangled = demangled or name
        self._add("CUPTI_ACTIVITY_KIND_KERNEL", [
            start, end, device, 1, None, stream, correlation, pid << 24, self.string(demangled),
            self.string(demangled.split("(")[0].split("<")[0].split("::")[-1]), self.string(name) if mangled else None,
            0, 0, registers, *grid, *block, shared, 0, 0, 0, correlation, None, None, None])

    def memcpy(self, pid: int, start: int, end: int, correlation: int, nbytes: int, *, device: int = 0,
               stream: int = 7) -> None:
        self._add("CUPTI_ACTIVITY_KIND_MEMCPY", [start, end, device, 1, None, stream, correlation, pid << 24, nbytes, 8,
                                                 None, 2, 2, 0, 1, 0, 1, None, None, None])

    def memset(self, pid: int, start: int, end: int, correlation: int, nbytes: int, *, device: int = 0,
               stream: int = 7) -> None:
        self._add("CUPTI_ACTIVITY_KIND_MEMSET", [start, end, device, 1, None, stream, correlation, pid << 24, 0, nbytes,
                                                 None, 2, None])

    def gpu(self, device: int = 0, **facts) -> None:
        f = {**H200, **facts}
        self._add("TARGET_INFO_GPU", [0, device, f["name"], f["busLocation"], 1, f["l2CacheSize"], f["totalMemory"],
                                      f["memoryBandwidth"], f["clockRate"], f["smCount"], 0, f["computeMajor"],
                                      f["computeMinor"], 32, 32, 4, 64, f["uuid"], f["chipName"]])

    def write(self, path: str | Path, drop_tables: tuple[str, ...] = ()) -> Path:
        path = Path(path)
        path.unlink(missing_ok=True)
        db = sqlite3.connect(path)
        db.executescript(DDL)
        db.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in self.strings.items()])
        db.executemany("INSERT INTO META_DATA_EXPORT VALUES (?, ?)", list(self.meta.items()))
        db.executemany("INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (?, ?, ?)", [(i, n, n) for i, n in EVENT_TYPES])
        for table, rows in self.rows.items():
            db.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(rows[0]))})", rows)
        # nsys writes a table only when it has rows
        for table in ("NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL",
                      "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "TARGET_INFO_GPU", *drop_tables):
            if table not in self.rows or table in drop_tables:
                db.execute(f"DROP TABLE {table}")
        db.commit()
        db.execute("VACUUM")
        db.close()
        return path
