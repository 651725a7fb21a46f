"""How close timm's published GEMM-heaviest models come to each GPU's datasheet tensor rate, per pair.

    D=../shared/data/timm-benchmarks
    python bench/tensor_ceiling.py --pair $D/benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv@rtx3090 \\
        $D/benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv@rtx4090 \\
        --pair $D/benchmark-infer-amp-nchw-pt291-cu128-4090.csv@rtx4090 $D/benchmark-infer-amp-nchw-pt291-cu130-5090.csv@rtx5090

A row's end-to-end rate is timm's GMACs x 2 x samples/s: a floor on the FLOP/s its GEMMs and
convolutions ran at. Per pair, over the (model, size) rows of both CSVs: each GPU's highest rate
and its share of the datasheet fp16 tensor rate (`visprof/data/gpus.toml`), and the speed-up of the
TOP rows with the highest rate on the base, against the datasheet tensor ratio and the fleet median.
No profile is read: it is the published data alone. Record: bench/results/calibrate-2026-12-03/README.md.
"""
from __future__ import annotations

import argparse
import sys

import pandas as pd

from visprof.analysis.gpus import gpu_table
from visprof.analysis.timm_csv import read_benchmark_csv
from visprof.base.errors import BadInputError


def rows(item: str) -> tuple[pd.DataFrame, str]:
    path, _, gpu = item.rpartition("@")
    if not path or not gpu:
        raise BadInputError(f"name each CSV as FILE@GPU (a gpus.toml id), got {item!r}")
    frame = pd.DataFrame(read_benchmark_csv(path, gpu_name=gpu).rows).set_index(["model", "img_size"])
    return frame[["samples_per_s", "gmacs"]].dropna(), gpu


def pair_lines(base_item: str, target_item: str, top: int) -> str:
    table = gpu_table()
    (base, base_gpu), (target, target_gpu) = rows(base_item), rows(target_item)
    specs = [table.get(base_gpu), table.get(target_gpu)]
    peaks = [spec.tensor_tflops.get("fp16") for spec in specs]
    if not all(peaks):
        raise BadInputError(f"{base_gpu} and {target_gpu} need an fp16 tensor rate in the GPU table")
    both = base.add_suffix("_base").join(target.add_suffix("_target"), how="inner")
    both = both[both["gmacs_base"] > 0]
    speedup = both["samples_per_s_target"] / both["samples_per_s_base"]
    rate = {side: both[f"samples_per_s_{side}"] * both["gmacs_base"] * 2 / 1e3 for side in ("base", "target")}
    heavy = rate["base"].nlargest(top).index
    lines = [f"{base_gpu} -> {target_gpu}: {len(both)} rows; datasheet fp16 tensor ratio x{peaks[1] / peaks[0]:.2f}, "
             f"fleet median speed-up x{speedup.median():.2f}"]
    for side, gpu, peak in (("base", base_gpu, peaks[0]), ("target", target_gpu, peaks[1])):
        best = rate[side].max()
        lines.append(f"  {gpu}: highest end-to-end rate {best:.0f} TFLOP/s, {best / peak:.0%} of its datasheet {peak:g}")
    lines.append(f"  the {top} rows with the highest rate on the {base_gpu} ({rate['base'][heavy].min():.0f}-"
                 f"{rate['base'][heavy].max():.0f} TFLOP/s): speed-up median x{speedup[heavy].median():.2f} "
                 f"(x{speedup[heavy].min():.2f}-x{speedup[heavy].max():.2f}), "
                 f"x{speedup[heavy].median() / (peaks[1] / peaks[0]):.2f} of the tensor ratio")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pair", nargs=2, action="append", required=True, metavar=("BASE.csv@GPU", "TARGET.csv@GPU"))
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args(argv)
    try:
        for base, target in args.pair:
            print(pair_lines(base, target, args.top))
    except BadInputError as exc:
        print(f"tensor_ceiling: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
