"""The test of bench/results/launch-covariate-2026-12-05/prereg.md, judged by bench/calibrate_check.py: a
model's share of kernel time in launches of fewer than 256 thread blocks as a fourth calibration covariate.

    python bench/launch_covariate_variant.py --pair /tmp/pair1.db rtx3090 rtx4090 \\
        --pair /tmp/pair2.db rtx4090 rtx5090 --pair /tmp/pair3.db rtx3090 rtx5090 \\
        --store /tmp/profiles.db --out bench/results/launch-covariate-2026-12-05/after

Arguments: calibrate_check's own, --allow-partial and --launch-fallback STORE. The share is read from the
model's newest profile with launch sizes, at any batch or image size (`ProfileResult.launch_share_below`);
where --store has none, from --launch-fallback's (an H100 SXM store: the H200's chip and SM count, so the
same grids; the prereg's second amendment); a row without one gets
the median over the fleet's rows that have it (no published number is read, as for the covariates'
standardization). The prereg runs the test only once at least 95% of each pair's published rows have the
share: below that, a pair is refused with its coverage unless --allow-partial is given. It wraps
`visprof.analysis.calibration_fleet.make_fleet` for the run instead of changing it, until the prereg's rule says
whether the covariate is adopted.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import visprof.analysis.calibration_fleet as calibration_fleet
from visprof.analysis import sources
from visprof.analysis.families import architecture
from visprof.base.errors import BadInputError

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibrate_check  # noqa: E402

LAUNCH_BOUND = 256  # blocks: the power-of-two bin edge above the RTX 4090's 128 SMs (fixed in the prereg)
COVERAGE_NEEDED = 0.95  # of a pair's published rows, before the test runs
COVARIATE = "launch_share_below_256"


def newest_per_architecture(store: Path, value_of) -> dict[str, float]:
    """Per architecture, ``value_of(result)`` of its newest profile for which it is not None."""
    newest: dict[str, tuple[str, float]] = {}
    for m in sources.load([str(store)]).profiles:
        value = value_of(m.result) if m.result is not None else None
        if value is None:
            continue
        made = m.result.created_at or ""
        if m.arch not in newest or made >= newest[m.arch][0]:
            newest[m.arch] = (made, value)
    return {arch: value for arch, (_, value) in newest.items()}


def launch_shares(store: Path) -> dict[str, float]:
    """Per architecture, the small-launch share of its newest profile that has launch sizes."""
    return newest_per_architecture(store, lambda result: result.launch_share_below(LAUNCH_BOUND))


def shares_with_fallback(store: Path, fallback: Path | None) -> dict[str, float]:
    """``launch_shares(store)``, and ``fallback``'s for the architectures ``store`` has none of."""
    own = launch_shares(store)
    return {**launch_shares(fallback), **own} if fallback is not None else own


def with_covariate(make_fleet, shares: dict[str, float], allow_partial: bool = False, log=print,
                   name: str = COVARIATE, what: str = "launch sizes", needed: float = COVERAGE_NEEDED):
    """``make_fleet`` with one more covariate, ``shares`` by architecture (module doc): by default the
    small-launch share; ``name``, ``what`` (as the log names the data) and ``needed`` (the coverage of
    published rows below which it refuses) serve other per-architecture covariates."""

    def wrapped(models, families, buckets, spec_speedups, speedups, *args, covariates=None, **kwargs):
        values = [shares.get(architecture(m)) for m in models]
        have = np.array([v is not None for v in values])
        obs = np.asarray(speedups, dtype=float)
        published = np.isfinite(obs) & (obs > 0)
        coverage = float(have[published].mean()) if published.any() else 0.0
        log(f"{what}: {int(have[published].sum())} of {int(published.sum())} published rows "
            f"({coverage:.1%}), {int(have.sum())} of {len(models)} fleet rows")
        if coverage < needed and not allow_partial:
            raise BadInputError(f"{what} for {coverage:.1%} of the published rows; the prereg runs the test "
                                f"at {needed:.0%} or more (--allow-partial to run it anyway)")
        if not have.any():
            raise BadInputError(f"no model of this fleet has a profile with {what}")
        fill = float(np.median([v for v in values if v is not None]))
        column = [fill if v is None else v for v in values]
        return make_fleet(models, families, buckets, spec_speedups, speedups, *args,
                          covariates={**(covariates or {}), name: column}, **kwargs)

    return wrapped


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--store", type=Path)
    parser.add_argument("--allow-partial", action="store_true")
    parser.add_argument("--launch-fallback", type=Path)
    ours, rest = parser.parse_known_args(argv)
    for flag, path in (("--store", ours.store), ("--launch-fallback", ours.launch_fallback)):
        if (flag == "--store" or path is not None) and (path is None or not path.is_file()):
            print(f"launch_covariate_variant.py: {flag}: not found: {path}", file=sys.stderr)
            return 2
    shares = shares_with_fallback(ours.store, ours.launch_fallback)
    calibration_fleet.make_fleet = with_covariate(calibration_fleet.make_fleet, shares,
                                                 ours.allow_partial)  # read by fleet_from_comparison
    return calibrate_check.main([*rest, "--store", str(ours.store)])


if __name__ == "__main__":
    sys.exit(main())
