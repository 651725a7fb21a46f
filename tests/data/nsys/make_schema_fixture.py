"""Builds tests/data/nsys/<model>.schema3.sqlite.gz: what `nsys export --type sqlite` would
write for a `visprof profile MODEL --nvtx-only` run recorded with kernel rows, made from a
real visprof recording on the H200 (tests/data/<model>.trace.json.gz).

Why synthesized: no Nsight Systems that records kernels under CUDA 13 was available (the only
nsys at hand, Debian's 2022.4, records NVTX ranges and CUDA API calls there but no kernels),
so the kernel side of the importer is tested on tables laid out as the export schema
documents them. See README.md next to this file for exactly what is real and what is not.

What is real: every kernel, memcpy and memset row (name, device, stream, start/end on the GPU,
launch shape, bytes) and every op (name, module, iteration, FLOPs) comes from the recording.
What is made up: the host timeline. NVTX ranges follow visprof's scheme
(visprof/capture/nvtx_scheme.py) on one thread, with one CUDA API call per GPU row inside its
op's range, correlated by a fresh correlationId; a few warm-up kernels run before the first
model range, outside every visprof range.

    python tests/data/nsys/make_schema_fixture.py resnet50 deit_small_patch16_224
"""
from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from visprof import attribution  # noqa: E402
from visprof.attribution.categories import default_table  # noqa: E402
from visprof.capture.nvtx_scheme import (KIND_CATEGORY, KIND_MODEL, KIND_MODULE, KIND_OP, MODEL_COLOR,  # noqa: E402
                                        MODULE_COLOR, RUN_MARK_PREFIX, ModuleRanges, module_range_name,
                                        op_range_name)
from visprof.native.records import KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, CapturedTrace  # noqa: E402
from nsys_builder import ExportBuilder, global_tid  # noqa: E402

PID, TID = 4242, 4242
THREAD = global_tid(PID, TID)
WARMUP_ROWS = 3
LAUNCH_API = {KIND_KERNEL: "cudaLaunchKernel_v7000", KIND_MEMCPY: "cudaMemcpyAsync_v3020",
              KIND_MEMSET: "cudaMemsetAsync_v3020"}


def demangle(names: list[str]) -> dict[str, str]:
    mangled = [n for n in names if n.startswith("_Z")]
    if not mangled or shutil.which("c++filt") is None:
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True, text=True, check=True).stdout
    return {**{n: n for n in names}, **dict(zip(mangled, out.splitlines()))}


