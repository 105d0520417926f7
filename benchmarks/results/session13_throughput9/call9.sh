#!/usr/bin/env bash
# Session 13, throughput9: the timed check's kernel against its torch oracle on CUDA (-m gpu), then warm-up (the branch's code, 12 candidates), then main (build/t9main) and the branch
# (build/throughput9), 200 candidates each, 4 sandboxes; --compare; then the branch's A/A with the time left.
cd "$(dirname "$0")/../.."
ROOT=$PWD
export PYTHONUNBUFFERED=1 CC=/opt/gcc/bin/gcc
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
q() { grep -v -e UserWarning -e _warn_once; }
s() { python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); m=d['sum_stage_seconds']; md=d['median_stage_seconds']
print(sys.argv[1].split('/')[-1], 's/cand', d['seconds_per_candidate'], 'ready', d['pool_ready_s'], 'after', d['seconds_per_candidate_after_start'], 'excl', d['gpu_exclusive_s'], 'wall', d['wall_s'], 'ci', d['timing']['ci_half_width'], 'contended', d['timing']['contended_reps'], 'unexpected', d['unexpected'], 'verdicts', d['verdicts_by_kind'])
print('  startup', d['judge_startup_seconds'])
print('  sums', {k: m.get(k) for k in ('timing','timing_warm_up','timing_holds','timing_check','timing_inputs','timing_brackets','timing_measured_reps','timing_untimed_reps','timing_setup','profiling','gpu_lock_wait','gpu_lock_wait_exclusive','total','sandbox_wall')})
print('  medians', {k: md.get(k) for k in ('timing','timing_warm_up','timing_holds','timing_check','timing_inputs','timing_brackets','timing_setup')})" "$1"; }
el "gpu tests of the timed check (branch)"
(cd build/throughput9 && PYTHONPATH=$PWD timeout 80 python3 -m pytest -q -rf -p no:cacheprovider -m gpu --timeout 70 tests/test_timed_check.py tests/adversarial/test_redteam20.py 2>&1 | q | tee "$OUT/pytest_gpu.log" | tail -6)
el "warm-up (branch)"
(cd build/throughput9 && PYTHONPATH=$PWD timeout 75 python3 benchmarks/rl_batch.py --device cuda --candidates 12 --sandboxes 4 --out "$OUT/warm_branch.json" > /tmp/rb0.log 2>&1); s "$OUT/warm_branch.json" || tail -20 /tmp/rb0.log
el "rlbatch main"
(cd build/t9main && PYTHONPATH=$PWD timeout 170 python3 benchmarks/rl_batch.py --device cuda --candidates 200 --sandboxes 4 --out "$OUT/rl_batch_main.json" > /tmp/rb1.log 2>&1); s "$OUT/rl_batch_main.json" || tail -20 /tmp/rb1.log
el "rlbatch branch"
(cd build/throughput9 && PYTHONPATH=$PWD timeout 170 python3 benchmarks/rl_batch.py --device cuda --candidates 200 --sandboxes 4 --out "$OUT/rl_batch_branch.json" > /tmp/rb2.log 2>&1); s "$OUT/rl_batch_branch.json" || tail -20 /tmp/rb2.log
(cd build/throughput9 && PYTHONPATH=$PWD python3 benchmarks/rl_batch.py --compare "$OUT/rl_batch_main.json" "$OUT/rl_batch_branch.json" 2>&1 | q | tee "$OUT/compare.txt" | tail -4)
LEFT=$(( 550 - ($(date +%s) - T0) ))
el "timing_aa branch ($LEFT s)"
if [ "$LEFT" -gt 90 ]; then
  (cd build/throughput9 && PYTHONPATH=$PWD timeout $(( LEFT - 5 )) python3 benchmarks/timing_aa.py --repeats 1 --budget 2 --out "$OUT/timing_aa_branch.json" 2>&1 | q | tail -18)
fi
el done
