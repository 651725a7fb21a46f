#!/bin/bash
# Alternating rounds: decode of the store's 2,808 results, then the whole calibrate, old (HEAD) vs new (w2).
source /work/venv/bin/activate
cd /tmp/s57
for r in 1 2 3; do
  for v in old w2; do
    echo "round $r $v load $(cut -d' ' -f1-2 /proc/loadavg)"
    (cd /tmp/s57/$v && PYTHONPATH=/tmp/s57/$v python bench_decode.py /tmp/v56/profiles.db)
    s=$(date +%s.%N)
    (cd /tmp/s57/$v && PYTHONPATH=/tmp/s57/$v python -m visprof calibrate /tmp/v56/refs2.db /tmp/v56/profiles.db --base rtx4090 --target rtx5090 > /tmp/s57/cal-$v-$r.txt 2>/dev/null)
    echo "calibrate $v: $(echo "$(date +%s.%N) - $s" | bc) s"
  done
done
