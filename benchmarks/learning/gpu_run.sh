#!/usr/bin/env bash
# The four learning experiments on one GPU, resumable: run it again until it exits 0.
#   bash benchmarks/learning/gpu_run.sh [RUN_DIR] [BUDGET_S]
# RUN_DIR (default runs/learning, git-ignored, so it stays between calls on a warm machine) holds the
# evaluation caches, checkpoints and results; BUDGET_S (default 420) bounds this call (a phase in
# flight may overrun it by a minute or two; finished experiments are skipped). Order matters:
# learning fills the evaluation cache that lazy, multiturn and hacking's guarded arm reuse. When $OUT
# is set, the results (summaries, figures, metrics, caches) are copied there after every call, so a
# fresh machine can resume from them (copy them back into RUN_DIR first).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
RUN_DIR=${1:-runs/learning}
BUDGET=${2:-420}
mkdir -p "$RUN_DIR"
START=$(date +%s)
status=0
for name in learning lazy multiturn hacking; do
  left=$(( BUDGET - ($(date +%s) - START) ))
  if [ "$left" -le 30 ]; then status=3; break; fi
  if [ -f "$RUN_DIR/$name/summary.json" ]; then continue; fi
  python3 benchmarks/learning/run.py --config "benchmarks/learning/configs/$name.toml" --device cuda \
    --out "$RUN_DIR" --time-budget-s "$left" --sandboxes 2 > "$RUN_DIR.$name.log" 2>&1
  status=$?
  tail -n 3 "$RUN_DIR.$name.log"
  if [ "$status" -ne 0 ]; then break; fi
done
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT/learning"
  (cd "$RUN_DIR" && find . -name '*.ckpt' -prune -o -type f -print | tar -cf - -T -) | tar -xf - -C "$OUT/learning"
  cp "$RUN_DIR".*.log "$OUT/learning/" 2>/dev/null
fi
echo "exit $status (0: all done; 3: run again to resume)"
exit $status
