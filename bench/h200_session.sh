#!/bin/bash
# One device call: build visprof._C on the lent H200, then run what is asked.
# Usage on the device: bash bench/h200_session.sh STEP [STEP...]; results land in $OUT.
#   native   GPU tests of the native core + bench/native_overhead.py
#   profile  GPU tests of the profiler + `visprof profile` of one model (the README excerpt)
#   memory   GPU tests of the in-process memory pass + bench/alloc_tracker_cost.py
#   regimes  bench/latency_check.py (latency per regime, memory, whole-profile wall time);
#            starts no model after $REGIMES_DEADLINE_S seconds since this script started
#   sweep-tests  GPU tests of visprof sweep (every visible GPU, a real CUDA OOM decay)
#   sweep-scale  one budgeted call of bench/sweep_scale.py; the store lives in .sweep/ (carry it
#                back in: `mkdir -p .sweep && cp <files>/sweep-* .sweep/`, carry: [".sweep"]).
#                SWEEP_NAME (sweep-h200), GPUS (all), BUDGET (420 s), LIMIT (all 300 models),
#                TIMM_SAMPLE (all), TIMM=0 (no timm-style loop) set it up
#   sweep-ray    20 models of the list on a local Ray cluster of this machine's GPUs (needs the
#                Ray wheels in .whl/: ray is 76 MiB, bench/slim_wheel.py makes it 44)
# VISPROF_COMMIT names the commit in the results (the device copy has no .git).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:${PYTHONPATH:-}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit --format=csv | tee "$OUT/gpu.txt"
python3 setup.py -q build_ext --inplace > /tmp/build.log 2>&1 || { tail -40 /tmp/build.log; exit 1; }
python3 -c "import visprof.native as n, json; print(json.dumps(n.native_info()))"
# Compile the runtime modules once, before tests start processes that would each wait for them.
python3 -c "from visprof.native.aten_observer import load_observer; print('aten observer:', load_observer())"
python3 -c "from visprof.native.alloc_tracker import attach_tracker; print('alloc tracker:', attach_tracker())"
for step in "$@"; do
  case $step in
    native)
      python3 -m pytest tests/gpu/test_native_gpu.py -v -s -rs 2>&1 | tee "$OUT/gpu-tests-native.txt" | grep -E "PASS|FAIL|SKIP|Error|assert|passed|failed" | head -40
      python3 bench/native_overhead.py --json "$OUT/native-overhead-h200.json" 2>&1 | tee "$OUT/native-overhead.txt" ;;
    profile)
      python3 -m pytest tests/gpu/test_profile_gpu.py -v -s -rs 2>&1 | tee "$OUT/gpu-tests-profile.txt" | grep -E "PASS|FAIL|SKIP|Error|passed|failed" | head -40
      model=${MODEL:-vit_base_patch16_224}
      python3 -m visprof profile "$model" --quiet --json "$OUT/visprof-profile-$model.json" 2>&1 | tee "$OUT/visprof-profile-$model.txt" ;;
    memory)
      python3 -m pytest tests/gpu/test_memory_gpu.py -v -s -rs 2>&1 | tee "$OUT/gpu-tests-memory.txt" | grep -E "PASS|FAIL|SKIP|Error|passed|failed|assert" | head -40
      python3 bench/alloc_tracker_cost.py --json "$OUT/alloc-tracker-cost-h200.json" 2>&1 | tee "$OUT/alloc-tracker-cost.txt" | tail -4 ;;
    regimes)
      left=$(( ${REGIMES_DEADLINE_S:-480} - SECONDS ))
      python3 bench/latency_check.py ${MODELS:+--models $MODELS} --deadline-s "$left" --json "$OUT/latency-regimes-h200.json" 2>&1 | tee "$OUT/latency-regimes.txt" ;;
    sweep-tests)
      python3 -m pytest tests/gpu/test_sweep_gpu.py -v -s 2>&1 | tee "$OUT/gpu-tests-sweep.txt" | tail -40 ;;
    sweep-scale)
      name=${SWEEP_NAME:-sweep-h200}; mkdir -p .sweep
      timm_args="--timm-loop --timm-state .sweep/$name-timm.json ${TIMM_SAMPLE:+--timm-sample $TIMM_SAMPLE}"
      [ "${TIMM:-1}" = 0 ] && timm_args=""
      python3 bench/sweep_scale.py --store ".sweep/$name.db" --gpus "${GPUS:-all}" --time-budget "${BUDGET:-420}" \
        $timm_args ${LIMIT:+--limit $LIMIT} --json "$OUT/$name.json" 2>&1 | tee "$OUT/$name.txt" | tail -30
      cp .sweep/"$name"* "$OUT/" ;;
    sweep-ray)
      mkdir -p .sweep
      python3 -m visprof sweep --model-list bench/sweep_models_300.txt --limit 20 --ray local \
        --store .sweep/sweep-ray.db --json "$OUT/sweep-ray.json" 2>&1 | tee "$OUT/sweep-ray.txt" | tail -30
      python3 -m visprof export .sweep/sweep-ray.db --format csv -o "$OUT/sweep-ray.csv" ;;
    *) python3 -c "$step" ;;
  esac
done
