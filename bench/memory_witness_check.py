"""Which published rows took different paths on their two GPUs, as the batches timm's benchmark settled on show.

    python bench/memory_witness_check.py \\
        --pair D/benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv D/benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv \\
        --pair D/benchmark-infer-amp-nchw-pt291-cu128-4090.csv D/benchmark-infer-amp-nchw-pt291-cu130-5090.csv \\
        --pair D/benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv D/benchmark-infer-amp-nchw-pt291-cu130-5090.csv \\
        --pair D/benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv D/benchmark-infer-amp-nchw-pt291-cu128-4090.csv \\
        --store profiles.db --held-out bench/results/band-leverage-2026-12-05/held-out-rtx4090-rtx5090.csv.gz

(D = ../shared/data/timm-benchmarks). Each --pair is two timm CSVs, base then target; the GPUs come
from the file names, their memory from visprof's spec table (the last pair is one RTX 4090 under
two software versions). Per pair: the rows whose batches no single memory footprint per sample
explains (``visprof.analysis.batch_witness``), the published speed-up of those rows against the
rest, and each row with its factor. With --store: for each such row with an H200 profile that
has a memory pass, its memory per sample (bf16, batch 64) beside the two runs' bounds (the
profile's weights and inputs, held whatever the batch, taken off each GPU's memory). With --held-out (a calibrate_check CSV of the pair whose GPUs it names): the families-held-out
calibrated error of those rows against the rest.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from visprof.analysis.batch_witness import WITNESS_FACTOR, footprint_factor, per_sample_bounds
from visprof.analysis.gpus import gpu_table
from visprof.analysis.metrics import spearman
from visprof.analysis.timm_csv import parse_benchmark_filename, read_benchmark_csv
from visprof.store.result_store import open_store

GIB = 2 ** 30
# The bar of batch_witness (1.2) and others around it: how many rows each would count.
BARS = (1.0, 1.1, 1.2, 1.3, 1.5)


def published(path: Path) -> tuple[str, pd.DataFrame]:
    """The spec id of the file's GPU and its rows (model, img_size, batch_size, samples_per_s)."""
    meta = parse_benchmark_filename(path.name)
    spec = gpu_table().find(meta["gpu"])
    rows = read_benchmark_csv(path, gpu_name=meta["gpu"]).rows
    return spec.id, pd.DataFrame(rows)[["model", "img_size", "batch_size", "samples_per_s"]]


def profile_memory(store: Path) -> dict[tuple[str, int], tuple[float, float]]:
    """(model, size) -> (bytes per sample, bytes held whatever the batch) of its smallest-batch profile
    with a memory pass."""
    found: dict[tuple[str, int], tuple[int, float, float]] = {}
    with open_store(store) as s:
        for doc in s.result_documents():
            memory, model = doc.get("memory"), doc["model"]
            if not memory or memory.get("baseline_bytes") is None:
                continue
            key, batch = (model["name"], model["img_size"]), model["batch_size"]
            if key not in found or batch < found[key][0]:
                held = memory["peak_bytes"] - memory["baseline_bytes"]
                found[key] = (batch, held / batch, float(memory["baseline_bytes"]))
    return {k: (v[1], v[2]) for k, v in found.items()}


def bounds_mib(batch: int, start: int, memory_gb: float, fixed: float) -> str:
    """One run's memory per sample as its batch bounds it, in MiB, with ``fixed`` bytes taken off the GPU's
    memory (GiB, as the cards have it)."""
    lo, hi = per_sample_bounds(batch, start, memory_gb * GIB - fixed)
    return f"({lo / 2**20:.0f}, {hi / 2**20:.0f}]" if lo is not None else f"(0, {hi / 2**20:.0f}]"


def held_out_line(held_out: pd.DataFrame, flagged: pd.DataFrame) -> str:
    """The families-held-out calibration on the witnessed rows against the rest (joined on model and
    published speed-up: the held-out CSV has no image size)."""
    errors = (held_out.calibrated / held_out.speedup - 1).abs()
    keys = set(zip(flagged.model, flagged.speedup.round(3)))
    mine = np.array([k in keys for k in zip(held_out.model, held_out.speedup.round(3))])
    ranked = {name: spearman(held_out.calibrated[rows].tolist(), held_out.speedup[rows].tolist())
              for name, rows in (("all", np.ones(len(mine), dtype=bool)), ("rest", ~mine))}
    return (f"  calibrated, families held out: {mine.sum()} of these rows, median abs. error {errors[mine].median():.1%} "
            f"against {errors[~mine].median():.1%} for the rest; inside the 80% band {int(held_out.inside[mine].sum())} "
            f"of {mine.sum()}; Spearman over all {len(held_out)} rows {ranked['all']:.3f}, over the other "
            f"{(~mine).sum()} {ranked['rest']:.3f}")


