"""The evaluation table: tabulation through the real environment (Triton's interpreter on the CPU),
resumed where it stopped, and the Env that answers from it."""

import json
import time

import pytest

from helpers import DEVICE
from tritongym.design import Design, FusionSpec, render, spec_problem
from tritongym.design.table import Table, TableEnv, TableMiss, content_key, distinct, eval_meta, tabulate
from tritongym.errors import ConfigError
from tritongym.evaluate import EvalConfig

ELTWISE = FusionSpec("e", "eltwise", ("silu",), "", {"rows": 3, "cols": 50}, {"rows": 3, "cols": 50})
SUM = FusionSpec("r", "reduce", (), "sum", {"rows": 3, "cols": 300}, {"rows": 3, "cols": 300})
DESIGNS = ["strategy:fused layout:row block:64 warps:4 stages:1 vec:1",
           "strategy:fallback layout:row block:64 warps:4 stages:1 vec:1",
           "strategy:alias layout:row block:64 warps:4 stages:1 vec:1"]  # fmt: skip
CONFIG = EvalConfig(device=DEVICE, trials=1)


def renderings():
    return distinct(
        (spec_problem(spec), d, render(Design.from_tokens(d.split()), spec)) for spec in (ELTWISE, SUM) for d in DESIGNS
    )


class Counting:
    """An Env that counts what it is asked to evaluate."""

    def __init__(self, env):
        self.env, self.submitted = env, 0

    def submit(self, *args, **kwargs):
        self.submitted += 1
        return self.env.submit(*args, **kwargs)


def test_tabulation_resumes_and_the_table_answers_like_the_environment(design_env, tmp_path):
    items = renderings()
    assert len(items) == 6
    path = tmp_path / "table.jsonl"
    table = Table.read(path)
    table.start(eval_meta(CONFIG))
    env = Counting(design_env)
    # a deadline already passed: nothing is submitted, everything is still missing
    assert tabulate(env, items, table, CONFIG, deadline=time.monotonic() - 1) == 6 and env.submitted == 0
    assert tabulate(env, items[:2], table, CONFIG) == 0 and env.submitted == 2
    # a second call (a fresh read of the file, as on another machine) continues where the first stopped
    table = Table.read(path)
    assert len(table.rows) == 2
    assert tabulate(env, items, table, CONFIG, in_flight=2) == 0 and env.submitted == 6
    assert tabulate(env, items, Table.read(path), CONFIG) == 0 and env.submitted == 6
    verdicts = {(r.problem.name, r.designs[0].split()[0]): Table.read(path).result(r.key).verdict.value for r in items}
    assert verdicts[("e", "strategy:fused")] == "ok" and verdicts[("r", "strategy:fused")] == "ok"
    assert verdicts[("e", "strategy:fallback")] == "hack_fallback"
    assert verdicts[("r", "strategy:alias")] == "hack_output_alias"
    table_env = TableEnv(Table.read(path))
    result = table_env.submit(items[0].problem, items[0].source).result()
    assert result.verdict.value == verdicts[(items[0].problem.name, items[0].designs[0].split()[0])]
    assert table_env.lookups == 1


def test_table_file_rules(tmp_path):
    from tritongym.evaluate import EvalResult, Verdict
    from tritongym.evaluate.result import Finding, KernelShare
    from tritongym.rewards.outcome import reward_coverage

    path = tmp_path / "t.jsonl"
    table = Table.read(path)
    table.start(eval_meta(CONFIG))
    (item,) = renderings()[:1]
    kernels = [KernelShare(name="k", launches=1, time_us=1.0, share=0.9, own=True)]
    result = EvalResult(problem="e", verdict=Verdict.OK, feedback="", correct=True, coverage=0.9, kernels=kernels)
    result.findings = [Finding("torch_compute", "add x5"), Finding("sizes", "one size")]
    table.append(item, result)
    with path.open("a") as fh:
        fh.write('{"key": "cut sh')  # an interrupted write
    again = Table.read(path)
    assert list(again.rows) == [item.key] and again.eval_config() == CONFIG
    with pytest.raises(ConfigError, match="another evaluation config"):
        again.start(eval_meta(EvalConfig(device=DEVICE, trials=3)))
    weakened = TableEnv(again, weaken=["coverage"]).answer(item.problem, item.source)
    assert weakened.coverage is None and weakened.kernels == [] and weakened.correct
    # without coverage the rewards read laziness from the findings: the weakened guard removes those too
    assert [f.check for f in weakened.findings] == ["sizes"] and reward_coverage(weakened.to_dict()) == 1.0
    assert TableEnv(again).answer(item.problem, item.source).coverage == 0.9
    with pytest.raises(TableMiss, match="no evaluation of this program"):
        TableEnv(again).answer(item.problem, item.source + "\n")
    with pytest.raises(ConfigError, match="cannot weaken"):
        TableEnv(again, weaken=["fallback"])
    assert content_key(item.problem, item.source) == item.key != content_key(spec_problem(SUM), item.source)
    lines = path.read_text().splitlines()
    lines.insert(1, "not json")
    path.write_text("\n".join(lines))
    with pytest.raises(ConfigError, match="not a JSON line"):
        Table.read(path)
    assert json.loads(lines[0])["meta"]["eval"]["trials"] == 1


class Flaky:
    """An Env whose evaluations of sources containing 'fallback' are lost (infrastructure errors)."""

    def __init__(self):
        self.submitted = []

    def submit(self, problem, candidate, config=None, **kwargs):
        from concurrent.futures import Future

        from tritongym.evaluate import EvalResult, Verdict

        self.submitted.append(candidate)
        lost = "except" in candidate  # the fallback rendering wraps its kernel in try/except
        verdict = Verdict.INFRASTRUCTURE_ERROR if lost else Verdict.OK
        future = Future()
        future.set_result(EvalResult(problem=problem.name, verdict=verdict, feedback="lost" if lost else "",
                                     correct=not lost))  # fmt: skip
        return future


def test_infrastructure_errors_are_retried_once_then_kept_until_asked_again(tmp_path):
    items = renderings()
    table = Table.read(tmp_path / "t.jsonl")
    table.start(eval_meta(CONFIG))
    env = Flaky()
    assert tabulate(env, items, table, CONFIG) == 0
    assert len(env.submitted) == 6 + 2  # the two fallback renderings once more
    unjudged = [r for r in items if Table.read(tmp_path / "t.jsonl").unjudged(r.key)]
    assert len(unjudged) == 2 and all("fallback" in r.designs[0] for r in unjudged)
    assert tabulate(env, items, Table.read(tmp_path / "t.jsonl"), CONFIG) == 0 and len(env.submitted) == 8
    again = Table.read(tmp_path / "t.jsonl")
    assert tabulate(env, items, again, CONFIG, retry_infrastructure=True) == 0 and len(env.submitted) == 12
    assert TableEnv(again).answer(unjudged[0].problem, unjudged[0].source).verdict.value == "infrastructure_error"
