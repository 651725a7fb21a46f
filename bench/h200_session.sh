#!/bin/bash
# One device call: build visprof._C on the lent H200, then run what is asked.
# Usage on the device: bash bench/h200_session.sh STEP [STEP...]; results land in $OUT.
#   native   GPU tests of the native core + bench/native_overhead.py
#   profile  GPU tests of the profiler + `visprof profile` of one model (the README excerpt)
#   memory   GPU tests of the in-process memory pass + bench/alloc_tracker_cost.py
#   trace-tests  GPU tests of visprof.trace() around training steps, checkpoints, compiled code, forks,
#                and of the capture's flex_attention and nested-tensor paths
#   regimes  bench/latency_check.py (latency per regime, memory, whole-profile wall time);
#            starts no model after $REGIMES_DEADLINE_S seconds since this script started;
#            REGIMES_ARGS adds options (e.g. "--memory-only --repeat-first")
#   sweep-tests  GPU tests of visprof sweep (every visible GPU, a real CUDA OOM decay)
#   sweep-scale  one budgeted call of bench/sweep_scale.py; the store lives in .sweep/ (carry it
#                back in: `mkdir -p .sweep && cp <files>/sweep-* .sweep/`, carry: [".sweep"]).
#                SWEEP_NAME (sweep-h200), GPUS (all), BUDGET (420 s), LIMIT (all 300 models), BATCH (64),
#                TIMM_SAMPLE (all), TIMM_GPUS (1; all: one timm-style process per GPU), TIMM=0 (no timm-style loop),
#                MODELS_FILE (a model list instead of the script's default), PASSES (timing,attributed,memory), SKIP (leave out the list's first N:
#                the ones an earlier machine measured, since a new machine's GPU uuid makes the store measure them again) set it up
#   sweep-ray    20 models of the list on a local Ray cluster of this machine's GPUs (needs the
#                Ray wheels in .whl/: ray is 76 MiB, bench/slim_wheel.py makes it 44)
#   nsight-tests  GPU tests of the Nsight integration (ncu's NVTX filter against visprof's attention)
#   nsight-bench  bench/nvtx_overhead.py and bench/ncu_roofline.py (counter roofline, ViT-B/16, ResNet-50)
#   nsys2022      with .nsys/nsyspack.tar.xz carried: visprof nsys run + import under Debian's nsys 2022.4
#   nsight        nsight-tests, nsight-bench and (when .nsys is there) nsys2022
#   outputs   GPU tests of the CLI's outputs and out-of-memory exit (issue 8) and of the roofline
#   structure GPU tests of structural roles and torch.compile'd models (STRUCTURE_TESTS: which files)
#             + bench/compile_check.py with each run's kernel recording (compile-recordings.tar.gz)
#   (nsight-tests takes NSIGHT_K, a pytest -k expression)
#   ncu-bounds  `visprof ncu --category all --json` of NCU_MODELS (default: the three least-covered architectures
#             bench/results/bounds-2026-12-03/coverage.txt names, not yet measured; NCU_TIMEOUT s each, default 240), then
#             `visprof bounds build` of them (h200-bounds-new.json; bench/bound_library.py pools them with the older recording)
# VISPROF_COMMIT names the commit in the results (the device copy has no .git).
# REQUIRE_GPU (e.g. H200): stop before building unless nvidia-smi's GPU name contains it. A call for the
# nvidia-h200 kind may be served by an H100, whose rows must never enter the H200 store.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:${PYTHONPATH:-}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit --format=csv | tee "$OUT/gpu.txt"
if [ -n "${REQUIRE_GPU:-}" ] && ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q "$REQUIRE_GPU"; then
  echo "h200_session.sh: REQUIRE_GPU=$REQUIRE_GPU, but this machine's GPU is $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1): nothing run"
  exit 3
fi
# The card's short name (h100, h200, ...) names the result files: a call may be served by another card.
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | sed -E 's/^NVIDIA //; s/ .*//' | tr 'A-Z' 'a-z')
card=${card:-gpu}
python3 setup.py -q build_ext --inplace > /tmp/build.log 2>&1 || { tail -40 /tmp/build.log; exit 1; }
python3 -c "import visprof.native as n, json; print(json.dumps(n.native_info()))"
# Compile the runtime modules once, before tests start processes that would each wait for them.
python3 -c "from visprof.native.aten_observer import load_observer; print('aten observer:', load_observer())"
python3 -c "from visprof.native.alloc_tracker import attach_tracker; print('alloc tracker:', attach_tracker())"
steps=()
for step in "$@"; do
  if [ "$step" = nsight ]; then steps+=(nsight-tests nsight-bench); [ -f .nsys/nsyspack.tar.xz ] && steps+=(nsys2022)
  else steps+=("$step"); fi
