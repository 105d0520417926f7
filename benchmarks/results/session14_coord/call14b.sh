#!/usr/bin/env bash
# Session 14 coordinator call 2: main after every merge of the session (build/final) and the same with two
# untimed exclusive warm-up repetitions (build/wu2: WARM_UP_REPS = 2), 200 candidates x 4 sandboxes each,
# --compare; then the honest corpus through one pool (final).
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 CC=/opt/gcc/bin/gcc
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name(0))"
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
q() { grep -v -e UserWarning -e _warn_once; }
s() { python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); m=d['sum_stage_seconds']
print(sys.argv[1].split('/')[-1], 's/cand', d['seconds_per_candidate'], 'after', d['seconds_per_candidate_after_start'], 'ready', d['pool_ready_s'], 'excl', d['gpu_exclusive_s'], 'wall', d['wall_s'], 'ci', d['timing']['ci_half_width'], 'contended', d['timing']['contended_reps'], 'unexpected', d['unexpected'], 'verdicts', d['verdicts_by_kind'])
print('  sums', {k: m.get(k) for k in ('timing','timing_warm_up','timing_holds','timing_measured_reps','timing_untimed_reps','gpu_lock_wait','total')})" "$1"; }
F=build/final
W=build/wu2
el "warm-up (final)"
(cd $F && PYTHONPATH=$PWD timeout 70 python3 benchmarks/rl_batch.py --device cuda --candidates 12 --sandboxes 4 --out /tmp/warm.json > /tmp/rb0.log 2>&1); s /tmp/warm.json || tail -20 /tmp/rb0.log
el "rlbatch final"
(cd $F && PYTHONPATH=$PWD timeout 150 python3 benchmarks/rl_batch.py --device cuda --candidates 200 --sandboxes 4 --out "$OUT/rl_batch_final_4x200.json" > /tmp/rb1.log 2>&1); s "$OUT/rl_batch_final_4x200.json" || tail -20 /tmp/rb1.log
el "rlbatch wu2"
(cd $W && PYTHONPATH=$PWD timeout 150 python3 benchmarks/rl_batch.py --device cuda --candidates 200 --sandboxes 4 --out "$OUT/rl_batch_wu2_4x200.json" > /tmp/rb2.log 2>&1); s "$OUT/rl_batch_wu2_4x200.json" || tail -20 /tmp/rb2.log
(cd $F && PYTHONPATH=$PWD python3 benchmarks/rl_batch.py --compare "$OUT/rl_batch_final_4x200.json" "$OUT/rl_batch_wu2_4x200.json" 2>&1 | q | tee "$OUT/compare.txt" | tail -4)
LEFT=$(( 470 - ($(date +%s) - T0) ))
el "honest corpus ($LEFT s)"
(cd $F && PYTHONPATH=$PWD timeout $(( LEFT - 5 )) python3 benchmarks/honest_corpus.py --device cuda --budget 1.0 --deadline $(( LEFT - 40 )) --out "$OUT/honest_final.jsonl" 2>&1 | q | grep -v "^ok " | tail -12)
el done
