#!/bin/bash
# old vs new visprof calibrate, alternating, on the same machine state
cd /tmp/v56
for round in 1 2; do
  for tree in old new; do
    src=/tmp/v56/old; [ $tree = new ] && src=/tmp/v56/new
    s=$(date +%s.%N)
    PYTHONPATH=$src /work/venv/bin/python -m visprof calibrate refs2.db profiles.db --base rtx4090 --target rtx5090 > speed-$tree-$round.txt 2>/dev/null
    e=$(date +%s.%N)
    echo "round $round $tree $(echo "$e - $s" | bc) s load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
