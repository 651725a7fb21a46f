"""A variant of `visprof calibrate`'s buckets, judged by bench/calibrate_check.py: each bucket's share is
of the time the spec model predicts on the pair's two GPUs (the mean of its share on the base and on the
target), not of the time profiled on the H200.

    python bench/predicted_share_variant.py --pair /tmp/pair1.db rtx3090 rtx4090 \\
        --pair /tmp/pair2.db rtx4090 rtx5090 --store /tmp/profiles.db --out /tmp/predicted-share

Arguments: calibrate_check's own. Why: the calibration corrects log(speed-up) by sum_f share_f * d_f,
and to first order a bucket's correction moves the speed-up by its share of the time on the GPUs of the
pair. On the H200 a big GEMM runs far off its roof and a streaming op near its bandwidth, so ViT-L spends
47% of its H200 time in GEMMs and, by the spec model, 66% of its RTX 4090 time. The shares come from
the spec model's own group predictions (no published number, no constant). Per (category,
sub-category) and per op type the H200 share is scaled by predicted / profiled share; a kernel family
takes its sub-category's factor; the idle time its predicted share; the total stays 1. It wraps
`buckets_of` as `visprof.analysis.calibration_fleet` reads it, and `fleet_from_comparison`, for the run instead of changing
them, because it is a trial.
"""
from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

import visprof.analysis.calibration_buckets as calibration_buckets
import visprof.analysis.calibration_fleet as calibration_fleet
from visprof.analysis.predict import predict_result
from visprof.base.errors import BadInputError

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibrate_check  # noqa: E402

_h200_buckets = calibration_fleet.buckets_of
_fleet_from_comparison = calibration_fleet.fleet_from_comparison
_pair: dict = {}  # the pair being calibrated: base and target spec rows, batch, precision, table


def _group_keys(g) -> tuple[str, str, str]:
    """The category, sub-category and op-type buckets of a roofline group (as ``buckets_of`` names them)."""
    return f"cat:{g.category}", f"sub:{g.category}/{g.subcategory or '-'}", calibration_buckets.op_bucket(g)


def _predicted_shares(prediction) -> tuple[dict[str, float], float]:
    """Per bucket key, the share of the prediction's latency its groups take; and the idle share."""
    kernel = sum(p.time_ms for p in prediction.groups)
    if prediction.latency_ms <= 0 or kernel <= 0:
        return {}, 0.0
    busy_share = prediction.busy_ms / prediction.latency_ms
    out: dict[str, float] = defaultdict(float)
    for p in prediction.groups:
        for key in _group_keys(p.group):
            out[key] += p.time_ms / kernel * busy_share
    return out, prediction.idle_ms / prediction.latency_ms


def buckets_by_predicted_share(result) -> dict[str, float]:
    out = _h200_buckets(result)
    groups = result.roofline.groups if result.roofline else []
    if not out or not _pair or not groups:
        return out
    try:
        shares = [_predicted_shares(predict_result(result, gpu, batch_size=_pair["batch"], table=_pair["table"],
                                                   precision=_pair["precision"]))
                  for gpu in (_pair["base"], _pair["target"])]
    except BadInputError:
        return out
    predicted: dict[str, float] = defaultdict(float)
    for per_key, _ in shares:
        for key, v in per_key.items():
            predicted[key] += v / len(shares)
    idle = sum(i for _, i in shares) / len(shares)
    h200_kernel = sum(g.time_ms for g in groups if g.time_ms and g.time_ms > 0)
    busy = 1.0 - out.get("idle", 0.0)
    profiled: dict[str, float] = defaultdict(float)
    for g in groups:
        if g.time_ms and g.time_ms > 0:
            for key in _group_keys(g):
                profiled[key] += g.time_ms / h200_kernel * busy

    def factor(key: str) -> float:
        return predicted[key] / profiled[key] if profiled.get(key, 0.0) > 0 and key in predicted else 1.0

    scaled: dict[str, float] = {}
    for key, share in out.items():
        if key == "idle":
            scaled[key] = idle
        elif key.startswith("kf:"):
            cat, sub, _ = key[3:].split("/", 2)
            own = f"sub:{cat}/{sub}"
            scaled[key] = share * (factor(own) if own in profiled else factor(f"cat:{cat}"))
        else:
            scaled[key] = share * factor(key)
    total = sum(v for k, v in scaled.items() if k.startswith("cat:")) + scaled.get("idle", 0.0)
    return {k: v / total for k, v in scaled.items()} if total > 0 else out


def fleet_for_pair(comparison, profiles, table=None, spec_excess=()):
    batch = Counter(mc.base.batch_size for mc in comparison.models).most_common(1)[0][0]
    precision = Counter(mc.base.precision for mc in comparison.models).most_common(1)[0][0]
    _pair.update(base=comparison.base_spec, target=comparison.target_spec, batch=batch, table=table,
                 precision=precision if precision in ("fp16", "bf16") else None)
    try:
        return _fleet_from_comparison(comparison, profiles, table, spec_excess)
    finally:
        _pair.clear()


def main(argv=None) -> int:
    calibration_fleet.buckets_of = buckets_by_predicted_share  # read by fleet_from_comparison
    calibrate_check.buckets_of = buckets_by_predicted_share
    calibrate_check.fleet_from_comparison = fleet_for_pair
    return calibrate_check.main(argv)


if __name__ == "__main__":
    sys.exit(main())
