"""`tritongym solutions inductor`: torch.compile's generated code made into standalone Triton solutions.

The rewrite of Inductor's output code is tested on purpose-written output code (no compilation). The
whole path runs once, on the CPU (Inductor emits Triton for the CPU, the interpreter runs it), in a
process where pydantic, fastapi, openai and httpx cannot be imported (as on the GPU machine): the CLI
compiles a small set of problems, then ``bench --policy scripted --solutions`` judges what it wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from tritongym.problems import Problem, find_problem
from tritongym.solutions.output_code import Argument, Capture, Unsupported, render, standalone

ROOT = Path(__file__).parent.parent

KERNEL = """
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.hints import DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(size_hints={'x': 64}, filename=__file__, triton_meta={}, inductor_meta={})
@triton.jit
def triton_poi_fused_add_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:]
    tl.store(out_ptr0 + xindex, tl.load(in_ptr0 + xindex) + tl.load(in_ptr1 + xindex), xindex < xnumel)
"""

OUTPUT_CODE = f"""
# AOT ID: ['0_inference']
from ctypes import c_void_p, c_long, c_int
import torch
import os
import tempfile
from torch._inductor.hooks import run_intermediate_hooks
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels
import triton
import triton.language as tl
from torch._C import _cuda_getCurrentRawStream as get_raw_stream

aten = torch.ops.aten
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda
async_compile = AsyncCompile()
empty_strided_p2p = torch._C._distributed_c10d._SymmetricMemory.empty_strided_p2p

