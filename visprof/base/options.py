"""The choices a profile run takes, in one torch-free place (the CLI imports them without
loading torch; the passes and visprof.profile validate against them)."""

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
REDUCED_PRECISIONS = ("bf16", "fp16")  # the ones that autocast or a model cast applies to
PASSES = ("timing", "attributed", "memory")
DEFAULT_BATCH = {"cuda": 64, "cpu": 2}
DEFAULT_PRECISION = {"cuda": "bf16", "cpu": "fp32"}

# The latency regime (visprof/passes/runner.py). The defaults are what timm's benchmark.py
# does, so visprof's latencies join the model zoo's published ones.
GRAD_MODES = ("no_grad", "inference_mode")
# timm's benchmark.py runs under torch.inference_mode() since its commit 8630947d (2025-07-03;
# the pt291 CSVs), torch.no_grad() before it (the pt240 CSVs).
DEFAULT_GRAD_MODE = "inference_mode"
AUTOCAST_MODES = ("per-forward", "whole-loop", "model-cast")
DEFAULT_AUTOCAST = "per-forward"
AUTOCAST_OFF = "off"  # fp32/tf32: no autocast whatever was asked


def regime_label(config) -> str:
    """The latency regime of a run config in a few words, for report headers:
    "bf16 autocast per forward, no_grad"."""
    kind = {"per-forward": "autocast per forward", "whole-loop": "autocast around the loop",
            "model-cast": "model cast", "off": ""}.get(config.autocast, config.autocast)
    return f"{config.precision} {kind}".strip() + f", {config.grad_mode}"
