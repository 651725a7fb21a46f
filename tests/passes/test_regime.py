"""The latency regime: grad mode and autocast scope, as a loop would be written, on the CPU
(its bf16 autocast casts and caches weights the way CUDA's does)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import visprof
from visprof.base.child_env import child_env
from visprof.base.errors import BadInputError
from visprof.passes.models import resolve_model
from visprof.passes.runner import ModelRunner, RunConfig
from visprof.passes.timing import warm_up
from visprof.report.table import render
from small_modules import TwoLinears

REPO = Path(__file__).resolve().parents[2]


def profile(**kwargs):
    options = dict(batch_size=2, img_size=8, device="cpu", precision="bf16", passes="timing,attributed",
                   iterations=3, progress=False)
    return visprof.profile(TwoLinears(), **{**options, **kwargs})


def test_defaults_are_timm_benchmark_py_and_recorded():
    result = profile()
    # timm's benchmark.py today: inference_mode (since its commit 8630947d), autocast entered per step
    assert (result.config.grad_mode, result.config.autocast) == ("inference_mode", "per-forward")
    assert "bf16 autocast per forward, inference_mode" in render(result).splitlines()[0]


def test_per_forward_autocast_recasts_the_weights_every_forward():
    result = profile(autocast="per-forward")
    # fc1 and fc2: two weights and two biases cast per iteration
    assert result.attribution.weight_cast_count == 4
    assert result.attribution.weight_cast_ms > 0


def test_whole_loop_autocast_casts_the_weights_once_under_no_grad():
    result = profile(autocast="whole-loop", grad_mode="no_grad")
    assert result.attribution.weight_cast_count == 0
    assert result.config.autocast == "whole-loop"
    assert "autocast around the loop" in render(result)


def test_a_model_cast_up_front_has_no_casts_and_leaves_a_users_module_alone():
    model = TwoLinears()
    result = visprof.profile(model, batch_size=2, img_size=8, device="cpu", precision="bf16", autocast="model-cast",
                             passes="timing,attributed", iterations=3, progress=False)
    assert result.attribution.weight_cast_count == 0
    assert model.fc1.weight.dtype == torch.float32  # visprof cast a copy


def test_under_inference_mode_autocast_caches_no_cast_and_the_note_says_how_to_get_the_cache(monkeypatch):
    # torch's autocast cache skips casts made under inference_mode: a whole loop still re-casts
    from visprof import profiler

    monkeypatch.setattr(profiler, "CAST_NOTE_SHARE", 0.0)
    result = profile(autocast="whole-loop", grad_mode="inference_mode")
    assert result.attribution.weight_cast_count == 4
    assert "grad_mode='no_grad', autocast='whole-loop'" in result.notes[0]


def test_no_grad_is_selectable():
    assert profile(grad_mode="no_grad").config.grad_mode == "no_grad"


def test_fp32_has_no_autocast_and_says_an_asked_regime_does_nothing():
    result = profile(precision="fp32", autocast="whole-loop")
    assert result.config.autocast == "off"
    assert any("does nothing at fp32" in w for w in result.warnings)


@pytest.mark.parametrize("option,value", [("grad_mode", "enable_grad"), ("autocast", "sometimes")])
def test_unknown_regimes_are_refused(option, value):
    with pytest.raises(BadInputError, match=f"unknown {option}"):
        profile(**{option: value})


def test_the_weight_cast_note_names_the_cost_and_the_regimes_that_remove_it(monkeypatch):
    from visprof import profiler

    # Host-clock op times on a busy CPU are noisy, so the share threshold is taken out here.
    monkeypatch.setattr(profiler, "CAST_NOTE_SHARE", 0.0)
    result = profile(autocast="per-forward")
    assert result.notes and "re-casts the fp32 weights every forward: 4 casts" in result.notes[0]
    assert "autocast='whole-loop'" in result.notes[0] and "Notes" in render(result)
    assert not profile(autocast="whole-loop", grad_mode="no_grad").notes


def test_whole_loop_forwards_need_a_session():
    runner = ModelRunner(resolve_model(TwoLinears(), img_size=8),
                         RunConfig(batch_size=1, precision="bf16", device="cpu", autocast="whole-loop"))
    with pytest.raises(RuntimeError, match="session"):
        runner()
    with runner.session():
        assert runner().dtype == torch.bfloat16
    assert torch.is_grad_enabled()  # the session's no_grad ended with it


def test_warm_up_floor_ends_once_the_clocks_are_up():
    runner = ModelRunner(resolve_model(TwoLinears(), img_size=8), RunConfig(batch_size=1, precision="fp32", device="cpu"))
    import time

    start = time.perf_counter()
    assert warm_up(runner, None, min_seconds=30.0, clocks_ramped=lambda: True) >= 5
    assert time.perf_counter() - start < 10.0


def test_warmup_zero_runs_no_warm_up_forward():
    """warmup=0 is accepted, and ran one warm-up forward anyway (recorded as 1)."""
    calls = []
    model = TwoLinears()
    model.register_forward_hook(lambda *args: calls.append(1))
    runner = ModelRunner(resolve_model(model, img_size=8), RunConfig(batch_size=1, precision="fp32", device="cpu"))
    assert warm_up(runner, 0) == 0 and calls == []
    assert warm_up(runner, 2) == 2 and len(calls) == 2


def test_wall_times_of_every_pass_are_in_the_result_and_the_report():
    result = profile()
    assert {"build", "timing", "attributed"} <= set(result.passes)
    assert result.wall_s >= sum(info.wall_s for info in result.passes.values()) * 0.99
    assert "Wall time: build" in render(result)


def test_a_script_without_a_main_guard_runs_once(tmp_path):
    """Users write scripts and notebooks without `if __name__ == "__main__":`; no pass may
    re-execute them (the memory pass used to, in a spawned worker)."""
    script = tmp_path / "no_guard.py"
    script.write_text(textwrap.dedent("""
        import torch, visprof
        print("SCRIPT BODY RAN", flush=True)
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
        result = visprof.profile(model, batch_size=1, img_size=16, iterations=2, progress=False)
        print("CATEGORIES", sorted({row.category for row in result.categories}))
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=child_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("SCRIPT BODY RAN") == 1
    assert "convolution" in proc.stdout


def _op_names(result) -> set[str]:
    return {row.op_type for row in result.op_types}


@pytest.mark.parametrize("grad_mode", ["no_grad", "inference_mode"])
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_callers_own_autocast_and_inference_mode_do_not_leak_into_the_run(precision, grad_mode):
    """A notebook that profiles inside its own `with torch.autocast(...)` or `torch.inference_mode()`
    got that regime measured under another's label: an fp32 run ran bf16 casts (24% of its time), and
    no_grad ran as inference mode (other aten ops)."""
    alone = profile(precision=precision, grad_mode=grad_mode)
    with torch.autocast("cpu", dtype=torch.float16), torch.inference_mode():
        inside = profile(precision=precision, grad_mode=grad_mode)
    assert _op_names(inside) == _op_names(alone), (sorted(_op_names(inside)), sorted(_op_names(alone)))
    if precision == "fp32":
        assert not any("to" in name.split(".")[1] for name in _op_names(inside))  # no cast at all
    assert torch.is_autocast_enabled("cpu") is False and torch.is_inference_mode_enabled() is False
