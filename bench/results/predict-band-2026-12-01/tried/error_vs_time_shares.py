"""Spearman of each model's speed-up error with its predicted RTX 3090 time shares."""
import statistics

import visprof.analysis.predict as P
from _harness import pc, profs, pub
from visprof.analysis.metrics import spearman

out = pc.check(profs, pub, excess="clock")
chosen = {(r.model.name, r.model.img_size): r for r in pc.pick_profiles(profs, pub, None, [])}
feats, errs = [], []
for row in out["rows"]:
    r = chosen[(row["model"], row["img_size"])]
    p3 = P.predict_result(r, "rtx3090", batch_size=row["rtx3090_batch"], precision="fp16")
    p4 = P.predict_result(r, "rtx4090", batch_size=row["rtx4090_batch"], precision="fp16")
    f = {}
    tot = p3.busy_ms
    for g3, g4 in zip(p3.groups, p4.groups):
        g = g3.group
        main3 = g3.time_ms - g3.helper_ms
        # regime on the 3090: at roof or rate-limited; dominant op family
        kind = ("tensor" if g.tensor_core else "cuda") if g.flops > 0 and g3.bound != "memory" else "mem"
        eff = g.efficiency or 0
        effb = "e<3%" if eff < .03 else "e<10%" if eff < .1 else "e<30%" if eff < .3 else "e>30%"
        for key in (f"cat:{g.category}", f"kind:{kind}", f"kind:{kind}/{effb}", f"op:{g.op.split('.')[1] if '.' in g.op else g.op}", "helper"):
            f[key] = f.get(key, 0) + (g3.helper_ms if key == "helper" else main3) / tot
        r4 = (g4.time_ms / g3.time_ms) if g3.time_ms > 0 else 1
    feats.append(f); errs.append(row["speedup_error"])
keys = sorted({k for f in feats for k in f})
res = []
for k in keys:
    v = [f.get(k, 0) for f in feats]
    if sum(1 for x in v if x > 0.05) < 8: continue
    res.append((spearman(v, errs), k, statistics.mean(v)))
for s, k, m in sorted(res):
    print(f"{s:+.2f} {k:40s} mean share {m:.3f}")