def check_pair(base_csv: Path, target_csv: Path, memory: dict, held_out: dict[tuple[str, str], pd.DataFrame]) -> str:
    table = gpu_table()
    (base_id, base), (target_id, target) = published(base_csv), published(target_csv)
    base_gb, target_gb = table.find(base_id).memory_gb, table.find(target_id).memory_gb
    joined = base.merge(target, on=["model", "img_size"], suffixes=("_base", "_target"))
    base_start, target_start = int(base.batch_size.max()), int(target.batch_size.max())
    joined["speedup"] = joined.samples_per_s_target / joined.samples_per_s_base
    found = [footprint_factor(int(r.batch_size_base), int(r.batch_size_target), base_start, target_start, base_gb,
                              target_gb) or ("", 0.0) for r in joined.itertuples()]
    joined["hungrier"], joined["factor"] = [run for run, _ in found], [factor for _, factor in found]
    flagged = joined[joined.factor > WITNESS_FACTOR]
    rest = joined.drop(flagged.index)
    lines = [f"{base_csv.name} ({base_id}, {base_gb:g} GB) -> {target_csv.name} ({target_id}, {target_gb:g} GB): "
             f"{len(joined)} rows, first batches {base_start} / {target_start}; "
             f"{int(((joined.batch_size_base < base_start) | (joined.batch_size_target < target_start)).sum())} rows "
             f"below the first batch on either GPU (the rest can witness nothing)",
             "  rows over other bars: " + ", ".join(f">{bar:g}: {int((joined.factor > bar).sum())}" for bar in BARS),
             f"  two paths witnessed: {len(flagged)} rows ({int((flagged.hungrier == 'target').sum())} "
             f"with the target's run the hungrier); published speed-up median x{flagged.speedup.median():.3f} "
             f"against x{rest.speedup.median():.3f} for the other {len(rest)}" if len(flagged) else
             f"  two paths witnessed: none (published speed-up median x{joined.speedup.median():.3f})"]
    for r in flagged.sort_values("speedup").itertuples():
        where = ""
        key = (r.model, int(r.img_size))
        if key in memory:
            per_sample, fixed = memory[key]
            where = (f"; H200 profile {per_sample / 2**20:.1f} MiB/sample, the runs' bounds "
                     f"{bounds_mib(int(r.batch_size_base), base_start, base_gb, fixed)} and "
                     f"{bounds_mib(int(r.batch_size_target), target_start, target_gb, fixed)}")
        lines.append(f"    {r.model} @{int(r.img_size)}: x{r.speedup:.3f}, batches {int(r.batch_size_base)} -> "
                     f"{int(r.batch_size_target)}, the {r.hungrier}'s run >= x{r.factor:.2f} per sample{where}")
    if (base_id, target_id) in held_out and len(flagged):
        lines.append(held_out_line(held_out[(base_id, target_id)], flagged))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pair", nargs=2, type=Path, action="append", required=True, metavar=("BASE_CSV", "TARGET_CSV"))
    parser.add_argument("--store", type=Path, help="a results store with H200 profiles (memory passes)")
    parser.add_argument("--held-out", type=Path, help="calibrate_check's held-out CSV of one of the pairs")
    args = parser.parse_args(argv)
    missing = [str(p) for p in [*(p for pair in args.pair for p in pair), args.store, args.held_out] if p and not p.is_file()]
    if missing:
        print(f"memory_witness_check: not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    memory = profile_memory(args.store) if args.store else {}
    # calibrate_check names its held-out CSVs held-out-BASE-TARGET.csv.gz
    held = ({tuple(args.held_out.name.removeprefix("held-out-").removesuffix(".csv.gz").split("-")):
             pd.read_csv(args.held_out)} if args.held_out else {})
    for base_csv, target_csv in args.pair:
        print(check_pair(base_csv, target_csv, memory, held), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
