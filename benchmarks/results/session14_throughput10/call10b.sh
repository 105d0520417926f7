#!/usr/bin/env bash
# Session 14, throughput10, call 2: PLANNED, NOT RUN (no device was lent for it). Warm-up (the branch, 12 candidates), then main (build/t10main, the branch's base
# 1d73a3e) and the branch (build/throughput10), 200 candidates each, 4 sandboxes; --compare; the branch with 6
# sandboxes; the branch's A/A and contention test; 8 sandboxes with the time left.
cd "$(dirname "$0")/../.."  # run as build/throughput10/call10b.sh: the checkout root
export PYTHONUNBUFFERED=1 CC=/opt/gcc/bin/gcc
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name(0))"
nproc
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
q() { grep -v -e UserWarning -e _warn_once; }
s() { python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); m=d['sum_stage_seconds']; md=d['median_stage_seconds']
print(sys.argv[1].split('/')[-1], 's/cand', d['seconds_per_candidate'], 'ready', d['pool_ready_s'], 'after', d['seconds_per_candidate_after_start'], 'excl', d['gpu_exclusive_s'], 'wall', d['wall_s'], 'ci', d['timing']['ci_half_width'], 'contended', d['timing']['contended_reps'], 'unexpected', d['unexpected'], 'verdicts', d['verdicts_by_kind'])
print('  startup', d['judge_startup_seconds'])
print('  sums', {k: m.get(k) for k in ('timing','timing_warm_up','timing_holds','timing_check','timing_inputs','timing_brackets','timing_measured_reps','timing_late_reps','timing_untimed_reps','timing_setup','profiling','gpu_lock_wait','gpu_lock_wait_exclusive','total','sandbox_wall','reference','correctness','import','guards')})
print('  medians', {k: md.get(k) for k in ('timing','timing_warm_up','timing_holds','timing_check','timing_inputs','timing_brackets','timing_setup')})" "$1"; }
B=build/throughput10
M=build/t10main
el "warm-up (branch)"
(cd $B && PYTHONPATH=$PWD timeout 70 python3 benchmarks/rl_batch.py --device cuda --candidates 12 --sandboxes 4 --out "$OUT/warm_branch.json" > /tmp/rb0.log 2>&1); s "$OUT/warm_branch.json" || tail -20 /tmp/rb0.log
el "rlbatch main 4"
(cd $M && PYTHONPATH=$PWD timeout 160 python3 benchmarks/rl_batch.py --device cuda --candidates 200 --sandboxes 4 --out "$OUT/rl_batch_main_1d73a3e_4x200.json" > /tmp/rb1.log 2>&1); s "$OUT/rl_batch_main_1d73a3e_4x200.json" || tail -20 /tmp/rb1.log
el "rlbatch branch 4"
(cd $B && PYTHONPATH=$PWD timeout 160 python3 benchmarks/rl_batch.py --device cuda --candidates 200 --sandboxes 4 --out "$OUT/rl_batch_branch_4x200.json" > /tmp/rb2.log 2>&1); s "$OUT/rl_batch_branch_4x200.json" || tail -20 /tmp/rb2.log
(cd $B && PYTHONPATH=$PWD python3 benchmarks/rl_batch.py --compare "$OUT/rl_batch_main_1d73a3e_4x200.json" "$OUT/rl_batch_branch_4x200.json" 2>&1 | q | tee "$OUT/compare.txt" | tail -4)
el "rlbatch branch 6"
(cd $B && PYTHONPATH=$PWD timeout 150 python3 benchmarks/rl_batch.py --device cuda --candidates 200 --sandboxes 6 --out "$OUT/rl_batch_branch_6x200.json" > /tmp/rb3.log 2>&1); s "$OUT/rl_batch_branch_6x200.json" || tail -20 /tmp/rb3.log
el "timing_aa branch"
(cd $B && PYTHONPATH=$PWD timeout 90 python3 benchmarks/timing_aa.py --repeats 1 --budget 2 --out "$OUT/timing_aa_branch.json" 2>&1 | q | tail -16)
el "contention test (branch)"
(cd $B && PYTHONPATH=$PWD timeout 100 python3 -m pytest -q -rf -p no:cacheprovider -m gpu --timeout 95 --durations=3 tests/gpu/test_timing_contention.py 2>&1 | q | tee "$OUT/pytest_gpu_contention.log" | tail -8)
LEFT=$(( 550 - ($(date +%s) - T0) ))
el "rlbatch branch 8 ($LEFT s)"
if [ "$LEFT" -gt 100 ]; then
  (cd $B && PYTHONPATH=$PWD timeout $(( LEFT - 5 )) python3 benchmarks/rl_batch.py --device cuda --candidates 200 --sandboxes 8 --out "$OUT/rl_batch_branch_8x200.json" > /tmp/rb4.log 2>&1); s "$OUT/rl_batch_branch_8x200.json" || tail -5 /tmp/rb4.log
fi
el done
