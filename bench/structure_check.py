"""What recognising attention/norms/activations by structure changes, and what it costs.

For each timm model, one template forward on the CPU (as the attributed pass runs it) is
captured with its dataflow; every op is classified twice, with its structural role and
without it (the class-name rules alone, i.e. visprof before structure), over the same
host-clock op times. Prints the models whose breakdown changes, with before/after shares,
and the added time of the template capture (dataflow recording + analysis) for the models
in --cost-models. Writes JSON with provenance.

    python bench/structure_check.py --out bench/results/structure-check-cpu.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402

REFERENCE = [
    "resnet50", "efficientnet_b0", "mobilenetv3_large_100", "convnext_tiny", "regnety_016", "vit_base_patch16_224",
    "deit_small_patch16_224", "swin_tiny_patch4_window7_224", "maxvit_tiny_tf_224", "coatnet_0_rw_224", "levit_128",
    "mobilevit_s",
]
ZOO = [
    "mixer_s16_224", "poolformer_s12", "levit_128s", "xcit_nano_12_p16_224", "mobilevitv2_050", "efficientformer_l1",
    "resmlp_12_224", "gcvit_xxtiny", "edgenext_xx_small", "tiny_vit_5m_224", "fastvit_t8", "repvit_m1", "hgnetv2_b0",
    "convnextv2_atto", "efficientvit_b0", "coat_lite_tiny", "pvt_v2_b0", "twins_svt_small", "crossvit_tiny_240",
    "sequencer2d_s", "mvitv2_tiny", "swinv2_cr_tiny_ns_224", "eva02_tiny_patch14_224", "ghostnet_100", "rexnet_100",
    "dla34", "halonet26t", "botnet26t_256", "lambda_resnet26t", "cait_xxs24_224", "beit_base_patch16_224",
    "swinv2_tiny_window8_256", "focalnet_tiny_srf", "nest_tiny", "volo_d1_224", "davit_tiny", "maxxvit_rmlp_nano_rw_256",
]
COST_MODELS = ["vit_base_patch16_224", "swin_tiny_patch4_window7_224"]


def capture(name: str, structure: bool, batch: int = 1):
    import torch

    from visprof.capture.op_capture import ModuleTracker, OpCapture
    from visprof.attribution.categories import default_table
    from visprof.passes.models import resolve_model
    from visprof.passes.runner import ModelRunner, RunConfig

    runner = ModelRunner(resolve_model(name), RunConfig(batch_size=batch, precision="fp32", device="cpu"))
    table = default_table()
    runner()  # warm-up outside the capture
    tracker = ModuleTracker(runner.spec.module)
    template = OpCapture(tracker, table, nvtx=False, flops=True, structure=structure)
    start = time.perf_counter()
    with tracker, template:
        runner()
    wall = time.perf_counter() - start
    runner.close()
    del torch
    return template, tracker, table, wall


def measure_cost(name: str, repeats: int) -> dict:
    """Time spent recording the dataflow (per op, inside the dispatch mode) and analysing it,
    measured around exactly that code; the template forward's wall time for scale. Medians."""
    import statistics

    from visprof.capture import op_capture as capture_mod

    spent = {"record": 0.0, "analyse": 0.0}
    recorder = capture_mod.FlowRecorder
    record, roles = recorder.record, recorder.roles

    def timed(key, fn):
        def wrapper(*a, **k):
            start = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[key] += time.perf_counter() - start
        return wrapper

    recorder.record, recorder.roles = timed("record", record), timed("analyse", roles)
    samples = {"record": [], "analyse": [], "forward": []}
    try:
        for _ in range(repeats):
            spent.update(record=0.0, analyse=0.0)
            cap, _tracker, _table, wall = capture(name, structure=True)
            samples["record"].append(spent["record"])
            samples["analyse"].append(spent["analyse"])
            samples["forward"].append(wall)
    finally:
        recorder.record, recorder.roles = record, roles
    ops = len(cap.raw)
    rec, ana = statistics.median(samples["record"]), statistics.median(samples["analyse"])
    return {"ops": ops, "template_forward_ms": statistics.median(samples["forward"]) * 1e3,
            "record_ms": rec * 1e3, "analyse_ms": ana * 1e3, "added_ms": (rec + ana) * 1e3,
            "added_us_per_op": (rec + ana) * 1e6 / ops}


def shares(capture_, tracker, table, with_roles: bool) -> dict[str, float]:
    times: dict[str, float] = {}
    for op in capture_.to_records():
        attrs = op.attrs if with_roles else {k: v for k, v in op.attrs.items() if k != "role"}
        key = table.classify_op(op.name, tracker.classes(op.module), attrs).key
        times[key] = times.get(key, 0.0) + (op.cpu_end_ns - op.cpu_start_ns)
    total = sum(times.values()) or 1.0
    return {k: v / total for k, v in sorted(times.items())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(REFERENCE + ZOO))
    parser.add_argument("--cost-models", default=",".join(COST_MODELS))
    parser.add_argument("--repeats", type=int, default=5, help="template captures per cost model and setting")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    changes, costs = {}, {}
    for name in [m for m in args.models.split(",") if m]:
        cap, tracker, table, _ = capture(name, structure=True)
        before, after = shares(cap, tracker, table, False), shares(cap, tracker, table, True)
        roles: dict[str, int] = {}
        for role in cap.roles.values():
            roles[role] = roles.get(role, 0) + 1
        moved = {k: (before.get(k, 0.0), after.get(k, 0.0)) for k in sorted(set(before) | set(after))
                 if abs(before.get(k, 0.0) - after.get(k, 0.0)) >= 0.001}
        changes[name] = {"ops": len(cap.raw), "roles": roles, "changed": moved}
        print(f"{name}: {len(cap.raw)} ops, roles {roles}", file=sys.stderr)
    for name in [m for m in args.cost_models.split(",") if m]:
        costs[name] = measure_cost(name, args.repeats)
    print("\nmodels whose CPU breakdown changes (share before -> after, >= 0.1 point):")
    for name, data in changes.items():
        if data["changed"]:
            cells = ", ".join(f"{k} {b:.1%} -> {a:.1%}" for k, (b, a) in data["changed"].items())
            print(f"  {name}: {cells}")
    unchanged = [n for n, d in changes.items() if not d["changed"]]
    print(f"unchanged ({len(unchanged)}): {', '.join(unchanged)}")
    print("\ntemplate capture cost (CPU, batch 1, best of repeats):")
    print(f"  {'model':32s} {'ops':>5s} {'forward ms':>10s} {'record ms':>9s} {'analyse ms':>10s} {'added us/op':>11s}")
    for name, c in costs.items():
        print(f"  {name:32s} {c['ops']:5d} {c['template_forward_ms']:10.1f} {c['record_ms']:9.2f} "
              f"{c['analyse_ms']:10.2f} {c['added_us_per_op']:11.1f}")
    if args.out:
        from visprof.base.outputs import atomic_write_text

        atomic_write_text(args.out, json.dumps({"provenance": provenance(), "changes": changes, "cost": costs},
                                               indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
