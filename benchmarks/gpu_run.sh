#!/usr/bin/env bash
# The GPU measurements, one stage per call (each fits a 10-minute call on one GPU; no package index is
# needed there: torch, triton, transformers, rich and typer suffice). Results go to $OUT.
#
#   bash benchmarks/gpu_run.sh tests [FILES]  # tests/gpu's gpu-marked tests (judge, pool, agent replay, Inductor), three at
#        once; they no longer fit one call: name a part, e.g. tests/gpu/test_gpu.py tests/gpu/test_agent_gpu.py, then the rest
#   bash benchmarks/gpu_run.sh exploits   # the exploit suite's and the red teams' GPU tests, three at once
#   bash benchmarks/gpu_run.sh memory     # the memory and stream tests (test_judge_time_and_size_gpu.py too) and red team 8's
#        GPU hog, one at a time (each
#        sizes from the GPU or takes it whole: never beside the three-at-once tests)
#   bash benchmarks/gpu_run.sh timing     # A/A timing of the bundled set, then timing/coverage/exploit verdicts
#   bash benchmarks/gpu_run.sh parts      # one A/A job taken apart: every repetition's brackets, the runner's and
#        the twin's hand-offs, default and 4x longer batches, in-process costs (benchmarks/timing_parts.py)
#   bash benchmarks/gpu_run.sh alarms     # the contention check's evidence, repetition by repetition, for level 3's
#        1_MLP, 4_LeNet5, 35_LSTM (lazy candidates, build/KernelBench/level3) and bundled 13_row_argmax
#        (benchmarks/timing_alarms.py)
#   bash benchmarks/gpu_run.sh contention # timing beside busy sandboxes of the same pool: its test, then the
#        diagnostic (benchmarks/timing_contention.py), each alone on the GPU
#   bash benchmarks/gpu_run.sh overhead   # judge overhead per candidate and evaluations per minute
#   bash benchmarks/gpu_run.sh train      # three trainer steps of the drkernel preset (time and memory per step)
#   bash benchmarks/gpu_run.sh learning   # step (a) of docs/learning.md: judge what table.jsonl lacks of the design space
#   bash benchmarks/gpu_run.sh rlbatch [DEVICES [SANDBOXES [QUEUES]]]   # 200 candidates (half failing) with timing (RL
#        budget 0.1 s) and profiling, pool start included, SANDBOXES per GPU (default 4), QUEUES the runners' hardware
#        work queues (PoolConfig.runner_work_queues: every runner that many; default per problem, one where its reference ran on
#        one stream, else the judge's setting; runners' counts in the sums runner_one_queue, runner_unfit_spare); DEVICES e.g. cuda:0,1 for two GPUs,
#        "" for all; the result is named after them, e.g. rl_batch_cuda-0-1_4.json)
#   bash benchmarks/gpu_run.sh context    # what a runner's CUDA context is made of, alone and four at once, by driver
#        setting (benchmarks/cuda_context.py; about a minute)
#   bash benchmarks/gpu_run.sh cupti      # a process's launches after one torch.profiler run, by TEARDOWN_CUPTI
#        (benchmarks/cupti_after_profile.py: the judge's reference profile must leave nothing; about 40 s)
#   bash benchmarks/gpu_run.sh launchrate # why launch-heavy forwards read slow in a runner (benchmarks/launch_rate.py): the
#        host's mitigations, the judged A/A of 200 and 1200 tiny PyTorch ops a forward (write_many_ops; the pool's scaled
#        launch queue and the driver's), 34_VanillaRNNHidden cut to 64 steps (build/KernelBench) made into Inductor's
#        solution, its settings' processes, then it judged
#   bash benchmarks/gpu_run.sh landlock   # runners under Landlock: CUDA IPC, Triton, profiler, Inductor, a pool (which op fails)
#   bash benchmarks/gpu_run.sh kernelbench LEVELS [IDS [lazy]]   # Inductor's solutions of KernelBench levels LEVELS
#        (1, or 1,3, or 1:280,3 where LEVEL:SECONDS caps a level, which is resumed if the later levels leave time; IDS the leading numbers kept, e.g. 19-32,45, the
#        same for every level, or one list per level in LEVELS' order, split by "/": 19-32,45/16,29-32 keeps level 1's
#        19-32 and 45 and level 3's 16 and 29-32, an empty list all of its level; problems from $KB_ROOT/levelN, default
#        build/KernelBench, carried in build/) judged against --baseline compile (with `lazy`: each problem's own
#        PyTorch plus a trivial Triton launch, against eager). The levels share one deadline ($KB_SECONDS, default
#        545 s): chunk after chunk is judged while the rest compiles (the later levels' solutions compile from the
#        start, beside the first level's judges), each chunk with as many judges per GPU as its problems' memory
#        allows, and a chunk that would not end in time is cut; every finished chunk's summary is written, and the
#        runs go back as one archive. $KB_STATE: a directory holding an earlier call's runs (its archive
#        extracted), resumed there (the same command goes on where the last one stopped); $KB_REJUDGE: verdicts
#        (e.g. timeout,infrastructure_error) whose problems in finished chunks are judged again
set -u
case "${1:-}" in
  tests|exploits|memory|timing|parts|alarms|contention|overhead|train|learning|kernelbench|landlock|rlbatch|context|cupti|launchrate) ;;
  *) echo "usage: bash benchmarks/gpu_run.sh tests|exploits|memory|timing|parts|alarms|contention|overhead|train|learning|kernelbench|landlock|rlbatch|context|cupti|launchrate" >&2; exit 2 ;;
