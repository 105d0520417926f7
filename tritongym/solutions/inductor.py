"""Triton solutions from torch.compile: Inductor's generated code made into a standalone ``ModelNew``.

For one problem (:func:`capture`, run in a child process of its own): the reference ``Model`` is built
with its init inputs, its forward is compiled by ``torch.compile`` (Inductor, one graph:
``fullgraph=True``, static shapes) on the problem's inputs, and Inductor's output code is captured
when it is written (``GraphLowering.save_output_code``). Compilation stops there: the kernels are
never compiled or run, so no Triton driver is needed (on the CPU, ``cpu_backend = "triton"`` makes
Inductor emit Triton for the CPU; the hash of a missing driver is stubbed).

The order of ``call(args)``'s arguments is read from the graphs, not guessed: Inductor's graph has one
placeholder per argument of the graph AOT autograd was given, which is the graph module's own
parameters and buffers, then Dynamo's example inputs; each of those is matched *by identity* to a
parameter, buffer or plain tensor attribute of the model, or to a tensor of the forward's inputs,
and its shape checked against the placeholder's.

tritongym/solutions/output_code.py then makes the solution file from the capture (``render``):
the reference source, Inductor's code made standalone, and ``ModelNew``.

:func:`generate` runs one child process per problem (``python -m tritongym.solutions.inductor``),
``jobs`` at once, and writes ``<out>/<problem name>.py`` for each problem it could make, with a
summary (``summary.json``); a problem Inductor cannot compile as one graph, or whose code is not
plain Triton, is skipped with its reason. Problems that ran out of memory beside others are retried
alone.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from tritongym.errors import TritonGymError
from tritongym.problems import Problem
from tritongym.solutions.output_code import Argument, Capture, Unsupported, call_order, render, standalone

log = logging.getLogger(__name__)

SUMMARY = "summary.json"
CHILD_TIMEOUT_S = 600.0
"""Longest a problem's compilation may take before it is skipped."""


@dataclass
class Outcome:
    """What became of one problem."""

    problem: str
    status: str
    """``written`` or ``skipped``."""
    reason: str = ""
    """Why it was skipped."""
    kernels: int = 0
    """Triton kernels in the solution."""
    extern_calls: int = 0
    """Library calls (``extern_kernels.*``, aten fallbacks) left in ``call``."""
    bytes: int = 0
    """Size of the solution file (the environment refuses sources over ``max_source_bytes``)."""
    seconds: float = 0.0
    path: str = ""
    input_bytes: int = 0
    """Bytes of the problem's inputs, its forward's outputs and its model's state, as compiled (what
    the at-scale check sizes its judges by); 0 where unknown."""
    output_bytes: int = 0
    param_bytes: int = 0


# ---------------------------------------------------------------------------------------------------
# Capture (in the child process: it imports and runs the reference).


