import sys, json, math, glob, statistics, os
sys.path.insert(0, "bench")
import predict_check as pc
import visprof.analysis.predict as P
from visprof.result import ProfileResult
from visprof.analysis.metrics import spearman
from visprof.analysis.families import architecture
DIR = sys.argv[1]  # the sm66/ folder unpacked from sm66.tgz
R = json.load(open(f"{DIR}/provenance.json"))["check"]["ratio"]
pub = pc.published(pc.CSV_DIR)
def key(g): return (g.category, g.subcategory, g.op, round(g.flops), round(g.bytes), round(g.param_bytes), g.tensor_core)
sens = {}
pairs = []
for f in sorted(glob.glob(f"{DIR}/*.all.json")):
    name = os.path.basename(f)[:-9]
    g66 = f.replace(".all.json", ".sm66.json")
    if not os.path.exists(g66): continue
    a, b = ProfileResult.load(f), ProfileResult.load(g66)
    kb = {key(g): g for g in b.roofline.groups}
    s_model = {}
    tot = 0; w = 0
    for g in a.roofline.groups:
        h = kb.get(key(g))
        if h is None or g.time_ms <= 0: continue
        s = min(max(math.log(h.time_ms / g.time_ms) / math.log(R), 0.0), 1.0)
        s_model[key(g)] = s
        tot += g.time_ms; w += g.time_ms * s
    sens[name] = s_model
    pairs.append((name, a, w / tot))
orig = P.predict_group
CURRENT = {}
def pg(g, source, target, scale=1.0, precision=None, efficiency=None, excess="clock", rate_scaling="clock"):
    s = CURRENT.get(key(g))
    if rate_scaling == "clock" and source is not None and s is not None and s > 0:
        import dataclasses
        f = (source.sms / target.sms) ** s  # time ratio from SMs
        fake = dataclasses.replace(target, boost_clock_mhz=target.boost_clock_mhz / f)
        return orig(g, source, fake, scale, precision, efficiency, excess, rate_scaling)
    return orig(g, source, target, scale, precision, efficiency, excess, rate_scaling)
rows = []
for name, a, smean in pairs:
    k = (architecture(name), a.model.img_size)
    if k not in pub["rtx3090"] or k not in pub["rtx4090"]: continue
    B3, B4 = int(pub["rtx3090"][k]["infer_batch_size"]), int(pub["rtx4090"][k]["infer_batch_size"])
    ps = float(pub["rtx4090"][k]["infer_samples_per_sec"]) / float(pub["rtx3090"][k]["infer_samples_per_sec"])
    P.predict_group = orig
    x3 = P.predict_result(a, "rtx3090", batch_size=B3, precision="fp16"); x4 = P.predict_result(a, "rtx4090", batch_size=B4, precision="fp16")
    base = x4.samples_per_s / x3.samples_per_s
    band = P.speedup_band(x3, x4)
    CURRENT.clear(); CURRENT.update(sens[name]); P.predict_group = pg
    y3 = P.predict_result(a, "rtx3090", batch_size=B3, precision="fp16"); y4 = P.predict_result(a, "rtx4090", batch_size=B4, precision="fp16")
    new = y4.samples_per_s / y3.samples_per_s
    p3 = float(pub["rtx3090"][k]["infer_samples_per_sec"])
    rows.append((name, smean, base, new, ps, band, x3.samples_per_s / p3 - 1, y3.samples_per_s / p3 - 1))
P.predict_group = orig
print(f"GEMM reference ratio {R:.3f}")
for r in sorted(rows, key=lambda r: r[4] / r[2]):
    print(f"{r[0]:28s} s={r[1]:.2f} clock x{r[2]:.3f} measured-s x{r[3]:.3f} published x{r[4]:.3f}  err {r[2]/r[4]-1:+.1%} -> {r[3]/r[4]-1:+.1%}  band {r[5][0]:.2f}-{r[5][1]:.2f}  3090 thr err {r[6]:+.1%} -> {r[7]:+.1%}")
print("spearman clock %.3f measured-s %.3f (n=%d)" % (spearman([r[2] for r in rows], [r[4] for r in rows]), spearman([r[3] for r in rows], [r[4] for r in rows]), len(rows)))
print("median |err| clock %.3f measured-s %.3f" % (statistics.median(abs(r[2]/r[4]-1) for r in rows), statistics.median(abs(r[3]/r[4]-1) for r in rows)))
