"""Why Mixer-B/16 reserves one 74 MiB segment more under visprof's memory pass than in a plain
script (the one model of bench/reserved_fresh.py's 16 where the reserved peaks differ).

Each side in a fresh process: the plain script (`timm.create_model(name).cuda()`, inputs, 5
forwards under no_grad and bf16 autocast; with cuDNN's TF32 switch on, as torch leaves it, and
off, as visprof sets it) and `visprof.profile(name)`, whose memory pass is spied on to list the
blocks live when it starts. Prints the reserved peaks and the live blocks only one side has.

    python bench/reserved_diag_mixer.py mixer_b16_224
"""
import json, subprocess, sys
CODE = r'''
import json, sys
import torch, timm
side, name = sys.argv[1], sys.argv[2]
def live():
    out = []
    for s in torch.cuda.memory_snapshot():
        for b in s["blocks"]:
            if b["state"] == "active_allocated":
                out.append([s["total_size"], s["stream"], b["size"]])
    return sorted(out)
if side.startswith("plain"):
    torch.backends.cudnn.allow_tf32 = side != "plain-cudnn-tf32-off"
    m = timm.create_model(name).cuda().eval()
    x = torch.randn(64, *m.pretrained_cfg["input_size"], device="cuda")
    for _ in range(5):
        with torch.no_grad(), torch.autocast("cuda", torch.bfloat16): m(x)
    torch.cuda.synchronize()
    snap = live(); stream = torch.cuda.current_stream().cuda_stream
else:
    import visprof
    from visprof.passes import memory
    got = {}
    orig = memory._empty_cache
    def spy(runner):
        orig(runner); got["snap"] = live(); got["stream"] = torch.cuda.current_stream().cuda_stream
    memory._empty_cache = spy
    r = visprof.profile(name, batch_size=64, precision="bf16", progress=False)
    snap, stream = got["snap"], got["stream"]
print(json.dumps({"side": side, "reserved": torch.cuda.max_memory_reserved() if side.startswith("plain") else r.memory.reserved_peak_bytes, "live": snap, "stream": stream, "total": sum(b[2] for b in snap)}))
'''
name = sys.argv[1]
rows = {}
for side in ("plain", "plain-cudnn-tf32-off", "visprof"):
    p = subprocess.run([sys.executable, "-c", CODE, side, name], capture_output=True, text=True)
    rows[side] = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else {"error": p.stderr[-600:]}
print(json.dumps(rows))
for side, r in rows.items():
    print(side, "reserved MiB", r.get("reserved", 0) / 2**20, r.get("error", ""))
a = rows["plain"].get("live", []); b = rows["visprof"].get("live", [])
from collections import Counter
ca, cb = Counter(map(tuple, a)), Counter(map(tuple, b))
print("only plain:", list((ca - cb).items())[:20])
print("only visprof:", list((cb - ca).items())[:20])
