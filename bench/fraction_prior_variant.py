"""A variant of `visprof calibrate`, judged by bench/calibrate_check.py: the ridge's prior (the spec
model it corrects) at ``excess="fraction"`` instead of visprof's default ``clock``.

    python bench/fraction_prior_variant.py --pair /tmp/pair1.db rtx3090 rtx4090 \\
        --pair /tmp/pair2.db rtx4090 rtx5090 --store /tmp/profiles.db --out /tmp/fraction-prior

Arguments: calibrate_check's own. Each model's spec prediction, and the ``spec`` covariate made from
it, become its ``fraction`` prediction; a model without one keeps ``clock``. Its output's "spec
only" line is then ``fraction``. It wraps `visprof.analysis.calibration_fleet.fleet_from_comparison` for the
run instead of changing it, because it is a trial that did not gain on either pair
(bench/results/calibrate-2026-12-04/README.md).
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np

import visprof.analysis.calibrate as calibrate
import visprof.analysis.calibration_fleet as calibration_fleet

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibrate_check  # noqa: E402

PRIOR = "fraction"
_default_fleet = calibration_fleet.fleet_from_comparison


def anchored_at(fleet: calibrate.Fleet, mode: str) -> calibrate.Fleet:
    """``fleet`` with the spec model ``mode`` (one of its spec variants) as the prediction it corrects."""
    variant = fleet.spec_variants[mode]
    log_spec = np.where(np.isfinite(variant), variant, fleet.log_spec)
    X = fleet.X.copy()
    if "cov:spec" in fleet.features:
        X[:, fleet.features.index("cov:spec")] = calibrate.covariate_column(log_spec)
    return dataclasses.replace(fleet, X=X, log_spec=log_spec)


def fleet_with_prior(comparison, profiles, table=None, spec_excess=()):
    modes = list(dict.fromkeys([*spec_excess, PRIOR]))
    fleet, missing = _default_fleet(comparison, profiles, table, spec_excess=modes)
    return anchored_at(fleet, PRIOR), missing


def main(argv=None) -> int:
    calibrate_check.fleet_from_comparison = fleet_with_prior
    return calibrate_check.main(argv)


if __name__ == "__main__":
    sys.exit(main())
