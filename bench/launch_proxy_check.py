"""Stage 1 of bench/results/launch-proxy-2026-12-05/prereg.md: which quantity of a profile's kernel-family
table ranks models as their launch sizes do? No published number is read.

    python bench/launch_proxy_check.py /tmp/profiles.db

Over the models whose newest profile has launch sizes, each candidate (from that same profile) is ranked
against its share of kernel time in launches of fewer than 256 thread blocks (one-per-SM launches left out,
as bench/share_residuals.py's `L:blocks<256`). The candidate with the largest |Spearman| is the proxy, if it
reaches PROCEED_AT.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Callable, Sequence

from visprof.analysis import sources
from visprof.analysis.metrics import spearman

LAUNCH_BOUND = 256  # blocks; the launch-size prereg's bound
PROCEED_AT = 0.7  # |Spearman| a candidate must reach for stage 2 to run (fixed in the prereg)

# Small launches are usually short ones. Every profile with op types keeps launches and GPU time per kernel
# family; few keep launch sizes.
COPIES = ("[memcpy]", "[memset]")  # no launch shape: left out


def _kernels(families: Sequence) -> list:
    return [k for k in families if k.family not in COPIES and k.calls and k.calls > 0 and k.time_ms > 0]


def mean_launch_us(families: Sequence) -> float:
    """log of kernel time per launch, in microseconds (NaN without kernels)."""
    kernels = _kernels(families)
    launches = sum(k.calls for k in kernels)
    if not launches:
        return float("nan")
    return math.log(sum(k.time_ms for k in kernels) * 1e3 / launches)


def short_share(bound_us: float) -> Callable[[Sequence], float]:
    """The share of kernel time in families whose mean launch lasts less than ``bound_us``."""

    def share(families: Sequence) -> float:
        kernels = _kernels(families)
        total = sum(k.time_ms for k in kernels)
        if not total:
            return float("nan")
        return sum(k.time_ms for k in kernels if k.time_ms * 1e3 / k.calls < bound_us) / total

    share.__name__ = f"short_share_{bound_us:g}"
    return share


# The candidates of the prereg, by name; no other is tried.
CANDIDATES: dict[str, Callable[[Sequence], float]] = {
    "mean_launch_us": mean_launch_us,
    "short_share_5": short_share(5),
    "short_share_10": short_share(10),
    "short_share_20": short_share(20),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path)
    args = parser.parse_args(argv)
    if not args.store.is_file():
        print(f"launch_proxy_check.py: not found: {args.store}", file=sys.stderr)
        return 2
    newest = {}
    for m in sources.load([str(args.store)]).profiles:
        if m.result is not None and m.result.launch_sizes and m.result.kernel_families:
            newest[m.model] = m.result
    if len(newest) < 10:
        print(f"launch_proxy_check.py: {len(newest)} profiles with launch sizes; 10 or more are needed",
              file=sys.stderr)
        return 2
    target = [r.launch_share_below(LAUNCH_BOUND) for r in newest.values()]
    print(f"{len(newest)} models with launch sizes; Spearman of each candidate with their kernel time in "
          f"launches of < {LAUNCH_BOUND} blocks:")
    scores = {}
    for name, candidate in CANDIDATES.items():
        values = [candidate(r.kernel_families) for r in newest.values()]
        scores[name] = spearman(values, target)
        print(f"  {name:16s} {scores[name]:+.3f}")
    best = max(scores, key=lambda n: abs(scores[n]))
    verdict = "stage 2 runs with it" if abs(scores[best]) >= PROCEED_AT else f"below {PROCEED_AT}: stage 2 does not run"
    print(f"proxy: {best} ({scores[best]:+.3f}); {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
