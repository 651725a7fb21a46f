"""The bottom layer: what every other layer may use and which imports nothing of visprof above it.

errors      the exception classes and their exit codes
output_paths  output paths checked before work: writable, not an input, not a file of another kind
outputs     files written whole or not at all (atomic writes)
inputs      reading user files (JSON, TOML) with one-line errors
hardware    device resolution and GPU facts from NVML
options     the run options (precisions, regimes, passes) and their defaults
progress    progress lines on stderr
child_env   the environment a visprof child process gets
tf32_switches  torch's TF32 switches, set for a run and put back after it (imports torch: not for the CLI's checks)
"""
