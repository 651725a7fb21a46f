"""The consumer cards' spec rows changed (a diagnostic: it tunes on the judged pair)."""
import copy

import visprof.analysis.gpus as G
import visprof.analysis.predict as P
from _harness import run as check

base = G.gpu_table()
def with_rows(**changes):
    t = copy.deepcopy(base)
    import dataclasses
    for gid, fields in changes.items():
        row = t.get(gid)
        kw = {}
        for k, v in fields.items():
            if k == "tensor":
                row.tensor_tflops.update({"fp16": v, "bf16": v})
            else:
                kw[k] = v
        new = dataclasses.replace(row, **kw)
        t.specs[gid] = new
    return t
def run(label, table):
    P.gpu_table = lambda *a, **k: table
    return check(label)
run("datasheet", base)
for v in (80, 90):
    run(f"3090 tensor {v}", with_rows(rtx3090={"tensor": v}))
for v in (140, 120):
    run(f"4090 tensor {v}", with_rows(rtx4090={"tensor": v}))
for bw in (1100, 1200, 1300):
    run(f"4090 bw {bw}", with_rows(rtx4090={"memory_bandwidth_gbs": bw}))
run("4090 bw 1200 tensor 140", with_rows(rtx4090={"memory_bandwidth_gbs": 1200, "tensor": 140}))
run("4090 L2 36", with_rows(rtx4090={"l2_mb": 36}))
run("4090 L2 144", with_rows(rtx4090={"l2_mb": 144}))