def build(model: str, out: Path) -> None:
    trace = CapturedTrace.load(REPO / "tests" / "data" / f"{model}.trace.json.gz")
    table = default_table()
    attr = attribution.attribute(trace, table)
    export = ExportBuilder({
        "EXPORT_PRODUCT_NAME": "visprof test fixture in the Nsight Systems export schema 3.x layout",
        "EXPORT_PRODUCT_VERSION": "fixture (tests/data/nsys/make_schema_fixture.py)",
        "EXPORT_SCHEMA_VERSION": "3.x (tables and columns of the current schema reference)",
        "EXPORT_INPUT_FILE": f"tests/data/{model}.trace.json.gz"})
    model_name = trace.meta.get("model", model)
    ranges = ModuleRanges(trace.modules, model_name)
    rows_of_op: dict[int, list[int]] = {}
    for row in sorted(range(len(trace.kernels)), key=lambda r: int(trace.kernels["correlation_id"][r])):
        rows_of_op.setdefault(int(attr.op_index[row]), []).append(row)
    iterations = sorted({op.iteration for op in trace.ops})
    ops_per_iteration = len(trace.ops) // len(iterations)
    names = demangle(list(trace.kernel_names))
    clock = {"t": 1_000_000_000, "correlation": 1000}

    def tick(ns: int = 7) -> int:
        clock["t"] += ns
        return clock["t"]

    def launch(row: int) -> None:
        clock["correlation"] += 1
        correlation = clock["correlation"]
        k = trace.kernels[row]
        kind = int(k["kind"])
        export.call(THREAD, tick(3), tick(4), correlation, LAUNCH_API[kind])
        start, end, device, stream = int(k["start_ns"]), int(k["end_ns"]), int(k["device"]), int(k["stream"])
        if kind == KIND_KERNEL:
            name = trace.kernel_names[int(k["name_id"])]
            export.kernel(PID, start, end, correlation, name, device=device, stream=stream,
                          mangled=name.startswith("_Z"), demangled=names[name], grid=tuple(map(int, k["grid"])),
                          block=tuple(map(int, k["block"])), registers=int(k["registers"]), shared=int(k["shared_mem"]))
        elif kind == KIND_MEMCPY:
            export.memcpy(PID, start, end, correlation, int(k["bytes"]), device=device, stream=stream)
        else:
            export.memset(PID, start, end, correlation, int(k["bytes"]), device=device, stream=stream)

    export.domain("visprof", THREAD, categories={KIND_MODEL: "model", KIND_MODULE: "module",
                                                 KIND_CATEGORY: "category", KIND_OP: "op"})
    export.gpu(0, name=trace.meta.get("gpu", "NVIDIA H200"))
    for row in range(WARMUP_ROWS):  # warm-up work before any visprof range: the import must leave it out
        launch(row)
    template = [op for op in trace.ops if op.iteration == iterations[0]]
    settings = {"model": model_name, "source": "timm", "batch_size": trace.meta.get("batch_size"),
                "precision": trace.meta.get("precision"), "device": "cuda:0", "iterations": len(iterations),
                "first_op_id": 1, "op_names": [op.name for op in template], "op_flops": [op.flops for op in template]}
    export.mark(THREAD, tick(), RUN_MARK_PREFIX + json.dumps(settings, sort_keys=True))
    index_of = {op.external_id: i for i, op in enumerate(trace.ops)}
    for i, iteration in enumerate(iterations):
        open_chain: tuple[int, ...] = ()
        open_ranges: list[int] = []
        ops = sorted((op for op in trace.ops if op.iteration == iteration), key=lambda op: op.cpu_start_ns)
        for j, op in enumerate(ops):
            n_pop, pushes, open_chain = ranges.step(open_chain, op.module)
            for _ in range(n_pop):
                export.close(open_ranges.pop(), tick())
            for m in pushes:
                record = trace.modules[m]
                kind = KIND_MODEL if record.parent < 0 else KIND_MODULE
                open_ranges.append(export.push(THREAD, tick(), module_range_name(record, model_name), kind=kind,
                                               color=MODEL_COLOR if kind == KIND_MODEL else MODULE_COLOR, payload=m))
            found = attr.op_classification(index_of[op.external_id])
            color = table.category(found.category).argb
            payload = 1 + i * ops_per_iteration + j
            category_range = export.push(THREAD, tick(), found.category, kind=KIND_CATEGORY, color=color,
                                         payload=payload)
            op_range = export.push(THREAD, tick(), op_range_name(found.category, found.subcategory, op.name),
                                   kind=KIND_OP, color=color, payload=payload)
            for row in rows_of_op.get(index_of[op.external_id], []):
                launch(row)
            export.close(op_range, tick())
            export.close(category_range, tick())
        while open_ranges:
            export.close(open_ranges.pop(), tick())
        tick(1000)  # the synchronize between iterations

    with tempfile.TemporaryDirectory() as scratch:
        db_path = export.write(Path(scratch) / "export.sqlite")
        with open(db_path, "rb") as src, gzip.GzipFile(out, "wb", mtime=0) as dst:
            shutil.copyfileobj(src, dst)
    print(f"wrote {out} ({out.stat().st_size} bytes): " +
          ", ".join(f"{len(rows)} {table}" for table, rows in export.rows.items()))


if __name__ == "__main__":
    for name in sys.argv[1:] or ["resnet50", "deit_small_patch16_224"]:
        build(name, HERE / f"{name}.schema3.sqlite.gz")
