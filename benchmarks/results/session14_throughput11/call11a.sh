#!/usr/bin/env bash
# Session 14, throughput11, call 1: the flag holds' GPU tests (holds.py), a warm-up (the branch, 12 candidates),
# then main (build/t11main, the branch's base 8977347) and the branch (build/throughput11), 200 candidates each,
# 4 sandboxes; --compare; the contention test; the branch's A/A with the time left.
cd "$(dirname "$0")/../../../../.."  # run as build/throughput11/benchmarks/results/session14_throughput11/call11a.sh: the checkout root
export PYTHONUNBUFFERED=1 CC=/opt/gcc/bin/gcc
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name(0))"
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
q() { grep -v -e UserWarning -e _warn_once; }
s() { python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); m=d['sum_stage_seconds']; md=d['median_stage_seconds']
print(sys.argv[1].split('/')[-1], 's/cand', d['seconds_per_candidate'], 'after', d['seconds_per_candidate_after_start'], 'excl', d['gpu_exclusive_s'], 'wall', d['wall_s'], 'ci', d['timing']['ci_half_width'], 'contended', d['timing']['contended_reps'], 'unexpected', d['unexpected'], 'verdicts', d['verdicts_by_kind'])
print('  sums', {k: m.get(k) for k in ('timing','timing_warm_up','timing_holds','timing_check','timing_inputs','timing_brackets','timing_measured_reps','timing_untimed_reps','timing_late_reps','timing_setup','profiling','gpu_lock_wait','gpu_lock_wait_exclusive','total')})
print('  medians', {k: md.get(k) for k in ('timing','timing_warm_up','timing_holds','timing_check','timing_inputs','timing_brackets','timing_setup')})" "$1"; }
B=build/throughput11
M=build/t11main
el "holds GPU tests (branch)"
(cd $B && PYTHONPATH=$PWD timeout 90 python3 -m pytest -q -x -m gpu -p no:cacheprovider tests/gpu/test_holds_gpu.py > /tmp/holds.log 2>&1); RC=$?
q < /tmp/holds.log | tail -25
[ "$RC" = 0 ] || { el "holds GPU tests failed ($RC): stop"; exit 1; }
el "warm-up (branch)"
(cd $B && PYTHONPATH=$PWD timeout 70 python3 benchmarks/rl_batch.py --device cuda --candidates 12 --sandboxes 4 --out "$OUT/warm_branch.json" > /tmp/rb0.log 2>&1); s "$OUT/warm_branch.json" || tail -20 /tmp/rb0.log
el "rlbatch main 4"
(cd $M && PYTHONPATH=$PWD timeout 150 python3 benchmarks/rl_batch.py --device cuda --candidates 200 --sandboxes 4 --out "$OUT/rl_batch_main_8977347_4x200.json" > /tmp/rb1.log 2>&1); s "$OUT/rl_batch_main_8977347_4x200.json" || tail -20 /tmp/rb1.log
el "rlbatch branch 4"
(cd $B && PYTHONPATH=$PWD timeout 150 python3 benchmarks/rl_batch.py --device cuda --candidates 200 --sandboxes 4 --out "$OUT/rl_batch_branch_4x200.json" > /tmp/rb2.log 2>&1); s "$OUT/rl_batch_branch_4x200.json" || tail -30 /tmp/rb2.log
(cd $B && PYTHONPATH=$PWD python3 benchmarks/rl_batch.py --compare "$OUT/rl_batch_main_8977347_4x200.json" "$OUT/rl_batch_branch_4x200.json" 2>&1 | q | tee "$OUT/compare.txt" | tail -4)
el "contention test (branch)"
(cd $B && PYTHONPATH=$PWD timeout 120 python3 -m pytest -q -x -m gpu -p no:cacheprovider tests/gpu/test_timing_contention.py 2>&1 | q | tail -6)
LEFT=$(( 525 - ($(date +%s) - T0) ))
el "timing_aa branch ($LEFT s)"
if [ "$LEFT" -gt 60 ]; then
  (cd $B && PYTHONPATH=$PWD timeout $(( LEFT - 5 )) python3 benchmarks/timing_aa.py --repeats 1 --budget 2 --out "$OUT/timing_aa_branch.json" 2>&1 | q | tail -18)
fi
el done
