"""The results store's SQLite schema, version 1 (documented in docs/sweep.md).

Tables:
    meta               key/value: schema_version, created_at, created_by
    runs               one row per ``visprof sweep`` invocation (status, counts, timing)
    results            one row per (cell, GPU uuid or CPU id, software versions): the flattened
                       figures and the whole ProfileResult (zlib-compressed JSON)
    result_categories  per result, one row per (category, subcategory): time, share, FLOPs, memory
    result_memory      per result, memory by category key at the peak (allocated and reserved)
    result_op_types    per result, one row per aten op type: calls, kernels, time, FLOPs, bytes, category
    result_kernel_families  per result, one row per kernel family: calls, time, category, FLOPs,
                       bytes, launch shape
    result_kernel_family_categories  per result, a kernel family's time by (category,
                       subcategory) of its kernels (a shared kernel serves several)
    failures           one row per failed (cell, GPU, versions): class, message, attempts
    references         measurements imported from elsewhere (timm benchmark CSV rows)

Compatibility: a reader opens any store whose schema_version it knows. Tables and columns may
be added within version 1: every table is created IF NOT EXISTS, so a store made before one
gains it when opened for writing (and reads it as empty before that); readers select columns by
name, and ADDED_COLUMNS lists the added ones so that a store made before them gains them too.
Renaming or removing a column, or changing its unit, makes version 2, and this module then
migrates older stores on open.
"""
from __future__ import annotations

SCHEMA_VERSION = 1

# Columns added to a table after stores with that table were written: (table, column, SQL type).
ADDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("result_kernel_families", "gflop", "REAL"),
    ("result_kernel_families", "mb", "REAL"),
    ("result_kernel_families", "blocks", "REAL"),
    ("result_kernel_families", "threads", "REAL"),
)

# The columns that make a result unique: a new visprof, torch, timm or CUDA makes a new row.
IDENTITY = ("cell_key", "gpu_uuid", "visprof_version", "torch_version", "timm_version", "cuda_version")
# What makes a reference row (a published measurement) one: a second with these is not stored.
REFERENCE_IDENTITY = ("source", "gpu_name", "model", "img_size", "batch_size", "precision")

# Configuration columns shared by results and failures (what was asked for).
_CELL_COLUMNS = """
    cell_key             TEXT    NOT NULL,
    model                TEXT    NOT NULL,
    batch_size_requested INTEGER NOT NULL,
    img_size_requested   TEXT    NOT NULL,
    precision            TEXT    NOT NULL,
    channels_last        INTEGER NOT NULL,
    passes               TEXT    NOT NULL,
    options              TEXT    NOT NULL,
    device_kind          TEXT    NOT NULL,
    gpu_uuid             TEXT    NOT NULL,
    gpu_name             TEXT,
    host                 TEXT,
    visprof_version      TEXT    NOT NULL,
    torch_version        TEXT    NOT NULL,
    timm_version         TEXT    NOT NULL,
    cuda_version         TEXT    NOT NULL,
"""

# Flattened figures of a result, in table order: (column, SQL type). Missing figures are NULL.
RESULT_FIGURES: tuple[tuple[str, str], ...] = (
    ("batch_size", "INTEGER"),
    ("batch_sizes_tried", "TEXT"),
    ("img_height", "INTEGER"),
    ("img_width", "INTEGER"),
    ("param_count", "INTEGER"),
    ("device", "TEXT"),
    ("grad_mode", "TEXT"),
    ("autocast", "TEXT"),
    ("measurement", "TEXT"),
    ("latency_median_ms", "REAL"),
    ("latency_mean_ms", "REAL"),
    ("latency_p10_ms", "REAL"),
    ("latency_p90_ms", "REAL"),
    ("latency_min_ms", "REAL"),
    ("latency_max_ms", "REAL"),
    ("latency_std_ms", "REAL"),
    ("samples_per_s", "REAL"),
    ("timing_iterations", "INTEGER"),
    ("busy_ms", "REAL"),
    ("idle_ms", "REAL"),
    ("max_memory_allocated_bytes", "INTEGER"),
    ("max_memory_reserved_bytes", "INTEGER"),
    ("peak_bytes", "INTEGER"),
    ("reserved_peak_bytes", "INTEGER"),
    ("alloc_count", "INTEGER"),
    ("kernel_ms", "REAL"),
    ("activity_ms", "REAL"),
    ("coverage", "REAL"),
    ("weight_cast_ms", "REAL"),
    ("flops", "REAL"),
    ("sm_clock_mhz_median", "REAL"),
    ("mem_clock_mhz_median", "REAL"),
    ("power_w_median", "REAL"),
    ("power_w_max", "REAL"),
    ("temperature_c_max", "REAL"),
    ("energy_j", "REAL"),
    ("throttle_reasons", "TEXT"),
    ("checks_failed", "INTEGER"),
    ("checks_failed_names", "TEXT"),
    ("warnings_count", "INTEGER"),
    ("timing_wall_s", "REAL"),
    ("trace_only_wall_s", "REAL"),
    ("attributed_wall_s", "REAL"),
    ("memory_wall_s", "REAL"),
    ("wall_s", "REAL"),
    ("attempts", "INTEGER"),
    ("created_at", "TEXT"),
)

