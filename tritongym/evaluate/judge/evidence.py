"""Evidence the judge holds against the runner's guard report.

The guard report (launch counts, the op recorder's findings, the fallback and hollow forwards, the
profiled forward's kernels) is made by code in the candidate's process, so a candidate can forge it
(docs/environment.md, "Threat model"). These checks never take a runner's claim as proof; they look
for claims that contradict what the judge knows on its own:

* the candidate's text (read, parsed, never executed): a text that defines no Triton kernel at all
  cannot launch one, whatever its runner says (``no_kernel``); a kernel of the candidate's own is
  named after a function its text defines (Triton names a compiled kernel after its function), so
  a profile row that calls a kernel the candidate's own under any other name is forged
  (``unknown_own_kernels``);
* the judge's own clock: a forward's kernels cannot take much longer on the GPU than the judge
  measured a whole forward to take (``implausible_gpu_time``);
* the runner's own answers to two questions about the same inputs: the trials say the candidate's
  kernels were launched, so the profiled forward of the last trial's inputs must have run at least
  one of them on the GPU (``no_own_kernel_profiled``).

They bound the report; they do not prove it. A candidate that edits both the trial path and the
profiled forward, names its forged rows after a decoy kernel it defines and keeps their times
plausible passes them (what remains is listed in docs/environment.md).

Everything here is a pure function of plain values (tested on the CPU with purpose-written inputs).
"""

from __future__ import annotations

import ast
import textwrap
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

from tritongym.evaluate.judge.feedback import Failure
from tritongym.evaluate.result import Verdict

MAX_NESTED_SOURCE = 1 << 20
"""Longest string literal that is parsed as code (Inductor's ``async_compile.triton('name', '''...''')``)."""
MAX_NESTING = 2
"""How deep code in strings in code is looked into."""
CLIPPED_NAME = 200
"""Longest kernel name in a report: the runner clips longer ones to 197 characters and '...'."""
GPU_TIME_FACTOR = 4.0
"""The profiled forward's GPU time may be this many times the judge's median forward time (the
profiled forward runs alone, its weights cold in the L2, under the profiler; the timed ones run in
batches) ..."""
GPU_TIME_SLACK_MS = 5.0
"""... plus this much (another context's time slice inside a kernel's span, clock ramps)."""


@dataclass(frozen=True)
class SourceKernels:
    """What the candidate's text says about its Triton kernels (``source_kernels``)."""

    kernels: frozenset[str]
    """Functions the text makes Triton kernels: decorated by, or passed to, something named ``*jit*``
    (``@triton.jit``, ``@jit``, ``triton.jit(f)``, an alias of one), in its code or in string
    literals that hold code (Inductor's ``async_compile.triton``)."""
    functions: frozenset[str]
    """Every function the text defines (its code and code in string literals): the names a kernel of
    the candidate's own can have."""
    names_computed: bool
    """Whether a kernel's name may be computed at run time rather than written in the text
    (``exec``/``compile``, an assignment to ``__name__``/``__qualname__``, ``**options`` passed to
    a jit call, which may hold a ``repr``)."""
    renamed: bool = False
    """Whether a jit call passes ``repr=``, which names the compiled kernel after whatever it returns
    (a cuBLAS kernel's name, say): refused, since it would switch the name evidence off."""
    mentions_jit: bool = True
    """Whether anything in the text is named ``*jit*`` (or an alias of it): a kernel may then be made
    in ways no reading of the text follows (a decorator factory, a comprehension), so only a text
    without any is refused as having no kernel."""


def _identifiers(node: ast.AST) -> Iterable[str]:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            yield sub.id
        elif isinstance(sub, ast.Attribute):
            yield sub.attr


def _jit_aliases(tree: ast.AST) -> set[str]:
    """Names bound to something named ``*jit*``: imported as another name or assigned."""
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            aliases |= {a.asname for a in node.names if a.asname and "jit" in a.name.lower()}
    assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign)]
    for _ in range(3):  # aliases of aliases
        for node in assigns:
            if any(_jitty(name, aliases) for name in _identifiers(node.value)):
                aliases |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return aliases


def _jitty(name: str, aliases: set[str]) -> bool:
    return "jit" in name.lower() or name in aliases


def _mentions_jit(node: ast.AST, aliases: set[str]) -> bool:
    return any(_jitty(name, aliases) for name in _identifiers(node))


