"""The choices a profile run takes, in one torch-free place (the CLI imports them without
loading torch; the passes and visprof.profile validate against them)."""

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
PASSES = ("timing", "attributed", "memory")
DEFAULT_BATCH = {"cuda": 64, "cpu": 2}
DEFAULT_PRECISION = {"cuda": "bf16", "cpu": "fp32"}
