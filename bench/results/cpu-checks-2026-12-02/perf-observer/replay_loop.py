import sys, time, torch
torch.set_num_threads(1)
from visprof.capture import ModuleTracker, OpCapture
from visprof.categories import default_table
from visprof.models import resolve_model
from visprof.native.aten_observer import load_observer
from visprof.passes.runner import ModelRunner, RunConfig
from visprof.replay_capture import ReplayCapture
name, mode, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
limit = int(sys.argv[4]) if len(sys.argv) > 4 else 0
spec = resolve_model(name, img_size=32)
runner = ModelRunner(spec, RunConfig(batch_size=1, precision="fp32", device="cpu"))
for _ in range(5): runner()
tracker = ModuleTracker(spec.module)
template = OpCapture(tracker, default_table(), nvtx=False)
with tracker, template:
    runner()
planned = OpCapture(tracker, default_table(), nvtx=True, template=template, model_name=spec.name)
observer, why = load_observer()
iters = 200
def forward(): runner()
replay, why = ReplayCapture.prepare(observer, planned, forward, iters, timestamps=False)
if mode == "observe_only":
    replay = ReplayCapture(observer, planned, [-1] * replay.recorded_calls, iters, timestamps=False)
elif limit:
    replay = ReplayCapture(observer, planned, replay._plan, iters, timestamps=False, nested_limit=limit)
ops = len(planned.template_ops())
n = 0; t0 = time.perf_counter()
while time.perf_counter() - t0 < seconds:
    if mode == "clean":
        for i in range(iters): runner()
    else:
        with replay:
            for i in range(iters):
                replay.start_iteration(i); runner()
    n += iters
dt = time.perf_counter() - t0
print(f"{mode}: {n} forwards, {dt/n*1e3:.3f} ms each, ops {ops}, calls {replay.recorded_calls}, observed/iter {replay.observed_calls/iters if mode!='clean' else 0}", file=sys.stderr)
