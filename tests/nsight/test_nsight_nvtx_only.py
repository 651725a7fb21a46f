"""`visprof profile MODEL --nvtx-only` on the CPU: visprof's ranges around exactly the measured
iterations, no tracer, and the options that cannot apply refused in one line."""
from __future__ import annotations

import pytest

from visprof.cli import app as cli
from visprof.native import native
from visprof.capture import nvtx_scheme as S
from visprof.nsight.nvtx_only import run_nvtx_only

c = native()


def logged(run):
    c.nvtx._set_log(True)
    try:
        out = run()
        log = c.nvtx._take_log()
    finally:
        c.nvtx._set_log(False)
    return out, log


def test_the_measured_iterations_run_under_visprofs_ranges_and_nothing_else_does():
    run, log = logged(lambda: run_nvtx_only("resnet18", img_size=32, batch_size=1, device="cpu", iterations=3, grad_mode="no_grad",
                                            warmup=2, progress=False))
    pushes = [entry for entry in log if entry[0] == "push"]
    assert len(pushes) == len(log) // 2 and c.nvtx.depth() == 0  # balanced
    models = [entry for entry in pushes if entry[2] == S.KIND_MODEL]
    assert [m[1] for m in models] == ["resnet18 (ResNet)"] * 3  # the measured iterations only
    ops = [entry for entry in pushes if entry[2] == S.KIND_OP]
    # resnet18 on the CPU (fp32, no_grad): each batch norm's aten::empty shares the range of the batch
    # norm that wraps it, and the classifier's aten::t the range of its aten::linear (under
    # inference_mode the CPU batch norm allocates without an aten::empty op)
    assert run.folded_ops == 21 and run.ranged_ops + run.folded_ops == run.ops_per_iteration
    assert len(ops) == 3 * run.ranged_ops
    n = run.ops_per_iteration
    ids = [op[3] for op in ops]  # the op ids as payloads: op j of iteration i is 1 + i * n + j
    assert ids == sorted(ids) and len({(i - 1) % n for i in ids}) == run.ranged_ops and ids[-1] <= 3 * n
    folded = {j for j, (name, _, _) in enumerate(run.template) if (1 + j) not in ids}
    assert sorted(run.template[j][0] for j in folded) == ["aten.empty.memory_format"] * 20 + ["aten.t.default"]
    assert run.op_capture == "aten observer" and not run.profiler_api
    assert (run.iterations, run.warmup) == (3, 2) and run.latency_ms.median > 0
    assert not c.tracer.active()
    text = run.summary()
    assert "resnet18" in text and "3 measured iteration(s)" in text and "21 kernel-less" in text and "no cudaProfilerStart/Stop on the CPU" in text


def test_ranged_ops_pick_which_ops_push_their_category_and_op_ranges():
    def convolutions(template):
        return [j for j, (_, _, key) in enumerate(template) if key.startswith("convolution")]

    run, log = logged(lambda: run_nvtx_only("resnet18", img_size=32, batch_size=1, device="cpu", iterations=1,
                                            warmup=0, progress=False, ranged_ops=convolutions))
    categories = [entry[1] for entry in log if entry[0] == "push" and entry[2] == S.KIND_CATEGORY]
    assert categories == ["convolution"] * 20 and run.ranged_ops == 20  # resnet18 has 20 convolutions


def test_the_cli_runs_it_and_refuses_options_that_cannot_apply(capsys):
    assert cli.main(["profile", "resnet18", "--img-size", "32", "-b", "1", "--device", "cpu", "--iterations", "1",
                     "--warmup", "0", "--nvtx-only", "--quiet"]) == 0
    assert "visprof profile --nvtx-only: resnet18" in capsys.readouterr().out
    assert cli.main(["profile", "resnet18", "--nvtx-only", "--json", "x.json", "--passes", "timing"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("visprof: error: --nvtx-only runs no measuring pass, so --json, --passes cannot apply; profile "
                   "under nsys and import it (visprof nsys run) for a breakdown")


def test_the_cli_passes_its_latency_regime_to_the_run(capsys):
    """--autocast reached the run only through --precision once: a model cast ran autocast per
    forward (92 ops of resnet18 at bf16, casts included, where the cast model runs 69)."""
    common = ["profile", "resnet18", "--img-size", "32", "-b", "1", "--device", "cpu", "--iterations", "1",
              "--warmup", "0", "--nvtx-only", "--quiet", "--precision", "bf16"]
    assert cli.main([*common, "--autocast", "model-cast"]) == 0
    cast = capsys.readouterr().out
    assert cli.main([*common, "--autocast", "per-forward"]) == 0
    per_forward = capsys.readouterr().out
    assert "bf16 model cast, inference_mode" in cast and "bf16 autocast per forward" in per_forward

    def ops(out: str) -> int:
        return int(out.split("ops per iteration: ")[1].split(",")[0])

    assert ops(cast) < ops(per_forward)


@pytest.mark.parametrize("inside_an_op", [False, True], ids=["between-ops", "inside-an-op"])
def test_a_model_that_fails_is_blamed_in_one_line_and_leaves_no_range_open(inside_an_op):
    import torch

    class Fails(torch.nn.Module):
        def __init__(self, fail_on_call: int):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 3, 1)
            self.calls, self.fail_on_call = 0, fail_on_call

        def forward(self, x):
            self.calls += 1
            x = self.conv(x)
            if self.calls == self.fail_on_call:
                if inside_an_op:
                    return torch.cumsum(x, 5)  # dim 5 of a 4-d tensor: aten raises inside its range
                raise ValueError("boom on a later forward")
            return torch.cumsum(x, 1)

    from visprof.base.errors import ModelForwardError

    def settings():
        return dict(img_size=8, batch_size=1, device="cpu", iterations=2, warmup=0, progress=False)

    counting = Fails(fail_on_call=0)
    run_nvtx_only(counting, **settings())

    def run():  # fails in the last measured iteration, with the replay's ranges open
        with pytest.raises(ModelForwardError, match="out of range" if inside_an_op else "boom on a later forward"):
            run_nvtx_only(Fails(fail_on_call=counting.calls), **settings())

    _, log = logged(run)
    pushes = sum(1 for entry in log if entry[0] == "push")
    # The replay pushes its op ranges itself (no per-thread depth count), so the log says it.
    assert any(entry[0] == "push" and entry[2] == S.KIND_OP for entry in log)
    assert pushes == len(log) - pushes
    assert c.nvtx.depth() == 0 and c.op_depth() == 0