triton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', '''{KERNEL}''', device_str='cuda')

async_compile.wait(globals())
del async_compile

class Runner:
    def __init__(self, partitions):
        self.partitions = partitions

    def call(self, args):
        arg0_1, arg1_1 = args
        args.clear()
        assert_size_stride(arg0_1, (64, ), (1, ), 'input')
        buf0 = empty_strided_cuda((64, ), (1, ), torch.float32)
        triton_poi_fused_add_0.run(arg0_1, arg1_1, buf0, 64, stream=get_raw_stream(0))
        buf1 = empty_strided_cuda((64, ), (1, ), torch.float32)
        extern_kernels.mm(buf0, arg1_1, out=buf1)
        return (buf0, buf1)

runner = Runner(partitions=[])
call = runner.call

def get_args():
    from torch._dynamo.testing import rand_strided
    return [rand_strided((64, ), (1, ), device='cuda', dtype=torch.float32)]

def benchmark_compiled_module(args, times=10, repeat=10):
    from torch._inductor.utils import print_performance
    return print_performance(lambda: call(list(args)), times=times, repeat=repeat)

if __name__ == "__main__":
    from torch._inductor.wrapper_benchmark import compiled_module_main
    compiled_module_main('None', benchmark_compiled_module)
"""


def test_standalone_inlines_the_kernels_and_keeps_only_what_call_needs():
    text, kernels, extern = standalone(OUTPUT_CODE)
    assert (kernels, extern) == (1, 1)
    assert "@triton.jit\ndef triton_poi_fused_add_0(" in text and "async_compile" not in text
    assert "set_driver_to_gpu" not in text, "the kernel's import-time driver switch is dropped"
    for gone in ("empty_strided_p2p", "run_intermediate_hooks", "import os", "tempfile", "get_args", "__main__"):
        assert gone not in text, gone
    assert "call = runner.call" in text and "extern_kernels.mm(buf0, arg1_1, out=buf1)" in text
    assert text.count("import triton\n") == 1, "imports of the wrapper and of the kernels are merged"


def test_standalone_refuses_code_that_is_not_plain_triton():
    cpp = OUTPUT_CODE.replace("async_compile.triton(", "async_compile.cpp_pybinding(")
    with pytest.raises(Unsupported, match="non-Triton kernel"):
        standalone(cpp)
    with pytest.raises(Unsupported, match="no call"):
        standalone("import torch\nx = 1\n")
    constant = OUTPUT_CODE.replace("args.clear()", "args.clear()\n        scale = _tensor_constant0 * 2")
    with pytest.raises(Unsupported, match="does not define: _tensor_constant0"):
        standalone(constant)  # Inductor hands such constants to its module from outside the code


PROBLEM = Problem(
    "p",
    textwrap.dedent("""
    import torch

    class Model(torch.nn.Module):
        def __init__(self, n, scale=2.0):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(n))

        def forward(self, x, *rest):
            return x + self.weight

    def get_inputs():
        return [torch.randn(64)]

    def get_init_inputs():
        return [64]
    """),
)


def test_render_calls_the_graph_in_its_order_with_the_reference_signatures():
    arguments = [Argument("input", path=(1, 0), size=(64,), stride=(1,)), Argument("parameter", "weight")]
    text, _, _ = render(PROBLEM, Capture(OUTPUT_CODE, arguments, outputs=2, structure="tuple"))
    assert "def __init__(self, n, scale=2.0):" in text and "reference = Model(n, scale)" in text
    assert "def forward(self, x, *rest):" in text
    assert "call([_laid_out(rest[0][0], (64,), (1,)), self.get_parameter('weight')])" in text
    assert "return tuple(outputs[:2])" in text
    compile(text, "solution.py", "exec")


def test_render_refuses_name_clashes_too_many_arguments_and_forbidden_code():
    with pytest.raises(Unsupported, match="graph has 1 inputs"):
        render(PROBLEM, Capture(OUTPUT_CODE, [Argument("parameter", "weight")], 1, "tensor"))
    clash = Problem("q", PROBLEM.source + "\nrunner = None\n")
    arguments = [Argument("parameter", "weight"), Argument("input", path=(0,))]
    with pytest.raises(Unsupported, match="both define runner"):
        render(clash, Capture(OUTPUT_CODE, arguments, 1, "tensor"))
    imported = Problem("r", PROBLEM.source + "\nextern_kernels = 'mine'\n")  # Inductor's code imports the name
    with pytest.raises(Unsupported, match="both define extern_kernels"):
        render(imported, Capture(OUTPUT_CODE, arguments, 1, "tensor"))
    forbidden = OUTPUT_CODE.replace("args.clear()", "args.clear()\n        os.system('true')")
    with pytest.raises(Unsupported, match="static checks"):
        render(PROBLEM, Capture(forbidden, arguments, 1, "tensor"))


ORDER = """
import torch

class Model(torch.nn.Module):
    \"\"\"Graph inputs in an order no guess gives: the buffer is first used after both inputs.\"\"\"

    def __init__(self, n):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n))
        self.bias = torch.nn.Parameter(torch.randn(n))
        self.register_buffer("shift", torch.arange(n, dtype=torch.float32))

    def forward(self, x, y):
        return (torch.relu(y * self.weight + self.bias) - x) * self.shift

def get_inputs():
    return [torch.randn(4, 16), torch.randn(4, 16)]

def get_init_inputs():
    return [16]
"""

BREAK = """
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        if x.sum().item() > 0:  # data-dependent control flow: Dynamo cannot keep one graph
            return x * 2
        return x * 3

def get_inputs():
    return [torch.randn(64)]

def get_init_inputs():
    return []
"""

FAILING = """
import torch

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        raise ValueError("this reference cannot be built")

def get_inputs():
    return [torch.randn(8)]

def get_init_inputs():
    return []
"""

BLOCK_IMPORTS = """
import sys

BLOCKED = {"pydantic", "fastapi", "openai", "httpx"}


class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: the GPU machine has none)", name=name)
        return None


sys.meta_path.insert(0, Block())
"""


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """benchmarks/kernelbench_inductor.py (solutions, then a bench run replaying them) over three
    problems, in a process that cannot import pydantic, fastapi, openai or httpx (a sitecustomize blocks
    them, in its children too), as on the GPU machine."""
    root = tmp_path_factory.mktemp("inductor")
    problems, out, blocker = root / "problems", root / "out", root / "blocker"
    problems.mkdir()
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCK_IMPORTS)
    bundled = find_problem("transposed_broadcast_add")  # its input is a transposed view: call() assumes that layout
    (problems / f"{bundled.name}.py").write_text(bundled.small().source, encoding="utf-8")
    (problems / "20_order.py").write_text(ORDER)
    (problems / "21_graph_break.py").write_text(BREAK)
    env = {"PYTHONPATH": f"{blocker}:{ROOT}", "PATH": "/usr/bin:/bin", "HOME": str(root)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "kernelbench_inductor.py"), "--problems", str(problems),
         "--out", str(out), "--device", "cpu", "--jobs", "2", "--sandboxes", "1"],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done, out


def test_the_solutions_are_written_and_the_others_skipped_with_their_reason(generated):
    done, out = generated
    summary = json.loads((out / "solutions" / "summary.json").read_text())
    status = {p["problem"]: p for p in summary["problems"]}
    assert {n for n, p in status.items() if p["status"] == "written"} == {"10_transposed_broadcast_add", "20_order"}
    assert "torch.compile failed" in status["21_graph_break"]["reason"]
    assert "21_graph_break: skipped: torch.compile failed" in done.stdout
    assert status["20_order"]["kernels"] >= 1 and status["20_order"]["extern_calls"] == 0


def test_the_arguments_follow_the_graph_and_no_compilation_is_left(generated):
    _, out = generated
    text = (out / "solutions" / "20_order.py").read_text()
    # Dynamo lifts tensors as forward first touches them: the weight, y, the bias, x, then the buffer.
    expected = (  # call()'s arguments (made a list first on the CPU: their device places its buffers)
        "[self.get_parameter('weight'), _laid_out(y, (4, 16), (16, 1)), self.get_parameter('bias'), "
        "_laid_out(x, (4, 16), (16, 1)), self.get_buffer('shift')]"
    )
    assert expected in text
    for compiled in ("torch.compile(", "async_compile", "_dynamo.reset(", "torch._inductor.config"):
        assert compiled not in text


def test_the_written_solutions_are_judged_ok_without_the_service_packages(generated):
    _, out = generated
    chunks = json.loads((out / "chunks.json").read_text())["chunks"]
    # one class on the CPU: one chunk, or two where 20 compiled after the bench step's patience (a loaded machine)
    assert [c["name"] for c in chunks] in (["10,20"], ["10", "20"], ["20", "10"])
    assert all(c["done"] for c in chunks) and sum(c["candidates"] for c in chunks) == 2
    records = [
        json.loads(line)
        for c in chunks
        for line in (out / "chunks" / c["name"] / "trajectories.jsonl").read_text().splitlines()
    ]
    verdicts = {r["problem"]: r["verdict"] for r in records}
    assert verdicts == {"10_transposed_broadcast_add": "ok", "20_order": "ok"}, [
        (r["problem"], (r["result"] or {}).get("feedback")) for r in records
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdicts"] == {"ok": 2} and summary["candidates"] == 2
    # Inductor's CPU buffers come from its host-memory helper: the solutions make them on their inputs' device
    for solution in (out / "solutions").glob("*.py"):
        text = solution.read_text()
        assert "_empty_strided_cpu" not in text and "with torch.no_grad(), torch.device(device):" in text
    assert summary["ok_without_speedup"] == []  # not timed on the CPU: nothing to list
    assert [s["problem"] for s in summary["generation"]["skipped"]] == ["21_graph_break"]
    assert summary["cost"]["per_candidate_s"] > 0 and "correctness" in summary["cost"]["stage_mean_s"]
    assert "| ok | 2 |" in (out / "report.md").read_text() and summary["not_reached"] == []
    per_chunk = [json.loads((out / "chunks" / c["name"] / "summary.json").read_text())["verdicts"] for c in chunks]
    assert sum(v.get("ok", 0) for v in per_chunk) == 2 and all(set(v) == {"ok"} for v in per_chunk)


def test_the_cli_prints_a_line_per_problem_and_exits_1_when_some_were_skipped(tmp_path):
    from typer.testing import CliRunner

    from tritongym.cli import app

    (tmp_path / "22_failing.py").write_text(FAILING)
    runner = CliRunner()
    result = runner.invoke(app, ["solutions", "inductor", str(tmp_path / "22_failing.py"), "--out",
                                 str(tmp_path / "out"), "--device", "cpu", "--jobs", "1"])  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "22_failing: skipped: the reference fails to build" in " ".join(result.output.split())
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["skipped"] == 1
    bad = runner.invoke(app, ["solutions", "inductor", "bundled", "--out", str(tmp_path), "--ids", "x"])
    assert bad.exit_code == 2 and "--ids" in bad.output
    gpu = runner.invoke(app, ["solutions", "inductor", "bundled", "--out", str(tmp_path), "--device", "gpu"])
    assert gpu.exit_code == 2 and "--device must be auto, cuda or cpu, not 'gpu'" in " ".join(gpu.output.split())


def test_cuda_without_a_gpu_is_a_usage_error(tmp_path, monkeypatch):
    import torch
    from typer.testing import CliRunner

    from tritongym.cli import app

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    result = CliRunner().invoke(app, ["solutions", "inductor", "bundled", "--out", str(tmp_path), "--device", "cuda"])
    assert result.exit_code == 2 and "no CUDA device is visible" in " ".join(result.output.split())


def test_the_launch_monitor_sees_inductor_launches_once_and_blocks_them(monkeypatch, tmp_path):
    """Inductor's CachingAutotuner.run launches through a launcher of its own (on a GPU) or through its
    kernel's run (under the interpreter): either way one own launch, blocked in the fallback check."""
    import torch
    from triton.runtime.interpreter import InterpretedFunction

    from tritongym.evaluate import guards
    from tritongym.evaluate.guards import INDUCTOR_LAUNCHER, LaunchBlocked, LaunchMonitor

    monkeypatch.setattr(guards, "INTERPRETED", False)  # as on a GPU; the interpreter's case below
    ran = []
    monkeypatch.setattr(InterpretedFunction, "run", lambda self, *args, **kwargs: ran.append(args))

    Kernel = InterpretedFunction  # exactly Triton's class: a subclass's methods would be the candidate's

    class CachingAutotuner:
        def __init__(self, fn, interpret=False):
            self.fn, self.interpret = fn, interpret

        def run(self, *args, stream=0):
            if self.interpret:
                return self.fn.run(*args)
            ran.append(("launcher", *args))  # a GPU: Inductor's own launcher, JITFunction.run is never called

    launcher = types.ModuleType(INDUCTOR_LAUNCHER)  # Inductor's module as a runner finds it: in the library
    launcher.__file__ = os.path.join(os.path.dirname(torch.__file__), "_inductor", "runtime", "triton_heuristics.py")
    CachingAutotuner.__module__, CachingAutotuner.__qualname__ = INDUCTOR_LAUNCHER, "CachingAutotuner"
    launcher.CachingAutotuner = CachingAutotuner
    monkeypatch.setitem(sys.modules, INDUCTOR_LAUNCHER, launcher)
    candidate = tmp_path / "candidate.py"
    candidate.write_text("def kernel(x):\n    pass\n")  # Triton's frontend reads an interpreted kernel's source
    namespace: dict = {}
    exec(compile(candidate.read_text(), str(candidate), "exec"), namespace)
    own, foreign = CachingAutotuner(Kernel(namespace["kernel"])), CachingAutotuner(Kernel(lambda x: None))
    interpreted = CachingAutotuner(own.fn, interpret=True)
    original = CachingAutotuner.__dict__["run"]
    with LaunchMonitor(str(candidate)) as monitor:
        own.run(1, stream=0)
        foreign.run(2, stream=0)
        interpreted.run(3, stream=0)  # through the kernel's own run: still one launch
        own.fn.run(4)  # the kernel launched directly
    assert monitor.launches == 3 and ran == [("launcher", 1), ("launcher", 2), (3,), (4,)]
    with pytest.raises(LaunchBlocked), LaunchMonitor(str(candidate), block=True):
        own.run(5, stream=0)
    assert ran[-1] == (4,), "a blocked launch does not run"
    assert CachingAutotuner.__dict__["run"] is original, "the launcher is restored"
    monkeypatch.setattr(guards, "INTERPRETED", True)  # the launcher's own run is not counted, its kernel's is
    # an own interpreted launch runs the source the frontend checked (frontend.run), not the class's run
    monkeypatch.setattr(guards.frontend, "run", lambda kernel, args, kwargs: ran.append(args))
    with LaunchMonitor(str(candidate)) as monitor:
        own.run(6, stream=0)  # a launcher that never reaches a kernel: no launch
        interpreted.run(7, stream=0)
    assert monitor.launches == 1 and ran[-2:] == [("launcher", 6), (7,)]


def test_generate_resumes_from_its_summary_without_compiling_again(tmp_path):
    from tritongym.solutions.inductor import Outcome, generate

    known = Outcome("p", "skipped", "torch.compile failed: a graph break")
    (tmp_path / "summary.json").write_text(json.dumps({"problems": [known.__dict__]}))
    seen = []
    (outcome,) = generate([PROBLEM], tmp_path, "cpu", resume=True, on_done=seen.append)
    assert outcome == known and seen == [known]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["problems_total"] == 1 and summary["skipped"] == 1


def test_the_cli_stops_on_ctrl_c_with_what_is_done_and_resume_compiles_the_rest(tmp_path, monkeypatch):
    """Ctrl-C keeps the summary of the problems done and says how to go on (exit 130); --resume then
    compiles only the others, and the summary ends with every problem."""
    from typer.testing import CliRunner

    from tritongym.cli import app
    from tritongym.solutions import inductor
    from tritongym.solutions.inductor import Outcome

    compiled = []

    def fake_child(problem, device, out, timeout_s, cache):
        if len(compiled) == 2 and interrupt:
            raise KeyboardInterrupt  # as a terminal's Ctrl-C reaches the command while compiling
        compiled.append(problem.name)
        return Outcome(problem.name, "skipped", "not compiled in this test")

    monkeypatch.setattr(inductor, "_run_child", fake_child)
    runner = CliRunner()
    args = [
        "solutions",
        "inductor",
        "bundled",
        "--ids",
        "1-4",
        "--out",
        str(tmp_path),
        "--device",
        "cpu",
        "--jobs",
        "1",
    ]
    interrupt = True
    stopped = runner.invoke(app, args)
    said = " ".join(stopped.output.split())
    assert stopped.exit_code == 130, stopped.output
    assert (
        f"interrupted: 2 of 4 problems done, recorded in {tmp_path / 'summary.json'}; the same command with --resume"
        in said
    )
    first = list(compiled)
    interrupt, compiled[:] = False, []
    resumed = runner.invoke(app, [*args, "--resume"])
    assert resumed.exit_code == 1, resumed.output  # every problem skipped by the fake compilation
    assert len(compiled) == 2 and not set(compiled) & set(first)
    assert len(json.loads((tmp_path / "summary.json").read_text())["problems"]) == 4


def test_bench_solutions_replace_the_known_ones_and_say_what_is_missing(tmp_path, caplog):
    from tritongym.bench.run import BenchConfig, run_bench, with_solutions
    from tritongym.errors import ConfigError

    problems = [find_problem("vector_add"), find_problem("silu")]
    (tmp_path / "01_vector_add.py").write_text("# mine\n")
    with caplog.at_level("WARNING"):
        (kept,) = with_solutions(problems, tmp_path)
    assert kept.name == "01_vector_add" and kept.solution == "# mine\n"
    assert "02_silu" in caplog.text
    with pytest.raises(ConfigError, match="no such directory"):
        with_solutions(problems, tmp_path / "missing")
    with pytest.raises(ConfigError, match=r"no <problem name>\.py file"):
        with_solutions(problems[1:], tmp_path)
    with pytest.raises(ConfigError, match="--policy scripted"):
        run_bench(BenchConfig(policy="openai", model="m", solutions=str(tmp_path)), tmp_path / "run")


def test_constant_tensors_are_written_into_the_solution_when_small():
    import torch

    from tritongym.solutions.inductor import MAX_CONSTANT_ELEMENTS, _constant_expression
    from tritongym.solutions.output_code import _with_constants

    value = torch.tensor([[1.5, -2.0], [3.0, 0.25]])
    expression = _constant_expression(value, "cpu")
    assert torch.equal(eval(expression, {"torch": torch}), value)
    assert _constant_expression(torch.tensor([1.0, float("inf")]), "cpu") is None
    assert _constant_expression(torch.zeros(MAX_CONSTANT_ELEMENTS + 1), "cpu") is None
    code = "import torch\n_tensor_constant0 = None  # 3f2a\nx = 1\n"
    assert f"_tensor_constant0 = {expression}\n" in _with_constants(code, {"_tensor_constant0": expression})
    with pytest.raises(Unsupported, match="too large"):
        _with_constants(code, {"_tensor_constant0": None})


def test_compilations_wait_for_gpu_memory_by_their_inputs_estimate():
    import threading
    import time

    from tritongym.solutions.inductor import CHILD_OVERHEAD_BYTES, _DeviceMemory

    memory = _DeviceMemory("cpu")
    assert memory.budget is None and memory.run(PROBLEM, lambda: "ran") == "ran"
    assert _DeviceMemory.footprint(PROBLEM) == 4 * 64 + CHILD_OVERHEAD_BYTES
    memory.budget = 2 * _DeviceMemory.footprint(PROBLEM)  # room for two compilations at once
    running, most = [0], [0]
    lock = threading.Lock()

    def work():
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1

    threads = [threading.Thread(target=memory.run, args=(PROBLEM, work)) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 2 and memory.held == 0


def test_the_lazy_candidates_of_the_at_scale_check_are_the_problems_own_code_and_judged_ok(tmp_path):
    """--candidate lazy: the problem's own forward plus one trivial Triton launch, correct by
    construction (a module with parameters keeps its weights: ModelNew subclasses Model)."""
    problems, out = tmp_path / "problems", tmp_path / "out"
    problems.mkdir()
    for name in ("linear_relu", "softmax"):
        bundled = find_problem(name)
        (problems / f"{bundled.name}.py").write_text(bundled.small().source, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "kernelbench_inductor.py"), "--problems", str(problems),
         "--out", str(out), "--device", "cpu", "--sandboxes", "1", "--candidate", "lazy"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    written = sorted(p.name for p in (out / "solutions").glob("*.py"))
    assert len(written) == 2
    source = (out / "solutions" / written[0]).read_text()
    assert "class ModelNew(Model):" in source and "lazy_touch_kernel[(1,)](touch)" in source
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdicts"] == {"ok": 2}, summary["not_ok"]
    assert summary["settings"]["candidate"] == "lazy"
    assert "# Lazy candidates of" in (out / "report.md").read_text()


def test_the_at_scale_summary_lists_the_ok_candidates_whose_timing_was_not_trusted(tmp_path):
    """An honest candidate without a speedup loses its reward's speed term: the sweep's report names
    each one with the judge's reason (which of its workloads ran slow), not only the verdict counts."""
    import importlib.util

    path = ROOT / "benchmarks" / "kernelbench_inductor.py"
    spec = importlib.util.spec_from_file_location("kernelbench_inductor", path)
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    untrusted = {"check": "timing_untrusted", "message": "no speedup: ... (slow: end probe x12)"}
    results = {"1_MLP": {"speedup": None, "findings": [untrusted]}, "2_timed": {"speedup": 0.99, "findings": []},
               "3_cpu": {"speedup": None, "findings": []}}  # fmt: skip
    rows = [{"problem": p, "sample": 0, "turn": 0, "verdict": "ok", "result": r} for p, r in results.items()]
    (tmp_path / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = check.summarize(tmp_path / "none", tmp_path, 1.0, 3.0)
    assert summary["ok_without_speedup"] == [{"problem": "1_MLP", "why": untrusted["message"]}]
    assert "- 1_MLP: no speedup: ... (slow: end probe x12)" in check.report(summary, "t", "eager")


def _check_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "kernelbench_inductor", ROOT / "benchmarks" / "kernelbench_inductor.py"
    )
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    return check


def test_judges_per_gpu_keep_a_large_problems_answers_on_the_gpu():
    """A 4 GiB problem with four judges on an H200 would send its answers through host copies (its
    input set and output over the eighth of a quarter of the GPU) and take the GPU alone anyway: it
    gets two judges, a 6 GiB one (output as large) one, a small one the most asked for."""
    check = _check_module()
    gib, h200 = 1 << 30, 143_771_000_000
    assert check.judges_per_gpu(gib // 4, h200, 4) == 4
    assert check.judges_per_gpu(4 * gib, h200, 4) == 2
    assert check.judges_per_gpu(6 * gib, h200, 4) == 1
    assert check.judges_per_gpu(16 * gib, h200, 4) == 1
    assert check.judges_per_gpu(gib // 4, h200, 2) == 2
    assert check.judges_per_gpu(gib // 4, 8 * gib, 4) == 2  # a small GPU: a quarter would not hold the job
    assert check.judges_per_gpu(2 * gib, 8 * gib, 4) == 1
    # a convolution whose output is eight times its 1 GiB input: its judge holds the GPU alone
    assert check.judges_per_gpu(gib, h200, 4, output_bytes=8 * gib) == 1
    assert check.judges_per_gpu(4 * gib, h200, 4, output_bytes=gib // 64) == 4  # a reduction: small answers


def test_the_classes_follow_the_sizes_the_generation_measured():
    check = _check_module()
    gib, h200 = 1 << 30, 143_771_000_000
    order = [("63_conv", 4), ("5_scale", 2), ("40_norm", 4)]
    rows = {"63_conv": {"status": "written", "input_bytes": gib, "output_bytes": 8 * gib, "param_bytes": 0},
            "5_scale": {"status": "written"}}  # fmt: skip
    assert check.sized_order(order, rows, h200, 4) == [("63_conv", 1), ("5_scale", 2), ("40_norm", 4)]
    assert check.sized_order(order, rows, None, 4) == order


def test_the_order_puts_the_problems_sharing_the_gpu_first_then_by_number():
    check = _check_module()
    big = "import torch\nN = 1024 * 1024 * 1024\ndef get_inputs():\n    return [torch.randn(N)]\n"
    small = "import torch\ndef get_inputs():\n    return [torch.randn(64)]\n"
    problems = [types.SimpleNamespace(name=n, source=s) for n, s in
                (("3_big", big), ("10_small", small), ("2_small", small), ("1_big", big))]  # fmt: skip
    assert check.plan_order(problems, 143_771_000_000, 4) == [("2_small", 4), ("10_small", 4), ("1_big", 2),
                                                               ("3_big", 2)]  # fmt: skip
    assert check.plan_order(problems, None, 3) == [("1_big", 3), ("2_small", 3), ("3_big", 3), ("10_small", 3)]


def test_the_next_chunk_takes_ready_solutions_of_one_class_and_waits_for_more_only_while_patient():
    check = _check_module()
    order = [("1_a", 4), ("2_b", 4), ("3_c", 4), ("4_d", 1), ("5_e", 1)]
    written = {"1_a": "written", "2_b": "skipped", "3_c": "written", "4_d": "written"}
    assert check.next_chunk(order, written, set(), 5, final=False, patient=True) == ("run", ["1_a", "3_c"], 4)
    assert check.next_chunk(order, written, set(), 1, final=False, patient=True) == ("run", ["1_a"], 4)
    assert check.next_chunk(order, {"1_a": "written"}, set(), 5, final=False, patient=True) == ("wait", [], 0)
    assert check.next_chunk(order, {"1_a": "written"}, set(), 5, final=False, patient=False) == ("run", ["1_a"], 4)
    taken = {"1_a", "3_c"}  # the next class: 5_e still compiling, 4_d ready
    assert check.next_chunk(order, written, taken, 5, final=False, patient=True) == ("wait", [], 0)
    assert check.next_chunk(order, written, taken, 5, final=True, patient=True) == ("run", ["4_d"], 1)
    assert check.next_chunk(order, written, taken | {"4_d"}, 5, final=True, patient=True) == ("done", [], 0)
    assert check.chunk_name(["30_x", "19_a", "21_c", "20_b"]) == "19-21,30"
    # the pool in hand keeps its class while it has a problem ready (a pool of another size restarts)
    order = [("1_a", 1), ("2_b", 2), ("3_c", 1), ("4_d", 2)]
    written = dict.fromkeys(("1_a", "2_b", "3_c", "4_d"), "written")
    assert check.next_chunk(order, written, set(), 5, final=True, patient=True) == ("run", ["1_a", "3_c"], 1)
    assert check.next_chunk(order, written, set(), 5, True, True, current=2) == ("run", ["2_b", "4_d"], 2)
    assert check.next_chunk(order, written, {"2_b", "4_d"}, 5, True, True, current=2) == ("run", ["1_a", "3_c"], 1)


def test_a_chunk_that_would_not_end_by_the_deadline_is_not_started_and_the_same_command_resumes(tmp_path):
    """--deadline: with a cost per candidate that leaves no room, no chunk starts and the report names
    what was not reached; the same command with room judges them (its generation not run again)."""
    problems, out = tmp_path / "problems", tmp_path / "out"
    problems.mkdir()
    for name in ("linear_relu", "softmax"):
        bundled = find_problem(name)
        (problems / f"{bundled.name}.py").write_text(bundled.small().source, encoding="utf-8")
    command = [sys.executable, str(ROOT / "benchmarks" / "kernelbench_inductor.py"), "--problems", str(problems),
               "--out", str(out), "--device", "cpu", "--sandboxes", "1", "--candidate", "lazy",
               "--deadline", "120"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([*command, "--cost-guess", "1e6"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "out of time: no chunk started" in done.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["candidates"] == 0 and len(summary["not_reached"]) == 2 and summary["chunks"] == []
    assert "Not reached (out of time; the same command resumes)" in (out / "report.md").read_text()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdicts"] == {"ok": 2} and summary["not_reached"] == []
    assert "--step generate" not in done.stdout  # the generation was complete: not run again


def test_a_check_moved_elsewhere_resumes_its_unfinished_chunk(tmp_path):
    """An earlier call's archive extracted under another directory: the unfinished chunk's bench run
    recorded the old solutions path; the check resumes it instead of refusing other settings."""
    problems, first, moved = tmp_path / "problems", tmp_path / "first", tmp_path / "elsewhere" / "out"
    problems.mkdir()
    bundled = find_problem("softmax")
    (problems / f"{bundled.name}.py").write_text(bundled.small().source, encoding="utf-8")
    command = [sys.executable, str(ROOT / "benchmarks" / "kernelbench_inductor.py"), "--problems", str(problems),
               "--device", "cpu", "--sandboxes", "1", "--candidate", "lazy", "--deadline", "120"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([*command, "--out", str(first)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    state = json.loads((first / "chunks.json").read_text())
    state["chunks"][0]["done"] = False  # as a stop in its middle leaves it
    (first / "chunks.json").write_text(json.dumps(state))
    moved.parent.mkdir()
    first.rename(moved)
    done = subprocess.run([*command, "--out", str(moved)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and "other settings" not in done.stderr, done.stderr[-3000:]
    assert json.loads((moved / "summary.json").read_text())["verdicts"] == {"ok": 1}
    assert json.loads((moved / "chunks.json").read_text())["chunks"][0]["done"]


def test_rejudge_takes_the_problems_of_a_verdict_out_of_their_finished_chunks_and_judges_them_again(tmp_path):
    """--rejudge timeout: after a fix of the judge's, its timeouts are judged again, in a chunk of
    their own (a directory of its own even where the name is taken), and the level's summary counts
    the new verdict; the others are not judged again."""
    problems, out = tmp_path / "problems", tmp_path / "out"
    problems.mkdir()
    for name in ("linear_relu", "softmax"):
        bundled = find_problem(name)
        (problems / f"{bundled.name}.py").write_text(bundled.small().source, encoding="utf-8")
    command = [sys.executable, str(ROOT / "benchmarks" / "kernelbench_inductor.py"), "--problems", str(problems),
               "--out", str(out), "--device", "cpu", "--sandboxes", "1", "--candidate", "lazy", "--chunk", "1",
               "--deadline", "120"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    first = json.loads((out / "chunks.json").read_text())["chunks"]
    assert len(first) == 2 and all(c["done"] for c in first)
    trajectories = out / "chunks" / first[1]["name"] / "trajectories.jsonl"
    row = json.loads(trajectories.read_text().splitlines()[0])
    trajectories.write_text(json.dumps(row | {"verdict": "timeout"}) + "\n")  # as a timeout of the judge's left it
    done = subprocess.run([*command, "--rejudge", "timeout"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert f"judged again: {row['problem']}" in done.stdout
    chunks = json.loads((out / "chunks.json").read_text())["chunks"]
    assert [c["name"] for c in chunks] == [first[0]["name"], first[1]["name"], first[1]["name"] + "_2"]
    assert chunks[1]["problems"] == [] and chunks[2]["problems"] == [row["problem"]]
    assert json.loads((out / "summary.json").read_text())["verdicts"] == {"ok": 2}


def _gpu_run_kernelbench(
    tmp_path: Path, levels: str, ids: str, **env: str
) -> tuple[subprocess.CompletedProcess, list[list[str]]]:
    """``gpu_run.sh kernelbench LEVELS IDS`` with a ``python3`` that only records its arguments: the
    steps the stage starts, without a GPU."""
    fake = tmp_path / "bin"
    fake.mkdir()
    calls = tmp_path / "calls.jsonl"
    (fake / "python3").write_text(
        textwrap.dedent(f"""\
            #!{sys.executable}
            import json, os, pathlib, sys
            open({str(calls)!r}, "a").write(json.dumps(sys.argv[1:]) + "\\n")
            if "--out" in sys.argv and "--step" not in sys.argv:  # a level's summary, as the check writes it
                out = pathlib.Path(sys.argv[sys.argv.index("--out") + 1])
                out.mkdir(parents=True, exist_ok=True)
                (out / "summary.json").write_text(os.environ.get("FAKE_SUMMARY", "{{}}"))
                (out / "report.md").write_text("")
            """)
    )
    (fake / "python3").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{fake}:{os.environ['PATH']}",
        "OUT": str(tmp_path / "out"),
        "KB_SECONDS": "200",
    } | env
    done = subprocess.run(["bash", str(ROOT / "benchmarks/gpu_run.sh"), "kernelbench", levels, ids],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    rows = [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []
    return done, [r for r in rows if r and r[0].endswith("kernelbench_inductor.py")]


def _ids_by_level(steps: list[list[str]]) -> dict[tuple[str, str], str | None]:
    """(level directory, step) -> the --ids it was given (None: all of the level)."""
    found = {}
    for argv in steps:
        step = argv[argv.index("--step") + 1] if "--step" in argv else "bench"
        ids = argv[argv.index("--ids") + 1] if "--ids" in argv else None
        found[(Path(argv[argv.index("--problems") + 1]).name, step)] = ids
    return found


def test_gpu_run_kernelbench_takes_one_ids_list_per_level_split_by_slash(tmp_path):
    done, steps = _gpu_run_kernelbench(tmp_path, "1,3", "19-32,45/16,29-32")
    assert done.returncode == 0, done.stderr
    assert _ids_by_level(steps) == {
        ("level3", "generate"): "16,29-32",
        ("level1", "bench"): "19-32,45",
        ("level3", "bench"): "16,29-32",
    }
    outs = {Path(a[a.index("--out") + 1]).name for a in steps}
    assert outs == {"kernelbench_inductor_l1_19-32,45", "kernelbench_inductor_l3_16,29-32"}


def test_gpu_run_kernelbench_keeps_one_list_for_every_level_and_an_empty_list_means_all(tmp_path):
    done, steps = _gpu_run_kernelbench(tmp_path, "1,3", "5-7")
    assert done.returncode == 0, done.stderr
    assert set(_ids_by_level(steps).values()) == {"5-7"}
    (tmp_path / "empty").mkdir()
    done, steps = _gpu_run_kernelbench(tmp_path / "empty", "1,3", "5-7/")
    assert done.returncode == 0, done.stderr
    assert _ids_by_level(steps) == {("level3", "generate"): None, ("level1", "bench"): "5-7", ("level3", "bench"): None}


def test_gpu_run_kernelbench_refuses_as_many_lists_as_levels_not(tmp_path):
    done, steps = _gpu_run_kernelbench(tmp_path, "1,3", "1/2/3")
    assert done.returncode == 2 and "3 lists split by / for 2 levels" in done.stderr
    assert steps == []


def test_gpu_run_kernelbench_resumes_a_capped_level_with_the_time_the_later_ones_left(tmp_path):
    """Session 11's second call capped level 1 at 200 s, which stopped it before 38 and 39, and level 3
    then left 100 s unused: a capped level whose summary has problems not reached (or a chunk not
    done) is judged again for the time left, without judging its rejudged verdicts once more; one
    that finished is not."""
    stopped = '{\n  "not_reached": [\n    "38_L1Norm_"\n  ],\n  "chunks": []\n}'
    done, steps = _gpu_run_kernelbench(tmp_path, "1:100,3", "38-39/16", FAKE_SUMMARY=stopped, KB_REJUDGE="mismatch")
    assert done.returncode == 0, done.stderr
    benches = [(Path(a[a.index("--problems") + 1]).name, "--rejudge" in a) for a in steps if "--step" not in a]
    assert benches == [("level1", True), ("level3", True), ("level1", False)]
    assert "level 1: resumed" in done.stdout
    (tmp_path / "finished").mkdir()
    finished = '{\n  "not_reached": [],\n  "chunks": [\n    {\n      "done": true\n    }\n  ]\n}'
    done, steps = _gpu_run_kernelbench(tmp_path / "finished", "1:100,3", "38-39/16", FAKE_SUMMARY=finished)
    assert done.returncode == 0, done.stderr
    assert [Path(a[a.index("--problems") + 1]).name for a in steps if "--step" not in a] == ["level1", "level3"]