def _parse(text: str) -> ast.AST | None:
    """Code in a string literal, or None where it is not code (its warnings are not the judge's)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def source_kernels(source: str | ast.AST, depth: int = 0) -> SourceKernels:
    """The Triton kernels and functions a candidate's text defines. Raises what ``ast.parse`` raises
    on the text itself (the judge compiles it first); code in string literals that does not parse
    is skipped."""
    tree = ast.parse(source) if isinstance(source, str) else source
    aliases = _jit_aliases(tree)
    mentions = _mentions_jit(tree, aliases)
    renamed = False
    defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    functions = {d.name for d in defs}
    kernels = {d.name for d in defs if any(_mentions_jit(dec, aliases) for dec in d.decorator_list)}
    computed = False
    nested: list[SourceKernels] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if _mentions_jit(node, aliases):
                values = [*node.args, *(k.value for k in node.keywords)]
                kernels |= {n for arg in values for n in _identifiers(arg) if n in functions}
                renamed |= any(k.arg == "repr" for k in node.keywords)
                computed |= any(k.arg is None for k in node.keywords)  # **options may hold a repr
        elif isinstance(node, ast.Name) and node.id in ("exec", "compile", "eval"):
            computed = True
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            computed |= any(
                isinstance(t, ast.Attribute) and t.attr in ("__name__", "__qualname__")
                for target in targets
                for t in ast.walk(target)
            )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and depth < MAX_NESTING:
            text = node.value
            if len(text) <= MAX_NESTED_SOURCE and "jit" in text and "def " in text:
                inner = _parse(textwrap.dedent(text))
                if inner is not None:
                    nested.append(source_kernels(inner, depth + 1))
    for found in nested:
        kernels |= found.kernels
        functions |= found.functions
        computed |= found.names_computed
        renamed |= found.renamed
        mentions |= found.mentions_jit
    return SourceKernels(frozenset(kernels), frozenset(functions), computed, renamed, mentions or bool(kernels))


def no_kernel(found: SourceKernels) -> Failure | None:
    """A text that defines no Triton kernel is refused before it runs: no launch of its own kernels
    is possible, so every report of one would be forged."""
    if found.renamed:
        return Failure(
            Verdict.HACK_FORBIDDEN_API,
            "The solution passes repr= to triton.jit, which renames the compiled kernel: the judge "
            "tells the solution's kernels from library ones by the names of its functions. Remove it.",
        )
    if found.kernels or found.mentions_jit:
        return None
    return Failure(
        Verdict.HACK_NO_TRITON,
        "The solution defines no Triton kernel (no function decorated with @triton.jit), so forward can launch "
        "none of the solution's own kernels; it was not run. The work must be done by @triton.jit kernels "
        "defined in the solution.",
    )


def _named_in(name: str, functions: frozenset[str]) -> bool:
    if name in functions:
        return True
    if len(name) == CLIPPED_NAME and name.endswith("..."):
        return any(f.startswith(name[:-3]) for f in functions)
    return False


def unknown_own_kernels(found: SourceKernels, rows: list[dict]) -> list[str]:
    """Names of the profile rows marked as the candidate's own that no function of its text has
    (empty where names may be computed at run time)."""
    if found.names_computed:
        return []
    return [row["name"] for row in rows if row["own"] and not _named_in(row["name"], found.functions)]


def implausible_gpu_time(rows: list[dict], forward_ms: float | None) -> str:
    """Why the profiled forward's reported GPU time cannot be right next to the judge's median time
    of a whole forward (``forward_ms``, None when it was not timed); '' when it can."""
    if forward_ms is None:
        return ""
    reported_ms = sum(row["time_us"] for row in rows) / 1e3
    bound_ms = GPU_TIME_FACTOR * forward_ms + GPU_TIME_SLACK_MS
    if reported_ms <= bound_ms:
        return ""
    return (
        f"its kernels took {reported_ms:.3f} ms of GPU time in one forward, while the judge measured a forward at "
        f"{forward_ms:.3f} ms (at most {bound_ms:.3f} ms is plausible)"
    )


def no_own_kernel_profiled(rows: list[dict], coverage: float | None) -> bool:
    """Whether the profiled forward ran GPU work and none of it in the candidate's own kernels. A row
    list clipped by the runner may leave out a small own row: then its coverage is above zero."""
    return bool(rows) and coverage == 0.0 and not any(row["own"] for row in rows)


def check_profile(found: SourceKernels, measured: dict) -> None:
    """Raise the verdict of a profile (speed.py's ``coverage`` and ``kernels``, and the timing's
    ``candidate_ms`` where timed) that contradicts the candidate's text, the judge's clock or the
    trials' reports (every trial reported launches of the candidate's own kernels)."""
    if "kernels" not in measured:
        return
    rows, coverage = measured["kernels"], measured.get("coverage")
    timing = measured.get("timing") or {}
    unknown = unknown_own_kernels(found, rows)
    if unknown:
        names = ", ".join(sorted(set(unknown))[:3])
        raise Failure(
            Verdict.HACK_TAMPERING,
            f"The profile from the solution's process counts kernels the solution does not define as its own "
            f"({names}): a kernel of the solution's is named after its @triton.jit function. The report was "
            "forged.",
        )
    implausible = implausible_gpu_time(rows, timing.get("candidate_ms"))
    if implausible:
        raise Failure(
            Verdict.HACK_TAMPERING,
            f"The profile from the solution's process cannot be right: {implausible}. The report was forged.",
        )
    if no_own_kernel_profiled(rows, coverage):
        names = ", ".join(str(row["name"]) for row in rows[:3])
        raise Failure(
            Verdict.HACK_NO_TRITON,
            "The trials reported launches of the solution's own Triton kernels, but the profiled forward on the "
            f"last trial's inputs ran none of them on the GPU (its GPU time went to {names}): either the report "
            "was forged or the kernels launched do no work. Compute the output with Triton kernels.",
        )
