"""A saved calibration applied to profiles at the published batch and at each profile's own, against
the published speed-ups: at which batch its 80% band holds what it says.

    visprof calibrate PAIR.db profiles.db --base rtx3090 --target rtx4090 --save cal.json
    python bench/calibration_batch_check.py PAIR.db profiles.db cal.json

For every profile of a model with both published numbers (the models the fit saw included: this
checks the batch, not the fit), the calibrated speed-up and band from the saved file
(``SavedCalibration.predict``, as `visprof predict --calibration` makes them) at the file's
published batch and at the profile's own batch (64 in the H200 store), against compare's published
speed-up of that model and image size: the share inside the band and the median signed error.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from visprof.analysis import sources
from visprof.analysis.calibration_file import SavedCalibration
from visprof.analysis.compare import compare
from visprof.analysis.gpus import gpu_table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("refs", type=Path)
    parser.add_argument("store", type=Path)
    parser.add_argument("calibration", type=Path, help="visprof calibrate --save FILE")
    args = parser.parse_args(argv)
    table = gpu_table()
    saved = SavedCalibration.load(args.calibration)
    loaded = sources.load([args.refs, args.store], table)
    comparison = compare(loaded.measurements, saved.base, saved.target, table)
    published = {(mc.model, mc.img_size): mc.speedup for mc in comparison.models}
    print(f"{saved.describe()}; published batch {saved.batch_size}")
    for label, batch_of in (("published batch", lambda p: None), ("profile's own batch", lambda p: p.batch_size)):
        inside, errors = [], []
        for profile in loaded.profiles:
            truth = published.get((profile.model, profile.img_size))
            if truth is None:
                continue
            r = saved.predict(profile, table, batch_size=batch_of(profile))
            if r is None:
                continue
            inside.append(r.low <= truth <= r.high)
            errors.append(r.calibrated / truth - 1.0)
        print(f"  at the {label:<20}: {len(inside):5d} profiles, {np.mean(inside):6.1%} of published speed-ups inside "
              f"the 80% band, median signed error {np.median(errors):+.1%}, median |error| {np.median(np.abs(errors)):.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