def _load_module(source: str, directory: Path) -> Any:
    import importlib.util

    path = directory / "reference.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("tritongym_inductor_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _to_device(value: Any, device: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    return value


def _sources(model: Any, inputs: list) -> dict[int, Argument]:
    """Every tensor the graph may take, by identity: the model's state, its plain tensor attributes
    and the inputs' tensors (nested lists and tuples included)."""
    import torch

    found: dict[int, Argument] = {}

    def add_input(value: Any, path: tuple[int, ...]) -> None:
        if isinstance(value, torch.Tensor):
            found.setdefault(id(value), Argument("input", path=path))
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                add_input(v, (*path, i))

    for i, value in enumerate(inputs):
        add_input(value, (i,))
    for name, parameter in model.named_parameters(remove_duplicate=False):
        found.setdefault(id(parameter), Argument("parameter", name))
    for name, buffer in model.named_buffers(remove_duplicate=False):
        found.setdefault(id(buffer), Argument("buffer", name))
    for prefix, module in model.named_modules():
        for attr, value in vars(module).items():
            if isinstance(value, torch.Tensor) and not attr.startswith("_"):
                found.setdefault(id(value), Argument("attribute", f"{prefix}.{attr}" if prefix else attr))
    return found


def _output_structure(model: Any, inputs: list) -> tuple[str, int, int]:
    """The forward's output, run on fake tensors (no memory, no compute): tensor, tuple or list, how
    many tensors, and their bytes."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    try:
        with torch.no_grad(), FakeTensorMode(allow_non_fake_inputs=True):
            output = model(*inputs)
    except Exception as exc:
        raise Unsupported(
            f"the forward does not run on fake tensors to read its outputs ({_first_line(exc)})"
        ) from None
    if isinstance(output, torch.Tensor):
        return "tensor", 1, output.nbytes
    if isinstance(output, (tuple, list)) and output and all(isinstance(o, torch.Tensor) for o in output):
        return type(output).__name__, len(output), sum(o.nbytes for o in output)
    raise Unsupported(f"the forward returns {type(output).__name__}, not a tensor or a flat tuple/list of tensors")


MAX_CONSTANT_ELEMENTS = 4096
"""Largest constant tensor written into a solution as a literal."""


def _constant_expression(tensor: Any, device: str) -> str | None:
    """Python that rebuilds a small, finite, contiguous constant tensor on ``device``; None otherwise."""
    too_large = tensor.numel() > MAX_CONSTANT_ELEMENTS or not tensor.is_contiguous()
    if too_large or (tensor.is_floating_point() and not bool(tensor.isfinite().all())):
        return None
    values = tensor.detach().cpu().reshape(-1).tolist()
    dtype = str(tensor.dtype).removeprefix("torch.")
    return f"torch.tensor({values!r}, dtype=torch.{dtype}, device={device!r}).reshape({tuple(tensor.shape)!r})"


class _Captured(Exception):
    """Raised from the output-code hook: compilation stops once the code is known."""


def _no_driver() -> bool:
    try:
        from triton.runtime.driver import driver

        driver.active  # noqa: B018 - raises where Triton has no driver for this machine
    except RuntimeError:
        return True
    return False


def capture(problem: Problem, device: str, seed: int = 0) -> Capture:
    """Compile ``problem``'s reference with torch.compile on ``device`` and capture Inductor's code."""
    from contextlib import ExitStack
    from unittest import mock

    import torch
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config
    import triton
    from torch._inductor.graph import GraphLowering
    from torch._inductor.virtualized import V

    torch.manual_seed(seed)
    with tempfile.TemporaryDirectory(prefix="tritongym-inductor-") as scratch:
        module = _load_module(problem.source, Path(scratch))
        cls = getattr(module, problem.entry_point, None)
        if cls is None:
            raise Unsupported(f"the problem defines no class {problem.entry_point}")
        with torch.device(device):  # made where they are used: a CPU randn of 16 GiB takes long
            model = cls(*_to_device(module.get_init_inputs(), device)).to(device).eval()
            inputs = list(_to_device(module.get_inputs(), device))
        graphs: list[tuple[Any, list]] = []
        captured: list[dict[str, Any]] = []

        def backend(gm, example_inputs):
            from torch._inductor.compile_fx import compile_fx

            lifted = [t for _, t in gm.named_parameters()] + [t for _, t in gm.named_buffers()]
            graphs.append((gm, lifted + list(example_inputs)))
            return compile_fx(gm, example_inputs)

        def save_output_code(code: str) -> None:
            graph = V.graph
            placeholders = [n for n in graph.module.graph.nodes if n.op == "placeholder"]
            captured.append({
                "code": code,
                "placeholders": [(n.name, n.meta.get("val")) for n in placeholders],
                "outputs": [getattr(o, "get_size", lambda: None)() for o in graph.graph_outputs],
                "constants": {name: _constant_expression(t, device) for name, t in graph.constants.items()},
            })  # fmt: skip
            raise _Captured

        with ExitStack() as stack:
            stack.enter_context(mock.patch.object(GraphLowering, "save_output_code", save_output_code))
            # No cache may answer instead of a compilation: a graph compiled before (the judge's
            # torch.compile baseline, say) would come back without its code being written.
            caches = {"fx_graph_cache": False, "fx_graph_remote_cache": False, "force_disable_caches": True}
            caches = {k: v for k, v in caches.items() if hasattr(inductor_config, k)}
            stack.enter_context(inductor_config.patch(cpu_backend="triton", freezing=False, **caches))
            if hasattr(functorch_config, "enable_autograd_cache"):
                stack.enter_context(functorch_config.patch(enable_autograd_cache=False))
            if _no_driver():
                import torch.utils._triton as triton_utils

                stack.enter_context(mock.patch.object(triton_utils, "triton_hash_with_backend", lambda: "0" * 64))
            torch._dynamo.reset()
            compiled = torch.compile(model, backend=backend, fullgraph=True, dynamic=False)
            try:
                with torch.no_grad():
                    compiled(*inputs)
            except Exception as exc:
                if not captured:
                    raise Unsupported(f"torch.compile failed: {_first_line(exc)}") from None
        torch._dynamo.reset()
        structure, outputs, output_bytes = _output_structure(model, inputs)
        if len(graphs) != 1 or len(captured) != 1:
            raise Unsupported(f"torch.compile made {len(graphs)} graphs and {len(captured)} output codes, not one")
        gm, flat = graphs[0]
        placeholders = captured[0]["placeholders"]
        if len(placeholders) != len(flat):
            raise Unsupported(
                f"Inductor's graph has {len(placeholders)} inputs where Dynamo's had {len(flat)} (merged inputs)"
            )
        sources = _sources(model, inputs)
        arguments = []
        for (name, value), tensor in zip(placeholders, flat, strict=True):
            if not isinstance(tensor, torch.Tensor) or id(tensor) not in sources:
                raise Unsupported(f"graph input {name} is not a parameter, buffer, attribute or input of the model")
            if value is not None and tuple(value.shape) != tuple(tensor.shape):
                raise Unsupported(
                    f"graph input {name} has shape {tuple(value.shape)}, its tensor {tuple(tensor.shape)}"
                )
            argument = sources[id(tensor)]
            if argument.kind == "input":
                argument = replace(argument, size=tuple(tensor.shape), stride=tuple(tensor.stride()))
            arguments.append(argument)
        order = call_order(standalone(captured[0]["code"])[0])
        if order != [name for name, _ in placeholders]:
            raise Unsupported(f"call() unpacks {order}, Inductor's graph has {[n for n, _ in placeholders]}")
        graph_outputs = sum(1 for n in gm.graph.nodes if n.op == "output" for _ in _flat(n.args[0]))
        if graph_outputs != outputs or len(captured[0]["outputs"]) < outputs:
            raise Unsupported(
                f"the forward returns {outputs} tensors, Dynamo's graph {graph_outputs} and Inductor's "
                f"{len(captured[0]['outputs'])} (an output that is an input or a constant)"
            )
        versions = {"torch": torch.__version__, "triton": triton.__version__, "device": str(device)}
        sizes = {
            "input_bytes": sum(t.nbytes for t in _flat(inputs) if isinstance(t, torch.Tensor)),
            "output_bytes": output_bytes,
            "param_bytes": sum(t.nbytes for t in model.state_dict().values() if isinstance(t, torch.Tensor)),
        }
        return Capture(captured[0]["code"], arguments, outputs, structure, versions, captured[0]["constants"], sizes)


def _flat(value: Any) -> Iterable[Any]:
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _flat(v)
    else:
        yield value


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def generate_one(problem: Problem, device: str, out: Path) -> Outcome:
    """Capture, render and write one problem's solution; an :class:`Unsupported` problem is skipped."""
    started = time.monotonic()
    try:
        captured = capture(problem, device)
        text, kernels, extern = render(problem, captured)
    except Unsupported as exc:
        return Outcome(problem.name, "skipped", str(exc), seconds=round(time.monotonic() - started, 2))
    except Exception as exc:  # the reference itself fails: its error, named
        reason = f"the reference fails to build or run: {_first_line(exc)}"
        if "out of memory" in str(exc).lower():
            reason = f"out of memory: {_first_line(exc)}"
        return Outcome(problem.name, "skipped", reason, seconds=round(time.monotonic() - started, 2))
    path = out / f"{problem.name}.py"
    path.write_text(text, encoding="utf-8")
    seconds = round(time.monotonic() - started, 2)
    return Outcome(problem.name, "written", "", kernels, extern, len(text.encode()), seconds, str(path),
                   **captured.sizes)  # fmt: skip


# ---------------------------------------------------------------------------------------------------
# Many problems: one child process each.


def _child_environment(cache: str) -> dict[str, str]:
    env = dict(os.environ)
    env["TORCHINDUCTOR_CACHE_DIR"] = cache  # Inductor's scratch files, kept when compilation stops early
    env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"  # no compile workers: the kernels are never compiled here
    env["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"  # a cached graph would come back without its code
    env.setdefault("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    return env


def _run_child(problem: Problem, device: str, out: Path, timeout_s: float, cache: str) -> Outcome:
    request = json.dumps({"problem": {**problem.to_dict(), "level": problem.level}, "device": device, "out": str(out)})
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tritongym.solutions.inductor"], input=request, capture_output=True, text=True,
            timeout=timeout_s, env=_child_environment(cache),
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return Outcome(problem.name, "skipped", f"compilation took longer than {timeout_s:.0f} s", seconds=timeout_s)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            return Outcome(**json.loads(line))
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
    return Outcome(
        problem.name, "skipped", f"the compiling process exited with {done.returncode}: {tail}",
        seconds=round(time.monotonic() - started, 2),
    )  # fmt: skip


def prepare_all(problems: list[Problem], small: bool) -> tuple[list[Problem], list[Outcome]]:
    """The problems as compiled (``Problem.prepare``: shrunk when ``small``), and the skipped outcome
    of each one that cannot be prepared (a package it needs is missing, say)."""
    prepared, refused = [], []
    for problem in problems:
        try:
            prepared.append(problem.prepare(small=small))
        except TritonGymError as exc:
            refused.append(Outcome(problem.name, "skipped", str(exc)))
    return prepared, refused


def generate(
    problems: list[Problem],
    out: Path,
    device: str,
    jobs: int = 1,
    timeout_s: float = CHILD_TIMEOUT_S,
    on_done: Callable[[Outcome], None] | None = None,
    refused: Iterable[Outcome] = (),
    resume: bool = False,
    memory_share: float | None = None,
) -> list[Outcome]:
    """Write ``out/<name>.py`` for every problem Inductor can make a standalone solution of, ``jobs``
    compilations at once, and ``out/summary.json``, rewritten as each problem is done (the ``refused``
    problems first: those that could not be prepared). Problems that ran out of memory while others
    compiled beside them are tried again one at a time. With ``resume``, problems the summary already
    has an outcome for (other than running out of memory) are not compiled again. ``memory_share``
    is the share of the GPU's free memory the compilations may hold at once (default
    :data:`BUDGET_SHARE`; less where a judge shares the GPU meanwhile). Returns the outcomes, refused
    ones included, in the problems' order."""
    out.mkdir(parents=True, exist_ok=True)
    refused = list(refused)
    outcomes: dict[str, Outcome] = {}
    if resume and (out / SUMMARY).exists():
        earlier = [Outcome(**row) for row in json.loads((out / SUMMARY).read_text(encoding="utf-8"))["problems"]]
        outcomes = {o.problem: o for o in earlier if not _oom(o)}
    names = {p.name for p in problems}
    lock = threading.Lock()
    memory = _DeviceMemory(device, BUDGET_SHARE if memory_share is None else memory_share)

    def save() -> list[Outcome]:
        ordered = [*refused, *(outcomes[p.name] for p in problems if p.name in outcomes)]
        summary = {
            "device": device,
            "problems_total": len(refused) + len(problems),
            "written": sum(o.status == "written" for o in ordered),
            "skipped": sum(o.status == "skipped" for o in ordered),
            "problems": [asdict(o) for o in ordered],
        }
        (out / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        return ordered

    def run(batch: list[Problem], workers: int, final: bool) -> None:
        with ThreadPoolExecutor(max(1, workers)) as pool:
            futures = [
                pool.submit(memory.run, p, lambda p=p: _run_child(p, device, out, timeout_s, cache)) for p in batch
            ]
            for future in as_completed(futures):
                outcome = future.result()
                with lock:
                    outcomes[outcome.problem] = outcome
                    save()
                if on_done and (final or not _oom(outcome)):
                    on_done(outcome)

    if on_done:
        for outcome in outcomes.values():
            if outcome.problem in names:
                on_done(outcome)
    with tempfile.TemporaryDirectory(prefix="tritongym-inductor-cache-", ignore_cleanup_errors=True) as cache:
        run([p for p in problems if p.name not in outcomes], jobs, final=jobs <= 1)
        retry = [p for p in problems if _oom(outcomes[p.name])] if jobs > 1 else []
        if retry:
            log.info("%d problems ran out of memory beside others; trying them one at a time", len(retry))
            run(retry, 1, final=True)
    return save()


CHILD_OVERHEAD_BYTES = 1 << 30
"""A compiling process's own GPU memory (its CUDA context, Inductor's workspace), beside the problem's."""
BUDGET_SHARE = 0.7
"""Share of the GPU's free memory the compiling processes may hold at once (by their estimates)."""


class _DeviceMemory:
    """Holds back a compilation while those running would need more GPU memory than the budget: each
    holds its problem's input bytes (read statically from ``get_inputs()``, as float32) plus
    :data:`CHILD_OVERHEAD_BYTES`. A problem larger than the budget runs alone. On the CPU, no limit."""

    def __init__(self, device: str, share: float = BUDGET_SHARE):
        self.budget = None
        if device.startswith("cuda"):
            import torch

            self.budget = int(torch.cuda.mem_get_info()[0] * share)
        self.held = 0
        self._condition = threading.Condition()

    @staticmethod
    def footprint(problem: Problem) -> int:
        from tritongym.problems.sizes import input_elements

        try:
            elements, _ = input_elements(problem.source)
        except Exception:  # a source the static reader cannot follow: count only the overhead
            elements = 0
        return 4 * elements + CHILD_OVERHEAD_BYTES

    def run(self, problem: Problem, work: Callable[[], Outcome]) -> Outcome:
        if self.budget is None:
            return work()
        need = min(self.footprint(problem), self.budget)
        with self._condition:
            self._condition.wait_for(lambda: self.held + need <= self.budget)
            self.held += need
        try:
            return work()
        finally:
            with self._condition:
                self.held -= need
                self._condition.notify_all()


def _oom(outcome: Outcome) -> bool:
    return outcome.status == "skipped" and "out of memory" in outcome.reason.lower()


def main() -> None:
    """Child entry point: one problem as JSON on stdin, its Outcome as one JSON line on stdout."""
    request = json.loads(sys.stdin.read())
    problem = Problem(**request["problem"])
    outcome = generate_one(problem, request["device"], Path(request["out"]))
    sys.stdout.write(json.dumps(asdict(outcome)) + "\n")


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    main()
