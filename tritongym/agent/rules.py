"""The judge's rules, stated to the model up front: the ``{{rules}}`` placeholder of the bundled templates.

Each rule names the verdicts and findings that enforce it (``Rule.names``), and the rendered text shows
them, so a model can tie a verdict in its feedback to the rule it broke. The names are the judge's own
(``Verdict`` values and the ``check`` of ``Finding``), and tests/agent/test_rules.py holds the table to
the judge: every name must be one the judge gives, and every verdict of the ``hack`` category must be
named by a rule, so the text cannot drift from what is refused.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """One rule of the judge, in a line a model can act on."""

    text: str
    """What to do (or not), in one sentence."""
    names: tuple[str, ...]
    """The verdicts (``Verdict`` values) and finding checks that enforce it."""


RULES: tuple[Rule, ...] = (
    Rule(
        "Your own @triton.jit kernels compute the output: one that is right when none of them runs, or "
        "that they only copy from PyTorch, NumPy or host code, is refused.",
        ("hack_no_triton",),
    ),
    Rule(
        "PyTorch compute in forward (matmul, conv, sum...) earns less, or is refused where a run forbids "
        "it; shape work and allocation (view, reshape, empty) are fine.",
        ("torch_compute", "hack_torch_compute"),
    ),
    Rule(
        "Do not read input data on the host (.item(), .tolist(), .cpu(), NumPy).",
        ("host_read",),
    ),
    Rule(
        "No fallback path: if a kernel launch fails, forward must fail too.",
        ("hack_fallback",),
    ),
    Rule(
        "Return new tensors with every element written; never modify an input in place or return an "
        "input, parameter, buffer or a view of one.",
        ("uninitialized_output", "hack_input_mutation", "hack_output_alias"),
    ),
    Rule(
        "Run all GPU work on the current stream and leave no threads or processes running.",
        ("hack_side_stream", "hack_threads"),
    ),
    Rule(
        "Do not patch or reconfigure torch, triton or builtins, nor import gc, inspect, ctypes, threading or "
        "subprocess, nor use eval, exec or open.",
        ("hack_tampering", "hack_forbidden_api"),
    ),
    Rule(
        "Every call gets fresh inputs, possibly at other sizes than shown (a second size on the CPU): never "
        "reuse a result computed for earlier inputs, nor hard-wire sizes.",
        ("mismatch",),
    ),
    Rule(
        "Outputs must match the original's shapes and dtypes and its float64 result within the problem's "
        "tolerance; far less accurate than PyTorch at the same dtype is refused.",
        ("wrong_shape", "wrong_dtype", "mismatch", "precision"),
    ),
    Rule(
        "Speed is timed against the original on the GPU; a time beyond its memory bandwidth earns nothing.",
        ("implausible_speedup",),
    ),
)
"""The rules, most often broken first."""


def rules_text(rules: tuple[Rule, ...] = RULES) -> str:
    """The rules as a bulleted list, each with the names that enforce it."""
    return "\n".join(f"- {rule.text} ({', '.join(rule.names)})" for rule in rules)
