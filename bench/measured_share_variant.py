"""A variant of the `fraction` spec model, judged by bench/calibrate_check.py: each op group takes its
category's *measured* roof share from a bound library (`visprof bounds build`) instead of the
share its counted bytes and FLOPs give, where the library covers enough of that category's kernel
time in the profile.

    CAP=1 python bench/measured_share_variant.py bench/results/bounds-2026-12-03/h200-bounds.json 0.5 \
        --pair /tmp/pair1.db rtx3090 rtx4090 --pair /tmp/pair2.db rtx4090 rtx5090 \
        --store /tmp/profiles.db --out /tmp/measured-share

Arguments: the library, the least share of a category's kernel time its entries must cover (else
the group keeps the estimate), then calibrate_check's own. Per group: the category's time-weighted
DRAM and SM % of peak over the covered kernel families; the larger names the resource. That share of
the group's time (grown with the batch as in `predict_group`) scales with the resource's ratio
(bandwidth, or the compute peak of the group's precision), and the rest with the rate scaling.
CAP=1 keeps the prediction no faster than the target's roof for the counted work.

Only the spec-only `fraction` line changes; the calibration is unchanged. It wraps
`visprof.analysis.predict` for the run instead of changing it, because it is a trial and was
worse (bench/results/bounds-2026-12-03/README.md, "Predictions from the measured shares").
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from pathlib import Path

import visprof.analysis.group_scaling as group_scaling
import visprof.analysis.predict as predict
from visprof.analysis.measured_bounds import BoundLibrary
from visprof.analysis.roofline import roofline_ms
from visprof.base.errors import BadInputError

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibrate_check  # noqa: E402


def measured_shares(result, library: dict, min_cover: float) -> dict[str, tuple[float, float]]:
    """Per category: (DRAM, SM) share of peak, time-weighted over the profile's kernel families the
    library has, for the categories where they are at least ``min_cover`` of its kernel time."""
    total, covered, dram, sm = defaultdict(float), defaultdict(float), defaultdict(float), defaultdict(float)
    for k in result.kernel_families or []:
        if not k.time_ms:
            continue
        total[k.category] += k.time_ms
        entry = library.get((k.family, k.category))
        if entry and entry.sm_pct is not None and entry.dram_pct is not None:
            covered[k.category] += k.time_ms
            dram[k.category] += k.time_ms * entry.dram_pct
            sm[k.category] += k.time_ms * entry.sm_pct
    return {c: (dram[c] / covered[c] / 100, sm[c] / covered[c] / 100)
            for c in covered if covered[c] >= min_cover * total[c]}


def install(library: dict, min_cover: float, cap: bool) -> None:
    """Wraps predict_result (to know the profile) and predict_group (the measured split)."""
    current: dict = {}
    plain_result, plain_group = predict.predict_result, predict.predict_group

    def predict_result(result, target, **kwargs):
        current["shares"] = measured_shares(result, library, min_cover)
        return plain_result(result, target, **kwargs)

    def predict_group(g, source, target, scale=1.0, precision=None, efficiency=None, excess="clock", rate_scaling=None):
        out = plain_group(g, source, target, scale, precision, efficiency, excess, rate_scaling)
        shares = current.get("shares", {}).get(g.category)
        if excess != "fraction" or efficiency is not None or shares is None or source is None or (g.flops <= 0 and g.bytes <= 0):
            return out
        floor = g.kernel_count * group_scaling.KERNEL_FLOOR_MS
        helper_a = 0.0 if g.op in group_scaling.TRANSFERS and g.bytes > 0 else g.helper_ms
        main_a = max(g.time_ms - helper_a, 0.0)
        if main_a <= 0:
            return out
        # the measured time above the floors, grown with the batch as predict_group grows it
        activations = max(g.bytes - g.param_bytes, 0.0)
        roof_a = g.count * max(*roofline_ms(source, g.flops, g.bytes, g.tensor_core)[:2])
        grown_roof = g.count * max(*roofline_ms(source, g.flops * scale, activations * scale + g.param_bytes, g.tensor_core)[:2])
        grown = max(main_a - floor, 0.0) * (grown_roof / roof_a if roof_a > 0 else scale)
        dram, sm = shares
        rate = group_scaling.rate_ratio(source, target, rate_scaling or group_scaling.default_rate_scaling(source, target))
        target_precision = group_scaling.target_precision(g.tensor_core, precision)
        if dram >= sm:
            share, resource = min(dram, 1.0), source.memory_bandwidth_gbs / target.memory_bandwidth_gbs
        else:
            share = min(sm, 1.0)
            resource = roofline_ms(target, 1e12, 1.0, target_precision)[0] / roofline_ms(source, 1e12, 1.0, g.tensor_core)[0]
        main_b = floor + grown * share * resource + grown * (1 - share) * rate
        if cap:  # no faster than the target's roof for the counted work (the target's L2 hits off)
            in_l2 = activations * scale * group_scaling.l2_hit_share(activations * scale, target)
            dram_b = activations * scale + g.param_bytes - in_l2
            main_b = max(main_b, floor + g.count * max(*roofline_ms(target, g.flops * scale, dram_b, target_precision)[:2]))
        return group_scaling.GroupPrediction(g, main_b + out.helper_ms, out.bound, out.helper_ms)

    predict.predict_result, predict.predict_group = predict_result, predict_group


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2:
        print("usage: measured_share_variant.py LIBRARY MIN_COVER CALIBRATE_CHECK_ARGS...", file=sys.stderr)
        return 2
    try:
        library, min_cover = BoundLibrary.load(argv[0]).lookup(), float(argv[1])
    except (BadInputError, ValueError) as exc:  # BadInputError is a ValueError; so is a bad MIN_COVER
        print(f"measured_share_variant.py: {exc}", file=sys.stderr)
        return 2
    install(library, min_cover, os.environ.get("CAP") == "1")
    return calibrate_check.main(argv[2:])


if __name__ == "__main__":
    raise SystemExit(main())
