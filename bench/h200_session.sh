#!/bin/bash
# One device call: build visprof._C on the lent H200, then run what is asked.
# Usage on the device: bash bench/h200_session.sh STEP [STEP...]; results land in $OUT.
#   native   GPU tests of the native core + bench/native_overhead.py
#   profile  GPU tests of the profiler + `visprof profile` of one model (the README excerpt)
#   nsight-tests  GPU tests of the Nsight integration (ncu's NVTX filter against visprof's attention)
#   nsight-bench  bench/nvtx_overhead.py and bench/ncu_roofline.py (counter roofline, ViT-B/16, ResNet-50)
#   nsys2022      with .nsys/nsyspack.tar.xz carried: visprof nsys run + import under Debian's nsys 2022.4
#   nsight        nsight-tests, nsight-bench and (when .nsys is there) nsys2022
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
# Compile the ATen observer once, before tests start processes that would each wait for it.
python3 -c "from visprof.native.aten_observer import load_observer; print('aten observer:', load_observer())"
steps=()
for step in "$@"; do
  if [ "$step" = nsight ]; then steps+=(nsight-tests nsight-bench); [ -f .nsys/nsyspack.tar.xz ] && steps+=(nsys2022)
  else steps+=("$step"); fi
done
for step in "${steps[@]}"; do
  case $step in
    native)
      python3 -m pytest tests/gpu/test_native_gpu.py -v -s -rs 2>&1 | tee "$OUT/gpu-tests-native.txt" | grep -E "PASS|FAIL|SKIP|Error|assert|passed|failed" | head -40
      python3 bench/native_overhead.py --json "$OUT/native-overhead-h200.json" 2>&1 | tee "$OUT/native-overhead.txt" ;;
    profile)
      python3 -m pytest tests/gpu/test_profile_gpu.py -v -s -rs 2>&1 | tee "$OUT/gpu-tests-profile.txt" | grep -E "PASS|FAIL|SKIP|Error|passed|failed" | head -40
      model=${MODEL:-vit_base_patch16_224}
      python3 -m visprof profile "$model" --quiet --json "$OUT/visprof-profile-$model.json" 2>&1 | tee "$OUT/visprof-profile-$model.txt" ;;
    nsight-tests)
      mkdir -p /tmp/ncu-csv/tests
      VISPROF_NCU_OUT=/tmp/ncu-csv/tests python3 -m pytest tests/gpu/test_nsight_gpu.py -v -s -rs 2>&1 | tee "$OUT/gpu-tests-nsight.txt" | grep -E "IDENTICAL|DIFFERENT|summary|PASS|FAIL|SKIP|Error|passed|failed" | head -40
      tar -czf "$OUT/ncu-csv.tar.gz" -C /tmp ncu-csv ;;
    nsight-bench)
      python3 bench/nvtx_overhead.py --models resnet50,vit_base_patch16_224,swin_tiny_patch4_window7_224 --rounds 5 --iterations 30 --json "$OUT/nvtx-overhead-h200.json" 2>&1 | tail -8 | tee "$OUT/nsight-bench.txt"
      mkdir -p /tmp/ncu-csv/roofline
      python3 bench/ncu_roofline.py --csv-dir /tmp/ncu-csv/roofline --json "$OUT/ncu-roofline-h200.json" 2>&1 | tail -40 | tee -a "$OUT/nsight-bench.txt"
      tar -czf "$OUT/ncu-csv.tar.gz" -C /tmp ncu-csv ;;
    nsys2022)
      tar -xJf .nsys/nsyspack.tar.xz -C /tmp || continue
      ( export LD_LIBRARY_PATH=/tmp/nsyspack/host-linux-x64:${LD_LIBRARY_PATH:-}
        python3 -m visprof nsys run --capture-range none --nsys /tmp/nsyspack/target-linux-x64/nsys --no-import \
          -o /tmp/nsys-resnet50 -- python3 -m visprof profile resnet50 --nvtx-only --iterations 3 --quiet ) > /tmp/nsys.log 2>&1
      tail -5 /tmp/nsys.log | tee "$OUT/nsys2022.txt"
      python3 -m visprof nsys import /tmp/nsys-resnet50.sqlite 2>&1 | tail -3 | tee -a "$OUT/nsys2022.txt"
      gzip -c /tmp/nsys-resnet50.sqlite > "$OUT/nsys2022-h200-resnet50.sqlite.gz" ;;
    *) python3 -c "$step" ;;
  esac
done
