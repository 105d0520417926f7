#!/usr/bin/env bash
# One call on the GPU machine (no package index there): the bundled set on the GPU, the throughput
# benchmark (warm sandboxes vs a fresh process), timing/coverage/exploits (timing_guards.py), then
# the test suite with the verdict/sandbox/pool tests on CUDA. The service and Ray tests need packages the GPU image lacks; CI runs them. Logs go to $OUT.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/tritongym-gpu}
mkdir -p "$OUT"
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name(0))"
python3 -m tritongym demo --device cuda --out "$OUT/bundled_h200.jsonl" 2>&1 | tail -3
python3 benchmarks/eval_throughput.py --device cuda --jobs 1 2 --rounds 2 --out "$OUT/eval_throughput_cuda.json" 2>&1 | tail -6
python3 benchmarks/judge_overhead.py --device cuda --rounds 2 --label judge --out "$OUT/judge_overhead_cuda_judge.json" 2>&1 | tail -8
python3 benchmarks/timing_guards.py --out "$OUT/timing_guards_h200.json" 2>&1 | tail -40
TRITONGYM_TEST_DEVICE=cuda python3 -m pytest -q -rf -p no:cacheprovider -m "gpu or not gpu" -n 8 --timeout 240 \
  --ignore=tests/env/test_service.py --ignore=tests/env/test_server_process.py --ignore=tests/env/test_ray.py \
  tests 2>&1 | grep -v -e PytestBenchmarkWarning -e "warner(" | tee "$OUT/pytest_gpu.log" | tail -40
