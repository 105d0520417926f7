"""The rules the bundled prompts state are the judge's: every name they cite is a verdict or finding the
judge gives, every hack verdict is cited, and the examples they give are what the checks hold."""

import re
from pathlib import Path

import pytest

from tritongym.agent.prompts import Prompts
from tritongym.agent.rules import RULES, Rule, rules_text
from tritongym.evaluate.guards import GLUE_OPS
from tritongym.evaluate.result import Category, Verdict
from tritongym.evaluate.static_checks import FORBIDDEN_MODULES, FORBIDDEN_NAMES
from tritongym.problems import find_problem

ROOT = Path(__file__).resolve().parents[2]


def finding_checks() -> set[str]:
    """Every finding check the evaluator emits (the scan docs/results.md's test uses)."""
    found = set()
    for path in (ROOT / "tritongym").rglob("*.py"):
        found |= set(re.findall(r"\{\"check\": \"([a-z_]+)\"", path.read_text()))
    return found


def test_every_name_a_rule_cites_is_a_verdict_or_finding_of_the_judge():
    known = {v.value for v in Verdict} | finding_checks()
    assert {"torch_compute", "host_read", "implausible_speedup"} <= known  # the scan finds them
    cited = {name for rule in RULES for name in rule.names}
    assert cited <= known, f"rules cite what the judge never gives: {sorted(cited - known)}"
    assert all(rule.names for rule in RULES)


def test_every_hack_verdict_is_stated_up_front():
    hacks = {v.value for v in Verdict if v.category is Category.HACK}
    cited = {name for rule in RULES for name in rule.names}
    assert hacks - cited == set(), f"no rule states what these refuse: {sorted(hacks - cited)}"


def test_the_examples_in_the_rules_are_what_the_checks_hold():
    text = rules_text()
    for op in ("view", "reshape", "empty"):  # "shape work and allocation ... are fine"
        assert f"{op}" in text and op in GLUE_OPS
    for module in ("gc", "inspect", "ctypes", "threading", "subprocess"):
        assert module in text and module in FORBIDDEN_MODULES
    for name in ("eval", "exec", "open"):
        assert name in text and name in FORBIDDEN_NAMES


def test_the_rules_render_one_line_each_with_their_names():
    text = rules_text((Rule("Do a thing.", ("mismatch", "host_read")), Rule("Another.", ("hack_threads",))))
    assert text == "- Do a thing. (mismatch, host_read)\n- Another. (hack_threads)"
    assert len(rules_text().splitlines()) == len(RULES)


@pytest.mark.parametrize("template", ["kernelbench", "kernel-coder"])
def test_the_bundled_first_turn_prompts_state_the_rules(template):
    problem = find_problem("silu")
    user = Prompts(template).initial(problem)[-1]["content"]
    assert rules_text() in user and "{{" not in user
    assert len(rules_text()) < 1600  # a prompt's token cost: about 350 tokens
