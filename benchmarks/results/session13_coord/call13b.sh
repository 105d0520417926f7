#!/usr/bin/env bash
# Coordinator call 2 of session 13 (an H200 x2 host): main (8f7aad6) on one GPU then on two, 200 candidates each,
# 4 sandboxes per GPU, in one call; 400 on two GPUs if the call leaves time.
cd "$(dirname "$0")/../.."
ROOT=$PWD
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1 CC=/opt/gcc/bin/gcc
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])"
nproc
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
q() { grep -v -e UserWarning -e _warn_once; }
s() { python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); m=d['sum_stage_seconds']
print(sys.argv[1].split('/')[-1], 's/cand', d['seconds_per_candidate'], 'ready', d['pool_ready_s'], 'after', d['seconds_per_candidate_after_start'], 'excl', d['gpu_exclusive_s'], 'wall', d['wall_s'], 'ci', d['timing']['ci_half_width'], 'contended', d['timing']['contended_reps'], 'unexpected', d['unexpected'], 'verdicts', d['verdicts_by_kind'])" "$1"; }
el warm-up
timeout 60 python3 benchmarks/rl_batch.py --device cuda --devices cuda:0,1 --candidates 12 --sandboxes 4 --out /tmp/warm.json 2>&1 | q | tail -1
el "one GPU"
timeout 160 python3 benchmarks/rl_batch.py --device cuda --devices cuda:0 --candidates 200 --sandboxes 4 --out "$OUT/rl_batch_h200x2_one_gpu_4x200.json" > /tmp/rb1.log 2>&1; s "$OUT/rl_batch_h200x2_one_gpu_4x200.json"
el "two GPUs"
timeout 160 python3 benchmarks/rl_batch.py --device cuda --devices cuda:0,1 --candidates 200 --sandboxes 4 --out "$OUT/rl_batch_h200x2_two_gpus_4x200.json" > /tmp/rb2.log 2>&1; s "$OUT/rl_batch_h200x2_two_gpus_4x200.json"
LEFT=$(( 560 - ($(date +%s) - T0) ))
if [ "$LEFT" -gt 170 ]; then
  el "two GPUs, 400 candidates ($LEFT s)"
  timeout $(( LEFT - 10 )) python3 benchmarks/rl_batch.py --device cuda --devices cuda:0,1 --candidates 400 --sandboxes 4 --out "$OUT/rl_batch_h200x2_two_gpus_4x400.json" > /tmp/rb3.log 2>&1; s "$OUT/rl_batch_h200x2_two_gpus_4x400.json"
fi
tail -3 /tmp/rb1.log /tmp/rb2.log
el done
