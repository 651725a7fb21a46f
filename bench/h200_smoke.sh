#!/bin/bash
# Quick GPU smoke: native + profiler GPU tests, validation of two models.
source bench/h200_session.sh ${STEPS:-}
python3 -m pytest tests/gpu/test_profile_gpu.py -x -v -s -rs 2>&1 | tee "$OUT/gpu-tests-profile.txt" | grep -E "PASS|FAIL|SKIP|Error|passed|failed|assert" | head -40
python3 bench/profile_validation.py --models "${MODELS:-resnet50,swin_tiny_patch4_window7_224}" --cli-models resnet50 --json "$OUT/validation-smoke.json" --traces "$OUT" 2>&1 | tail -30
