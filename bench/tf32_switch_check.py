"""TF32 switches on a real GPU: for each user state of torch's fp32-precision APIs, visprof.base.tf32_switches.set_for_run(tf32)
must make the GPU run matmuls and convolutions in TF32 exactly when asked (judged by the error against float64),
and restore() must leave every switch reading as before. Usage: python3 bench/tf32_switch_check.py (on a GPU machine).
Written by a helper for issue fix-a (session 54); the CPU tests are tests/passes/test_tf32_switches.py."""
import sys, os
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "passes"))
from visprof.base import tf32_switches as ts
B = torch.backends
HAS = hasattr(B, "fp32_precision")
PATHS = ("fp32_precision", "cuda.matmul.fp32_precision", "cudnn.fp32_precision", "cudnn.conv.fp32_precision",
         "cudnn.rnn.fp32_precision", "mkldnn.fp32_precision", "mkldnn.matmul.fp32_precision", "cuda.matmul.allow_tf32", "cudnn.allow_tf32")
def rd(path):
    o = B
    try:
        for n in path.split("."): o = getattr(o, n)
        return o
    except AttributeError: return "absent"
    except RuntimeError: return "RAISE"
def state():
    s = {p: rd(p) for p in PATHS}
    try: s["getmp"] = torch.get_float32_matmul_precision()
    except RuntimeError: s["getmp"] = "RAISE"
    return s
def reset():
    if HAS:
        for o in (B, B.cudnn, B.mkldnn, B.mkldnn.conv, B.mkldnn.rnn): o.fp32_precision = "none"
    torch.set_float32_matmul_precision("highest"); B.cudnn.allow_tf32 = True
    if HAS: B.cuda.matmul.fp32_precision = "none"; B.mkldnn.matmul.fp32_precision = "none"
STATES = {"default": "", "legacy flipped": "B.cuda.matmul.allow_tf32=True; B.cudnn.allow_tf32=False",
          "medium": "torch.set_float32_matmul_precision('medium')", "high": "torch.set_float32_matmul_precision('high')"}
if HAS:
    STATES.update({"global tf32": "B.fp32_precision='tf32'", "matmul tf32": "B.cuda.matmul.fp32_precision='tf32'",
                   "mix": "B.cuda.matmul.fp32_precision='tf32'; B.cudnn.conv.fp32_precision='ieee'; B.mkldnn.matmul.fp32_precision='bf16'",
                   "global ieee": "B.fp32_precision='ieee'", "cudnn ieee": "B.cudnn.fp32_precision='ieee'"})
def ran_tf32():
    """(matmul, conv) ran in TF32 on the GPU, judged by the error against float64."""
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(512, 512, device="cuda", generator=g); b = torch.randn(512, 512, device="cuda", generator=g)
    mm = ((a @ b).double() - a.double() @ b.double()).abs().max().item() > 1e-2
    x = torch.randn(1, 64, 32, 32, device="cuda", generator=g); w = torch.randn(64, 64, 3, 3, device="cuda", generator=g)
    cv = (torch.nn.functional.conv2d(x, w).double() - torch.nn.functional.conv2d(x.double(), w.double())).abs().max().item() > 1e-2
    return mm, cv
reset(); default = state(); print(torch.__version__, "default:", default)
bad = 0
for name, code in STATES.items():
    for tf32 in (False, True):
        reset(); assert state() == default
        exec(code); before = state()
        saved = ts.set_for_run(tf32)
        during = state()
        want = "tf32" if tf32 else "ieee"
        effective = (ts.tf32_in_use("matmul"), ts.tf32_in_use("conv"))
        newly_refused = [k for k in during if during[k] == "RAISE" and before[k] != "RAISE"]
        if torch.cuda.is_available():
            ran = ran_tf32()
            if ran != (tf32, tf32):
                print("    GPU RAN", ran, "wanted", tf32); bad += 1
        saved.restore()
        after = state()
        ok = after == before and effective == (tf32, tf32)
        bad += not ok
        print(f"{'OK ' if ok else 'BAD'} {name:15s} tf32={tf32!s:5s} in use={effective} newly refused during run={newly_refused}")
        if after != before:
            print("    before", before); print("    after ", after)
print("bad:", bad)
