"""How the calibration's 80% band covers held-out families of each size (issue 25, item 4).

    python bench/band_check.py --run before DIR1 --run after DIR2 [--draws 20000] [--families 8]

Each DIR holds ``held-out-BASE-TARGET.csv.gz`` files as ``bench/calibrate_check.py`` writes them
(one row per held-out model: family, published speed-up, band low and high, and whether the
speed-up is inside, exact; older files without that flag: from their rounded numbers). Per pair and run:
the share of models whose published speed-up is inside the band, its mean over families (what a
new kind of model sees; the large families dominate the first), the same by family size, the
band's median half-width, and, over random draws of ``--families`` whole families, the 5th
percentile and median of their coverage and the share at or below ``--at-or-below`` (a set of
new architectures is about as many draws as it has families: its models miss together).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

SIZE_CLASSES = ((1, 1), (2, 3), (4, 9), (10, 30), (31, None))


def load(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path)
    missing = {"family", "speedup", "low", "high"} - set(frame.columns)
    if missing:
        raise ValueError(f"{path}: not a held-out predictions file (no {', '.join(sorted(missing))} column)")
    if "inside" not in frame.columns:  # files before the exact flag: from the rounded numbers
        frame["inside"] = (frame.speedup >= frame.low) & (frame.speedup <= frame.high)
    frame["inside"] = frame.inside.astype(bool)
    frame["family_size"] = frame.family.map(frame.family.value_counts())
    return frame


def size_label(low: int, high: int | None) -> str:
    return f"{low}+" if high is None else (str(low) if low == high else f"{low}-{high}")


def coverage_by_size(frame: pd.DataFrame) -> dict[str, tuple[float, int]]:
    """Coverage and models, by the size of the model's family."""
    out = {}
    for low, high in SIZE_CLASSES:
        rows = frame[(frame.family_size >= low) & (frame.family_size <= (high or len(frame)))]
        if len(rows):
            out[size_label(low, high)] = (float(rows.inside.mean()), len(rows))
    return out


def family_draws(frame: pd.DataFrame, families: int, draws: int, at_or_below: float,
                 seed: int = 0) -> tuple[float, float, float]:
    """Over ``draws`` random sets of ``families`` whole families: the 5th percentile and median of
    their models' coverage, and the share of sets at or below ``at_or_below``."""
    names = frame.family.unique()
    if families > len(names):
        raise ValueError(f"{families} families asked for, {len(names)} held out")
    inside = frame.groupby("family").inside.agg(["sum", "count"])
    hits, counts = inside["sum"].to_numpy(float), inside["count"].to_numpy(float)
    rng = np.random.default_rng(seed)
    picks = np.array([rng.choice(len(names), families, replace=False) for _ in range(draws)])
    cover = hits[picks].sum(axis=1) / counts[picks].sum(axis=1)
    return float(np.percentile(cover, 5)), float(np.median(cover)), float(np.mean(cover <= at_or_below))


def half_width(frame: pd.DataFrame) -> float:
    """The band's median half-width, as a ratio: exp(median of log(high / low) / 2) - 1."""
    return float(np.exp(np.median(np.log(frame.high / frame.low)) / 2) - 1)


def report(runs: list[tuple[str, Path]], families: int, draws: int, at_or_below: float) -> str:
    pairs = sorted({p.name for _, d in runs for p in d.glob("held-out-*.csv.gz")})
    if not pairs:
        raise ValueError("no held-out-*.csv.gz in any --run folder")
    head = "| run | models | inside | mean over families | " + " | ".join(
        f"family of {size_label(lo, hi)}" for lo, hi in SIZE_CLASSES) + \
        f" | half-width | {families} families: 5th pct / median / <= {at_or_below:.1%} |"
    lines = []
    for name in pairs:
        pair = name[len("held-out-"):-len(".csv.gz")].replace("-", " -> ")
        lines += [f"\n{pair}\n", head, "|" + " --- |" * (6 + len(SIZE_CLASSES))]
        for label, folder in runs:
            path = folder / name
            if not path.exists():
                continue
            frame = load(path)
            sizes = coverage_by_size(frame)
            fam_mean = frame.groupby("family").inside.mean().mean()
            p5, p50, low_share = family_draws(frame, families, draws, at_or_below)
            cells = [f"{sizes[size_label(lo, hi)][0]:.1%} ({sizes[size_label(lo, hi)][1]})"
                     if size_label(lo, hi) in sizes else "-" for lo, hi in SIZE_CLASSES]
            lines.append(f"| {label} | {len(frame)} | {frame.inside.mean():.1%} | {fam_mean:.1%} | " + " | ".join(cells)
                         + f" | {half_width(frame):.1%} | {p5:.1%} / {p50:.1%} / {low_share:.1%} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", nargs=2, action="append", metavar=("LABEL", "DIR"), required=True,
                        help="a label and a folder of held-out-*.csv.gz files (repeatable)")
    parser.add_argument("--families", type=int, default=8, help="families per random draw (default 8)")
    parser.add_argument("--draws", type=int, default=20000)
    parser.add_argument("--at-or-below", type=float, default=0.591, help="coverage to count draws at or below")
    args = parser.parse_args(argv)
    runs = [(label, Path(folder)) for label, folder in args.run]
    for _, folder in runs:
        if not folder.is_dir():
            parser.error(f"{folder}: not a folder")
    try:
        sys.stdout.write(report(runs, args.families, args.draws, args.at_or_below))
    except (ValueError, OSError) as e:
        parser.error(str(e))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
