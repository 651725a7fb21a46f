"""How much software alone moves timm's published numbers: one GPU under two software versions.

    python bench/software_pair.py ../shared/data/timm-benchmarks/benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv \\
        ../shared/data/timm-benchmarks/benchmark-infer-amp-nchw-pt291-cu128-4090.csv \\
        --pair ../shared/data/timm-benchmarks/benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv \\
               ../shared/data/timm-benchmarks/benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv \\
        --pair ../shared/data/timm-benchmarks/benchmark-infer-amp-nchw-pt291-cu128-4090.csv \\
               ../shared/data/timm-benchmarks/benchmark-infer-amp-nchw-pt291-cu130-5090.csv \\
        --models resnet50 vit_base_patch16_224 efficientnet_b3_gn resnetv2_50d_gn regnety_040_sgn poolformerv2_m36

The first two CSVs are the same GPU (the RTX 4090 under PyTorch 2.4/CUDA 12.4 and 2.9.1/CUDA 12.8):
their ratio per (model, size) is the software's speed-up. Printed: its median, quartiles and sd of
the log, the same for each --pair (a GPU pair), the rank correlation of the software speed-up with
each pair's, and the named models' speed-ups. Rows: the (model, size) pairs present in every CSV.
Record: bench/results/calibrate-2026-12-03/README.md.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from visprof.analysis.timm_csv import read_benchmark_csv


def throughput(path: Path) -> pd.Series:
    """Samples/s per (model, size), read as `visprof import-timm` reads it (``test_*`` rows dropped)."""
    rows = read_benchmark_csv(path, gpu_name=label(path)).rows
    return pd.DataFrame(rows).set_index(["model", "img_size"])["samples_per_s"]


def label(path: Path) -> str:
    """``pt240-cu124-rtx4090`` of timm's ``benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv``."""
    return "-".join(path.stem.split("-")[4:]) or path.stem


def summary(name: str, log: pd.Series) -> str:
    q1, q3 = np.exp(log.quantile([0.25, 0.75]))
    return f"{name:<44} median x{np.exp(log.median()):.3f}  quartiles x{q1:.3f}-x{q3:.3f}  sd of log {log.std():.3f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--pair", nargs=2, type=Path, action="append", default=[], metavar=("BASE", "TARGET"))
    parser.add_argument("--models", nargs="*", default=[])
    args = parser.parse_args(argv)
    paths = [args.old, args.new, *(p for pair in args.pair for p in pair)]
    table = pd.concat({str(i): throughput(p) for i, p in enumerate(paths)}, axis=1).dropna()
    software = np.log(table["1"] / table["0"])
    pairs = {f"{label(b)} -> {label(t)}": np.log(table[str(2 + 2 * i + 1)] / table[str(2 + 2 * i)])
             for i, (b, t) in enumerate(args.pair)}
    print(f"{len(table)} (model, size) rows in all {len(set(paths))} CSVs")
    print(summary(f"software: {label(args.old)} -> {label(args.new)}", software))
    for name, log in pairs.items():
        print(summary(name, log) + f"  rank corr. with software {software.rank().corr(log.rank()):+.3f}")
    for model in args.models:
        for (name, size), value in software[software.index.get_level_values(0) == model].items():
            moves = "  ".join(f"{p} x{np.exp(log[(name, size)]):.3f}" for p, log in pairs.items())
            print(f"  {name} @{size}: software x{np.exp(value):.3f}  {moves}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
