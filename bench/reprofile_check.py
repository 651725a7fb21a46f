"""Profiles made again against the earlier rows of the same cells, and the kernel families' new fields checked.

    python bench/reprofile_check.py .sweep/refill300.db /tmp/profiles-before.db

For every model of the new store (a sweep that profiled models again) with an earlier profile at the same
batch and input shape in the other store (the consolidated store before the merge; its latest such row):
the ratio new / old of the timing pass's GPU busy time, of the attributed pass's kernel time and of the
median latency, and the largest change of any category's share. Then, on the new profiles alone: summed
over kernel families, FLOPs and bytes against those of the op types that launched kernels, and the FLOPs
on copy, pointwise and layout kernels (which do no math). Record: bench/results/h200-newfields-2026-12-05/.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from visprof.analysis import sources

# kernels that move or convert data: an op's FLOPs never belong to them (visprof.attribution.op_types)
NO_MATH = ("elementwise", "nchwToNhwc", "nhwcToNchw", "copy", "memcpy")


def spread(ratios: np.ndarray) -> str:
    return (f"median x{np.median(ratios):.4f}, 10-90% x{np.quantile(ratios, .1):.4f}-x{np.quantile(ratios, .9):.4f}, "
            f"largest |change| {np.max(np.abs(ratios - 1)) * 100:.1f}%")


def largest_share_change(new, old) -> float:
    a, b = new.category_totals(), old.category_totals()
    return max(abs(getattr(a.get(n), "share", 0.0) - getattr(b.get(n), "share", 0.0)) for n in set(a) | set(b))


def field_sums(result) -> tuple[float, float, float]:
    """(family FLOPs / op-type FLOPs, family bytes / op-type bytes, share of family FLOPs on NO_MATH kernels)."""
    families = result.kernel_families
    launched = [o for o in result.op_types if o.kernels > 0]
    gflop, op_gflop = sum(k.gflop or 0.0 for k in families), sum(o.gflop for o in launched)
    mb, op_mb = sum(k.mb or 0.0 for k in families), sum(o.mb for o in launched)
    no_math = sum(k.gflop or 0.0 for k in families if any(part in k.family for part in NO_MATH))
    return (gflop / op_gflop if op_gflop else 1.0, mb / op_mb if op_mb else 1.0, no_math / gflop if gflop else 0.0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("new", type=Path, help="the store of the profiles made again")
    parser.add_argument("earlier", type=Path, help="a store with the earlier profiles")
    args = parser.parse_args(argv)
    missing = [str(p) for p in (args.new, args.earlier) if not p.is_file()]
    if missing:
        print(f"reprofile_check.py: not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    new = {m.model: m.result for m in sources.load([str(args.new)]).profiles if m.result}
    old = {}
    for m in sources.load([str(args.earlier)]).profiles:  # in row order: the latest matching row wins
        r = m.result
        if r and m.model in new and (r.model.batch_size, r.model.input_shape) == (
                new[m.model].model.batch_size, new[m.model].model.input_shape):
            old[m.model] = r
    models = sorted(old)
    print(f"models profiled again: {len(new)}; with an earlier row at the same batch and input shape: {len(models)}")
    if models:
        for label, value in (("GPU busy ms (timing pass)", lambda r: r.timing.busy_ms),
                             ("attributed kernel ms", lambda r: r.attribution.kernel_ms),
                             ("latency median (CUDA events)", lambda r: r.timing.latency_ms.median)):
            print(f"{label + ', new/old:':38s} {spread(np.array([value(new[k]) / value(old[k]) for k in models]))}")
        change = np.array([largest_share_change(new[k], old[k]) for k in models]) * 100
        print(f"largest category-share change per model, points: median {np.median(change):.2f}, "
              f"90th pct {np.quantile(change, .9):.2f}, max {change.max():.2f}")
    sums = np.array([field_sums(r) for r in new.values()])
    print(f"kernel families / launching op types, over {len(sums)} profiles: FLOPs x{sums[:, 0].min():.6f}-"
          f"x{sums[:, 0].max():.6f}, bytes x{sums[:, 1].min():.6f}-x{sums[:, 1].max():.6f}; "
          f"profiles with FLOPs on copy, pointwise or layout kernels: {int((sums[:, 2] > 0).sum())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
