#!/usr/bin/env bash
# Session 14 coordinator call 1: few-microsecond kernels' timing diagnostics on main and on the scaled queue bound.
cd "$(dirname "$0")/../.."
export CC=/opt/gcc/bin/gcc PYTHONUNBUFFERED=1
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name(0))"
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
q() { grep -v -e UserWarning -e _warn_once; }
for n in tq_main tq_new; do
  el "== $n"
  (cd build/$n && cp ../coord/tiny_diag.py . && PYTHONPATH=$PWD timeout 150 python3 tiny_diag.py constexpr_dtype,kb_gelu_tanh,libdevice_math,libdevice_attribute_chain 1.0 $( [ $n = tq_new ] && echo aa ) 2>&1 | q | tee "$OUT/tiny_$n.jsonl" | tail -12)
done
el "honest corpus on tq_new"
(cd build/tq_new && PYTHONPATH=$PWD timeout $(( 560 - ($(date +%s) - T0) )) python3 benchmarks/honest_corpus.py --device cuda --budget 1.0 --first pointer_table_of_chunks class_kernels --deadline $(( 520 - ($(date +%s) - T0) )) --out "$OUT/honest_tq_new.jsonl" 2>&1 | q | grep -v "^ok " | tail -15)
el done
