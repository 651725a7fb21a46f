"""Writes tests/data/<model>.costs.json: estimated per-op bytes for the H200 recordings.

The recordings (*.trace.json.gz) were made before ops carried bytes. This script captures the
same timm model on the CPU (bf16 autocast, batch 2, the template forward visprof runs) and
aligns its ops with the recording's first iteration by op name (difflib). Matched ops take the
CPU capture's bytes and tensor-core precision, with FLOPs and activation bytes scaled by
64 / 2 (weight bytes kept), which is what a GPU capture at batch 64 would record. The
recording's own FLOPs must agree within 1% (checked), which proves the alignment. Ops the
CPU run did not have (CUDA autocast casts more tensors than CPU autocast) stay without bytes.

    PYTHONPATH=. python tests/data/make_op_costs.py
"""
from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path

import torch

DATA = Path(__file__).resolve().parent
MODELS = {"resnet50": 224, "deit_small_patch16_224": 224, "coatnet_0_rw_224": 224, "mobilevit_s": 256}
CPU_BATCH, GPU_BATCH = 2, 64


def costs_for(name: str, img: int) -> dict:
    import timm

    from visprof.capture.op_capture import ModuleTracker, OpCapture
    from visprof.native.records import CapturedTrace

    trace = CapturedTrace.load(DATA / f"{name}.trace.json.gz")
    gpu_ops = [op for op in trace.ops if op.iteration == 0]
    torch.manual_seed(0)
    model = timm.create_model(name).eval()
    tracker = ModuleTracker(model)
    capture = OpCapture(tracker, nvtx=False, flops=True)
    with torch.inference_mode(), tracker, capture, torch.autocast("cpu", torch.bfloat16):
        model(torch.randn(CPU_BATCH, 3, img, img))
    cpu_ops = capture.to_records()
    matcher = difflib.SequenceMatcher(None, [o.name for o in gpu_ops], [o.name for o in cpu_ops], autojunk=False)
    scale = GPU_BATCH / CPU_BATCH
    costs: list = [None] * len(gpu_ops)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            g, c = gpu_ops[block.a + k], cpu_ops[block.b + k]
            if abs(c.flops * scale - g.flops) > 0.01 * max(g.flops, 1.0):
                raise SystemExit(f"{name} op {block.a + k} {g.name}: FLOPs {c.flops * scale:.4g} vs recorded {g.flops:.4g}")
            activations = c.bytes - c.param_bytes
            costs[block.a + k] = [int(activations * scale + c.param_bytes), int(c.param_bytes), c.tensor_core]
    return {"model": name, "source": "CPU bf16-autocast capture at batch 2, aligned by op name, scaled to batch 64 "
                                      "(tests/data/make_op_costs.py)",
            "ops_per_iteration": len(gpu_ops), "matched": sum(c is not None for c in costs),
            "costs": costs}  # per op position of an iteration: [bytes, param_bytes, tensor_core] or null


def main() -> int:
    for name, img in MODELS.items():
        doc = costs_for(name, img)
        (DATA / f"{name}.costs.json").write_text(json.dumps(doc, separators=(",", ":")) + "\n")
        print(f"{name}: {doc['matched']}/{doc['ops_per_iteration']} ops matched", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