esac
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/tritongym-gpu}
mkdir -p "$OUT"
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name(0))"
case "${1:-}" in
  tests)
    files=("${@:2}"); [ ${#files[@]} -eq 0 ] && files=(tests/gpu)
    timeout 560 python3 -m pytest -q -rf -p no:cacheprovider -m gpu -n 3 --timeout 400 --durations=15 \
      --ignore=tests/gpu/test_memory_and_streams.py --ignore=tests/gpu/test_timing_contention.py \
      --ignore=tests/gpu/test_judge_time_and_size_gpu.py "${files[@]}" 2>&1 \
      | grep -v -e UserWarning -e _warn_once | tee "$OUT/pytest_gpu.log" | tail -40 ;;
  exploits)
    timeout 560 python3 -m pytest -q -rf -p no:cacheprovider -m gpu -n 3 --timeout 400 --durations=15 \
      $(ls tests/adversarial/test_*gpu*.py | grep -v redteam8) 2>&1 \
      | grep -v -e UserWarning -e _warn_once | tee "$OUT/pytest_gpu_exploits.log" | tail -40 ;;
  memory)
    timeout 560 python3 -m pytest -q -rf -p no:cacheprovider -m gpu --timeout 300 --durations=10 \
      tests/gpu/test_memory_and_streams.py tests/gpu/test_judge_time_and_size_gpu.py tests/adversarial/test_redteam8_gpu.py 2>&1 \
      | grep -v -e UserWarning -e _warn_once \
      | tee "$OUT/pytest_gpu_memory.log" | tail -30 ;;
  timing)
    timeout 300 python3 benchmarks/timing_aa.py --repeats 2 --budget 3 --out "$OUT/timing_aa.json" 2>&1 | tail -16
    timeout 260 python3 benchmarks/timing_guards.py --out "$OUT/timing_guards.json" 2>&1 | tail -40 ;;
  parts)
    timeout 560 python3 benchmarks/timing_parts.py --out "$OUT/timing_parts.json" 2>&1 \
      | grep -v -e UserWarning -e _warn_once | tail -20 ;;
  alarms)
    timeout 560 python3 benchmarks/timing_alarms.py --kernelbench build/KernelBench/level3 \
      --out "$OUT/timing_alarms.json" 2>&1 | grep -v -e UserWarning -e _warn_once | grep -v "^   hand-off" | tail -50 ;;
  contention)
    timeout 300 python3 -m pytest -q -rf -p no:cacheprovider -m gpu --timeout 280 --durations=5 \
      tests/gpu/test_timing_contention.py 2>&1 | grep -v -e UserWarning -e _warn_once \
      | tee "$OUT/pytest_gpu_contention.log" | tail -20
    timeout 260 python3 benchmarks/timing_contention.py --repeats 2 --out "$OUT/timing_contention.json" 2>&1 \
      | grep -v -e UserWarning -e _warn_once | tail -12 ;;
  overhead)
    timeout 280 python3 benchmarks/judge_overhead.py --device cuda --rounds 2 --label judge \
      --out "$OUT/judge_overhead_cuda.json" 2>&1 | tail -8
    timeout 300 python3 benchmarks/eval_throughput.py --device cuda --jobs 1 2 --rounds 1 \
      --out "$OUT/eval_throughput_cuda.json" 2>&1 | tail -6 ;;
  train)
    timeout 560 python3 benchmarks/train_step.py --preset drkernel --steps 3 --out "$OUT/train_step.json" \
      --set rollout.prompts_per_step=2 --set rollout.samples_per_prompt=2 --set run.eval_timing=true \
      --set run.eval_profile=true --set "model.config_overrides={'hidden_size': 512, 'layers': 8, 'heads': 8}" \
      --set data.small=false 2>&1 | grep -v shards | tail -5 ;;
  learning)
    timeout 560 python3 -m tritongym.design tabulate --config benchmarks/learning/configs/learning.toml \
      --out benchmarks/results/learning_gpu/table.jsonl --device cuda --sandboxes 4 --time-budget-s 480 2>&1 | tail -5
    cp benchmarks/results/learning_gpu/table.jsonl "$OUT/" ;;
  rlbatch)
    devices=${2:-}
    timeout 560 python3 benchmarks/rl_batch.py --device cuda ${2:+--devices "$2"} --candidates 200 \
      --sandboxes "${3:-4}" ${4:+--runner-work-queues "$4"} --out "$OUT/rl_batch${2:+_${devices//[:,]/-}}_${3:-4}${4:+_q$4}.json" 2>&1 \
      | grep -v -e UserWarning -e _warn_once | tail -8 ;;
  context)
    timeout 300 python3 benchmarks/cuda_context.py --concurrency 1 4 --repeats 2 --out "$OUT/cuda_context.json" 2>&1 \
      | tail -8 ;;
  cupti)
    timeout 120 python3 benchmarks/cupti_after_profile.py --out "$OUT/cupti_after_profile.json" 2>&1 \
      | grep -v -e UserWarning -e _warn_once | tail -4 ;;
  launchrate)
    END=$(( $(date +%s) + 550 )); W=/tmp/launchrate; mkdir -p "$W/level3"
    left() { local L=$(( END - $(date +%s) )); [ "$L" -lt 1 ] && L=1; [ "$L" -lt "$1" ] && echo "$L" || echo "$1"; }
    { uname -r; grep . /sys/devices/system/cpu/vulnerabilities/*; grep -m1 "model name" /proc/cpuinfo; nproc;
      nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv; } > "$OUT/launch_rate_host.txt" 2>&1
    timeout "$(left 170)" python3 benchmarks/launch_rate.py --judge many:100 --judge many:600 --pools choice,choice/off,8 \
      --out "$OUT/launch_rate_many.json" 2>&1 | grep -v -e UserWarning -e _warn_once | tail -8
    sed 's/^sequence_length = 256$/sequence_length = 64/' build/KernelBench/level3/34_VanillaRNNHidden.py \
      > "$W/level3/34_VanillaRNNHidden.py"
    timeout "$(left 130)" python3 -m tritongym solutions inductor "$W/level3" --out "$W/solutions" --device cuda --jobs 1 \
      2>&1 | tail -3
    RNN=("$W/level3/34_VanillaRNNHidden.py" "$W/solutions/34_VanillaRNNHidden.py")
    cp "$W/solutions/summary.json" "$OUT/launch_rate_generated.json"; cp "${RNN[1]}" "$OUT/launch_rate_solution.py"
    timeout "$(left 170)" python3 benchmarks/launch_rate.py --problem "${RNN[0]}" --solution "${RNN[1]}" --timeout 70 \
      --settings plain,one_queue,scaled_queue,seccomp,witness,forked,runner --out "$OUT/launch_rate_settings.json" 2>&1 \
      | grep -v -e UserWarning -e _warn_once | tail -10
    timeout "$(left 200)" python3 benchmarks/launch_rate.py --judge "${RNN[0]}:${RNN[1]}:compile" \
      --out "$OUT/launch_rate_rnn.json" 2>&1 | grep -v -e UserWarning -e _warn_once | tail -4 ;;
  landlock)
    timeout 560 python3 benchmarks/landlock_probe.py 2>&1 | grep -v -e UserWarning -e _warn_once \
      | tee "$OUT/landlock_probe.log" | tail -80 ;;
  kernelbench)
    LEVELS=${2:?usage: bash benchmarks/gpu_run.sh kernelbench LEVELS [IDS [lazy]]}
    IDS=${3:-}
    CANDIDATE=${4:-inductor}
    ROOT=${KB_STATE:-$OUT}
    KB=${KB_ROOT:-build/KernelBench}
    mkdir -p "$ROOT"
    END=$(( $(date +%s) + ${KB_SECONDS:-545} ))
    SPECS=(${LEVELS//,/ })
    declare -A LEVEL_IDS=()
    if [[ "$IDS" == */* ]]; then  # one list per level, in LEVELS' order
      IFS=/ read -r -a LISTS <<< "$IDS/"  # the trailing / keeps a last empty list
      if [ ${#LISTS[@]} -ne ${#SPECS[@]} ]; then
        echo "IDS: ${#LISTS[@]} lists split by / for ${#SPECS[@]} levels" >&2; exit 2
      fi
      for I in "${!SPECS[@]}"; do LEVEL_IDS[${SPECS[$I]%%:*}]=${LISTS[$I]}; done
    else
      for SPEC in "${SPECS[@]}"; do LEVEL_IDS[${SPEC%%:*}]=$IDS; done
    fi
    GENERATING=()
    for SPEC in "${SPECS[@]:1}"; do  # the later levels compile from the start, beside the first one's judges
      LEVEL=${SPEC%%:*}
      IDS=${LEVEL_IDS[$LEVEL]}
      timeout "${KB_SECONDS:-545}" python3 benchmarks/kernelbench_inductor.py --problems "$KB/level$LEVEL" ${IDS:+--ids "$IDS"} \
        --candidate "$CANDIDATE" --out "$ROOT/kernelbench_${CANDIDATE}_l${LEVEL}${IDS:+_$IDS}" --jobs 6 --step generate \
        > "$ROOT/generate_l$LEVEL.log" 2>&1 &
      GENERATING+=("$LEVEL:$!")
    done
    judge() {  # LEVEL LEFT [REJUDGE]: the level's bench run (resumed where its state is) under LEFT seconds
      local NAME="kernelbench_${CANDIDATE}_l$1${LEVEL_IDS[$1]:+_${LEVEL_IDS[$1]}}"
      timeout $(( $2 + 30 )) python3 benchmarks/kernelbench_inductor.py --problems "$KB/level$1" \
        ${LEVEL_IDS[$1]:+--ids "${LEVEL_IDS[$1]}"} --candidate "$CANDIDATE" --out "$ROOT/$NAME" --jobs 10 --deadline "$2" \
        ${3:+--rejudge "$3"} 2>&1 | grep -v -e UserWarning -e _warn_once | tail -60
      cp "$ROOT/$NAME/summary.json" "$OUT/summary_l$1.json"; cp "$ROOT/$NAME/report.md" "$OUT/report_l$1.md"
    }
    CAPPED=()
    for SPEC in "${SPECS[@]}"; do
      LEVEL=${SPEC%%:*}
      for G in "${GENERATING[@]}"; do [ "${G%%:*}" = "$LEVEL" ] && wait "${G#*:}"; done
      LEFT=$(( END - $(date +%s) ))
      if [ "$SPEC" != "$LEVEL" ] && [ "${SPEC#*:}" -lt "$LEFT" ]; then LEFT=${SPEC#*:}; CAPPED+=("$LEVEL"); fi  # LEVEL:SECONDS caps a level
      if [ "$LEFT" -lt 60 ]; then echo "level $LEVEL: not started ($LEFT s left)"; continue; fi
      judge "$LEVEL" "$LEFT" "${KB_REJUDGE:-}"
    done
    for LEVEL in "${CAPPED[@]}"; do  # a level its cap stopped gets the time the later levels left (session 11: 38-39)
      SUMMARY="$ROOT/kernelbench_${CANDIDATE}_l$LEVEL${LEVEL_IDS[$LEVEL]:+_${LEVEL_IDS[$LEVEL]}}/summary.json"
      LEFT=$(( END - $(date +%s) ))
      if [ "$LEFT" -ge 60 ] && grep -q -e '"not_reached": \[$' -e '"done": false' "$SUMMARY" 2>/dev/null; then
        echo "level $LEVEL: resumed for the $LEFT s left"
        judge "$LEVEL" "$LEFT"
      fi
    done
    # the device tool brings back a limited number of files: the solutions, chunks and plots go as one archive
    (cd "$ROOT" && tar czf "$OUT/kernelbench_${CANDIDATE}_files.tgz" kernelbench_${CANDIDATE}_l* generate_l*.log 2>/dev/null) ;;
esac
