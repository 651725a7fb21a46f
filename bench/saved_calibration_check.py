"""A saved calibration, applied by `visprof compare --calibration`, against the fit it was saved from.

    visprof calibrate PAIR.db profiles.db --base rtx4090 --target rtx5090 --lambda 0.1 --save cal.json
    visprof compare PAIR.db profiles.db --calibration cal.json --csv compared.csv
    python bench/saved_calibration_check.py PAIR.db profiles.db rtx4090 rtx5090 compared.csv --lambda 0.1

Fits the pair in this process (``fit_calibration`` on ``fleet_from_comparison``, as `visprof
calibrate` does), predicts its published models in sample, and prints how far the CSV's calibrated
speed-ups and bands (made from the saved file) are from those: the largest relative difference of
each, over the models matched by name and published speed-up.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from visprof.analysis import sources
from visprof.analysis.calibrate import fit_calibration
from visprof.analysis.calibration_fleet import fleet_from_comparison
from visprof.analysis.compare import compare
from visprof.analysis.gpus import gpu_table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("refs", type=Path)
    parser.add_argument("store", type=Path)
    parser.add_argument("base")
    parser.add_argument("target")
    parser.add_argument("csv", type=Path, help="visprof compare --calibration ... --csv FILE")
    parser.add_argument("--lambda", dest="lam", type=float, help="as given to visprof calibrate")
    args = parser.parse_args(argv)
    table = gpu_table()
    loaded = sources.load([args.refs, args.store], table)
    fleet, _ = fleet_from_comparison(compare(loaded.measurements, args.base, args.target, table), loaded.profiles, table)
    fit = fit_calibration(fleet, lam=args.lam)
    idx = np.flatnonzero(np.isfinite(fleet.log_obs))
    mid, low, high = fit.predict(fleet.X[idx], fleet.log_spec[idx], [fleet.families[i] for i in idx])
    here = pd.DataFrame({"model": [fleet.models[i] for i in idx], "speedup": np.exp(fleet.log_obs[idx]),
                         "mid": mid, "low": low, "high": high})
    saved = pd.read_csv(args.csv).dropna(subset=["calibrated"])
    both = here.merge(saved, on=["model", "speedup"])
    print(f"{len(here)} published models fitted here, {len(saved)} calibrated in the CSV, {len(both)} matched")
    for name, ours, theirs in (("calibrated", "mid", "calibrated"), ("band low", "low", "calibrated_low"),
                               ("band high", "high", "calibrated_high")):
        print(f"  {name}: largest relative difference {np.max(np.abs(both[ours] / both[theirs] - 1)):.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
