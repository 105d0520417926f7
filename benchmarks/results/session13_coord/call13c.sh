#!/usr/bin/env bash
# Coordinator call 3 of session 13: main after every merge of the session. The honest corpus on CUDA (the three
# session 13 call 1 read as timing_untrusted beside full-size tests, alone first, then the new cases), the
# bundled set at full size started a minute later beside the rest.
cd "$(dirname "$0")/../.."
ROOT=$PWD
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1 CC=/opt/gcc/bin/gcc
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name(0))"
git log -1 --format=%h 2>/dev/null
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
q() { grep -v -e UserWarning -e _warn_once; }
el "timed check on CUDA"
timeout 60 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_timed_check.py 2>&1 | tail -2
el "rl batch, 12 then 200"
timeout 60 python3 benchmarks/rl_batch.py --device cuda --candidates 12 --sandboxes 4 --out /tmp/warm.json 2>&1 | q | tail -1
timeout 150 python3 benchmarks/rl_batch.py --device cuda --candidates 200 --sandboxes 4 --out "$OUT/rl_batch_final_4x200.json" > /tmp/rb.log 2>&1
python3 -c "
import json; d=json.load(open('$OUT/rl_batch_final_4x200.json')); m=d['sum_stage_seconds']
print('s/cand', d['seconds_per_candidate'], 'ready', d['pool_ready_s'], 'excl', d['gpu_exclusive_s'], 'wall', d['wall_s'], 'check', m.get('timing_check'), 'ci', d['timing']['ci_half_width'], 'contended', d['timing']['contended_reps'], 'unexpected', d['unexpected'], 'verdicts', d['verdicts_by_kind'])"
el "honest corpus + full size"
(sleep 60; timeout 250 python3 -m pytest -v -p no:cacheprovider -m gpu -n 3 --timeout 240 tests/gpu/test_gpu.py -k "full_size" > "$OUT/gpu_full_size.log" 2>&1) &
A=$!
timeout 330 python3 benchmarks/honest_corpus.py --device cuda --budget 1.0 --first kb_gelu_tanh libdevice_attribute_chain constexpr_dtype device_print_debug many_glue_copies_handed output_column_slice pointer_table_of_chunks --deadline 300 --out "$OUT/honest_final.jsonl" 2>&1 | q | grep -v "^ok " | tail -20
wait $A
grep -E "PASSED|FAILED|ERROR|XFAIL|XPASS| passed| failed" "$OUT/gpu_full_size.log" | sed 's/^\[gw[0-9]*\] //' | cut -c1-170
python3 -c "
import json
for l in open('$OUT/honest_final.jsonl'):
    r = json.loads(l)
    if r['name'] in ('kb_gelu_tanh', 'libdevice_attribute_chain', 'constexpr_dtype'): print(r['name'], r['verdict'], r['findings'], r['feedback'][:200], 't', r['t'])
"
el done
