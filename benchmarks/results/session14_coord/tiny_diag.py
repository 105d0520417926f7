"""Session 14: few-microsecond honest kernels (candidate_noise on every repetition in session 13): their
timing's diagnostics (batch length, hand-offs, what was subtracted), then A/A candidates (the reference plus
a one-element Triton launch) on the same problems, against their in-process ratio."""

import json
import sys

sys.path.insert(0, "tests")
sys.path.insert(0, "benchmarks")
from test_honest_candidates import HONEST, _header, _problem
from timing_aa import aa_source, in_process

from tritongym.env import LocalEnv, PoolConfig, Task
from tritongym.evaluate import EvalConfig

names = (
    sys.argv[1].split(",")
    if len(sys.argv) > 1
    else ["constexpr_dtype", "kb_gelu_tanh", "libdevice_math", "libdevice_attribute_chain"]
)
budget = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
aa = len(sys.argv) > 3 and sys.argv[3] == "aa"


def show(tag, r):
    t = r.timing
    d = {"name": tag, "verdict": str(r.verdict), "speedup": r.speedup, "findings": [f.check for f in r.findings]}
    if t:
        d |= {
            k: getattr(t, k)
            for k in (
                "reps",
                "invalid_reps",
                "input_sets",
                "hand_off_us",
                "runner_hand_off_us",
                "clean_hand_off_us",
                "subtracted_us",
                "late_brackets",
                "stopped",
                "candidate_ms",
                "reference_ms",
            )
        }
    d |= {k: r.stage_seconds.get(k) for k in ("timing_grown", "timing_untimed_reps", "timing_measured_reps", "timing")}
    if r.verdict.value != "ok" or r.speedup is None:
        d["feedback"] = r.feedback[:300]
    print(json.dumps(d, default=str), flush=True)


problems = {}
with LocalEnv(PoolConfig(devices="cuda", sandboxes_per_device=1)) as env:
    for name in names:
        source = (HONEST / f"{name}.py").read_text()
        problem = _problem(_header(source, "problem"))
        problems[problem.name] = problem
        r = env.evaluate_batch([Task(problem, source, name)], EvalConfig(device="cuda", timing_budget_s=budget))[0]
        show(name, r)
    if aa:
        for problem in problems.values():
            r = env.evaluate_batch(
                [Task(problem, aa_source(problem), "aa")], EvalConfig(device="cuda", timing_budget_s=budget)
            )[0]
            show(f"aa:{problem.name}", r)
            if r.speedup:
                own = in_process(problem)
                print(
                    json.dumps(
                        {
                            "aa": problem.name,
                            "in_process": own,
                            "ratio": r.speedup * own["candidate_us"] / own["reference_us"],
                        }
                    ),
                    flush=True,
                )