done
for step in "${steps[@]}"; do
  case $step in
    native)
      python3 -m pytest tests/gpu/test_native_gpu.py -v -s -rs 2>&1 | tee "$OUT/gpu-tests-native.txt" | grep -E "PASS|FAIL|SKIP|Error|assert|passed|failed" | head -40
      python3 bench/native_overhead.py --json "$OUT/native-overhead-$card.json" 2>&1 | tee "$OUT/native-overhead.txt" ;;
    profile)
      python3 -m pytest tests/gpu/test_profile_gpu.py -v -s -rs 2>&1 | tee "$OUT/gpu-tests-profile.txt" | grep -E "PASS|FAIL|SKIP|Error|passed|failed" | head -40
      model=${MODEL:-vit_base_patch16_224}
      python3 -m visprof profile "$model" --quiet --json "$OUT/visprof-profile-$model.json" 2>&1 | tee "$OUT/visprof-profile-$model.txt" ;;
    trace-tests)
      python3 -m pytest tests/gpu/test_trace_gpu.py tests/gpu/test_capture_gpu.py -v -s -rs 2>&1 | tee "$OUT/gpu-tests-trace.txt" | grep -E "PASS|FAIL|SKIP|Error|passed|failed|assert" | head -40 ;;
    memory)
      python3 -m pytest tests/gpu/test_memory_gpu.py -v -s -rs 2>&1 | tee "$OUT/gpu-tests-memory.txt" | grep -E "PASS|FAIL|SKIP|Error|passed|failed|assert" | head -40
      python3 bench/alloc_tracker_cost.py --json "$OUT/alloc-tracker-cost-$card.json" 2>&1 | tee "$OUT/alloc-tracker-cost.txt" | tail -4 ;;
    regimes)
      left=$(( ${REGIMES_DEADLINE_S:-480} - SECONDS ))
      python3 bench/latency_check.py ${MODELS:+--models $MODELS} ${REGIMES_ARGS:-} --deadline-s "$left" --json "$OUT/latency-regimes-$card.json" 2>&1 | tee "$OUT/latency-regimes.txt" ;;
    sweep-tests)
      python3 -m pytest tests/gpu/test_sweep_gpu.py -v -s 2>&1 | tee "$OUT/gpu-tests-sweep.txt" | tail -40 ;;
    sweep-scale)
      name=${SWEEP_NAME:-sweep-h200}; mkdir -p .sweep
      timm_args="--timm-loop --timm-state .sweep/$name-timm.json ${TIMM_SAMPLE:+--timm-sample $TIMM_SAMPLE} ${TIMM_GPUS:+--timm-gpus $TIMM_GPUS}"
      [ "${TIMM:-1}" = 0 ] && timm_args=""
      models_args=""
      if [ -n "${MODELS_FILE:-}" ]; then
        grep -v '^#' "$MODELS_FILE" | tail -n +$(( ${SKIP:-0} + 1 )) > ".sweep/$name-models.txt"
        models_args="--models .sweep/$name-models.txt"
      fi
      python3 bench/sweep_scale.py --store ".sweep/$name.db" --gpus "${GPUS:-all}" --time-budget "${BUDGET:-420}" --batch-size "${BATCH:-64}" \
        ${PASSES:+--passes $PASSES} $timm_args $models_args ${LIMIT:+--limit $LIMIT} --json "$OUT/$name.json" 2>&1 | tee "$OUT/$name.txt" | tail -30
      # what this call wrote to $OUT (its log, its report) wins over a same-named file carried in .sweep/
      for f in .sweep/"$name"*; do [ -e "$OUT/$(basename "$f")" ] || cp "$f" "$OUT/"; done ;;
    sweep-ray)
      mkdir -p .sweep
      python3 -m visprof sweep --model-list bench/sweep_models_300.txt --limit 20 --ray local \
        --store .sweep/sweep-ray.db --json "$OUT/sweep-ray.json" 2>&1 | tee "$OUT/sweep-ray.txt" | tail -30
      python3 -m visprof export .sweep/sweep-ray.db --format csv -o "$OUT/sweep-ray.csv" ;;
    outputs)
      python3 -m pytest tests/gpu/test_cli_outputs_gpu.py tests/gpu/test_roofline_gpu.py -v -s -rs 2>&1 | tee "$OUT/gpu-tests-outputs.txt" | grep -E "PASS|FAIL|SKIP|Error|passed|failed|assert" | head -40 ;;
    structure)
      mkdir -p /tmp/compile-recordings
      VISPROF_RECORDINGS=/tmp/compile-recordings python3 -m pytest ${STRUCTURE_TESTS:-tests/gpu/test_structure_gpu.py tests/gpu/test_compile_compare_gpu.py} -v -s -rs 2>&1 | tee "$OUT/gpu-tests-structure.txt" | grep -E "PASS|FAIL|SKIP|Error|passed|failed|assert" | head -40
      python3 bench/compile_check.py --out "$OUT/compile-check-$card.json" --recordings /tmp/compile-recordings 2>&1 | tee "$OUT/compile-check.txt" | tail -12
      tar -czf "$OUT/compile-recordings.tar.gz" -C /tmp compile-recordings ;;
    nsight-tests)
      mkdir -p /tmp/ncu-csv/tests
      VISPROF_NCU_OUT=/tmp/ncu-csv/tests python3 -m pytest tests/gpu/test_nsight_gpu.py ${NSIGHT_K:+-k "$NSIGHT_K"} -v -s -rs 2>&1 | tee "$OUT/gpu-tests-nsight.txt" | grep -E "IDENTICAL|DIFFERENT|summary|PASS|FAIL|SKIP|Error|passed|failed" | head -40
      tar -czf "$OUT/ncu-csv.tar.gz" -C /tmp ncu-csv ;;
    nsight-bench)
      python3 bench/nvtx_overhead.py --models resnet50,vit_base_patch16_224,swin_tiny_patch4_window7_224,mobilenetv3_large_100 --json "$OUT/nvtx-overhead-$card.json" 2>&1 | tail -8 | tee "$OUT/nsight-bench.txt"
      mkdir -p /tmp/ncu-csv/roofline
      python3 bench/ncu_roofline.py --csv-dir /tmp/ncu-csv/roofline --json "$OUT/ncu-roofline-$card.json" 2>&1 | tail -40 | tee -a "$OUT/nsight-bench.txt"
      tar -czf "$OUT/ncu-csv.tar.gz" -C /tmp ncu-csv ;;
    nsys2022)
      tar -xJf .nsys/nsyspack.tar.xz -C /tmp || continue
      ( export LD_LIBRARY_PATH=/tmp/nsyspack/host-linux-x64:${LD_LIBRARY_PATH:-}
        python3 -m visprof nsys run --capture-range none --nsys /tmp/nsyspack/target-linux-x64/nsys --no-import \
          -o /tmp/nsys-resnet50 -- python3 -m visprof profile resnet50 --nvtx-only --iterations 3 --quiet ) > /tmp/nsys.log 2>&1
      tail -5 /tmp/nsys.log | tee "$OUT/nsys2022.txt"
      python3 -m visprof nsys import /tmp/nsys-resnet50.sqlite 2>&1 | tail -3 | tee -a "$OUT/nsys2022.txt"
      gzip -c /tmp/nsys-resnet50.sqlite > "$OUT/nsys2022-$card-resnet50.sqlite.gz" ;;
    ncu-bounds)
      mkdir -p /tmp/ncu-bounds
      for model in ${NCU_MODELS:-maxxvitv2_nano_rw_256 cait_xxs24_384 sequencer2d_m}; do
        timeout "${NCU_TIMEOUT:-240}" python3 -m visprof ncu "$model" --category all --quiet \
          --json "/tmp/ncu-bounds/ncu-$model.json" > "/tmp/ncu-bounds/ncu-$model.txt" 2>&1
        echo "$model: exit $? $(tail -1 /tmp/ncu-bounds/ncu-$model.txt)" | tee -a "$OUT/ncu-bounds.txt"
      done
      python3 -m visprof bounds build /tmp/ncu-bounds/ncu-*.json -o "$OUT/h200-bounds-new.json" 2>&1 | tee -a "$OUT/ncu-bounds.txt"
      tar -czf "$OUT/ncu-bounds.tar.gz" -C /tmp ncu-bounds ;;
    *) python3 -c "$step" ;;
  esac
done