DDL = f"""
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id            INTEGER PRIMARY KEY,
    started_at    TEXT NOT NULL,
    ended_at      TEXT,
    status        TEXT NOT NULL,
    argv          TEXT,
    host          TEXT,
    executor      TEXT,
    cells_planned INTEGER,
    cells_skipped INTEGER,
    cells_done    INTEGER,
    cells_failed  INTEGER,
    elapsed_s     REAL,
    startup_s     REAL
);
CREATE TABLE IF NOT EXISTS results (
    id     INTEGER PRIMARY KEY,
    run_id INTEGER REFERENCES runs(id),
{_CELL_COLUMNS}
{''.join(f'    {name} {sql_type},{chr(10)}' for name, sql_type in RESULT_FIGURES)}
    result_json BLOB NOT NULL,
    UNIQUE ({', '.join(IDENTITY)})
);
CREATE INDEX IF NOT EXISTS results_model ON results(model);
CREATE INDEX IF NOT EXISTS results_gpu ON results(gpu_name);
CREATE TABLE IF NOT EXISTS result_categories (
    result_id            INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
    category             TEXT    NOT NULL,
    subcategory          TEXT    NOT NULL,
    time_ms              REAL,
    share                REAL,
    kernel_count         REAL,
    flops                REAL,
    tflops               REAL,
    live_bytes_at_peak   INTEGER,
    transient_peak_bytes INTEGER,
    PRIMARY KEY (result_id, category, subcategory)
);
CREATE TABLE IF NOT EXISTS result_memory (
    result_id         INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
    key               TEXT    NOT NULL,
    allocated_at_peak INTEGER,
    reserved_at_peak  INTEGER,
    transient_peak    INTEGER,
    PRIMARY KEY (result_id, key)
);
CREATE TABLE IF NOT EXISTS result_op_types (
    result_id   INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
    op_type     TEXT    NOT NULL,
    category    TEXT    NOT NULL,
    subcategory TEXT    NOT NULL,
    calls       REAL,
    kernels     REAL,
    time_ms     REAL,
    share       REAL,
    gflop       REAL,
    mb          REAL,
    PRIMARY KEY (result_id, op_type)
);
CREATE TABLE IF NOT EXISTS result_kernel_families (
    result_id   INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
    family      TEXT    NOT NULL,
    category    TEXT    NOT NULL,
    subcategory TEXT    NOT NULL,
    calls       REAL,
    time_ms     REAL,
    share       REAL,
    gflop       REAL,
    mb          REAL,
    blocks      REAL,
    threads     REAL,
    PRIMARY KEY (result_id, family)
);
CREATE TABLE IF NOT EXISTS result_kernel_family_categories (
    result_id   INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
    family      TEXT    NOT NULL,
    category    TEXT    NOT NULL,
    subcategory TEXT    NOT NULL,
    time_ms     REAL,
    PRIMARY KEY (result_id, family, category, subcategory)
);
CREATE INDEX IF NOT EXISTS op_types_op ON result_op_types(op_type);
CREATE TABLE IF NOT EXISTS failures (
    id     INTEGER PRIMARY KEY,
    run_id INTEGER REFERENCES runs(id),
{_CELL_COLUMNS}
    kind              TEXT    NOT NULL,
    error_class       TEXT    NOT NULL,
    message           TEXT    NOT NULL,
    detail            TEXT,
    batch_sizes_tried TEXT,
    attempts          INTEGER NOT NULL,
    final             INTEGER NOT NULL,
    first_at          TEXT    NOT NULL,
    last_at           TEXT    NOT NULL,
    UNIQUE ({', '.join(IDENTITY)})
);
CREATE TABLE IF NOT EXISTS "references" (
    id            INTEGER PRIMARY KEY,
    source        TEXT NOT NULL,
    gpu_name      TEXT NOT NULL,
    model         TEXT NOT NULL,
    img_size      INTEGER NOT NULL,
    batch_size    INTEGER NOT NULL,
    precision     TEXT NOT NULL,
    samples_per_s REAL,
    step_time_ms  REAL,
    param_count_m REAL,
    gmacs         REAL,
    macts_m       REAL,
    extra         TEXT,
    imported_at   TEXT NOT NULL,
    UNIQUE ({', '.join(REFERENCE_IDENTITY)})
);
CREATE INDEX IF NOT EXISTS references_model ON "references"(model);
"""
