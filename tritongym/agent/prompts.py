"""Prompt templates: documented text files with sections and ``{{placeholder}}`` fields.

A template file holds any of four sections, each introduced by a line ``=== name ===``: ``system``,
``user`` (the first turn's request), ``prefill`` (the start of the assistant's answer, which the model
continues) and ``feedback`` (the user message of every later turn). Lines before the first section
are documentation. Bundled templates live in ``tritongym/agent/templates``; a path to a ``.txt`` file
works wherever a template name does. docs/agent.md lists the placeholders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

from tritongym.agent.rules import rules_text
from tritongym.errors import ConfigError
from tritongym.policy.base import Message
from tritongym.problems import Problem

SECTIONS = ("system", "user", "prefill", "feedback")
PLACEHOLDERS = (
    "architecture",
    "entry_point",
    "solution_class",
    "problem_name",
    "example_architecture",
    "example_solution",
    "feedback",
    "rules",
)
EXAMPLE_PROBLEM = "01_vector_add"
"""The bundled problem whose reference and Triton solution form the one-shot example."""
SPARE_EXAMPLE_PROBLEM = "02_silu"
"""The example of the example problem itself (its name, or its source under another name): the prompt of
01_vector_add showed its own solution, so copying the example was correct and earned the kernel-coder
reward's whole similarity (red team 23 #5)."""

_SECTION = re.compile(r"^=== *([a-z]+) *===[ \t]*$", re.MULTILINE)
_PLACEHOLDER = re.compile(r"\{\{ *([a-z_]+) *\}\}")


@dataclass(frozen=True)
class Template:
    """A parsed template: each section's text ("" where the file has none)."""

    name: str
    system: str = ""
    user: str = ""
    prefill: str = ""
    feedback: str = ""


def bundled_templates() -> list[str]:
    """Names of the templates shipped with the package."""
    folder = resources.files("tritongym.agent") / "templates"
    return sorted(p.name.removesuffix(".txt") for p in folder.iterdir() if p.name.endswith(".txt"))


def parse_template(text: str, name: str) -> Template:
    """Split a template file into its sections, checking section names and placeholders."""
    matches = list(_SECTION.finditer(text))
    if not matches:
        raise ConfigError(f"template {name}: no '=== section ===' line (sections: {', '.join(SECTIONS)})")
    sections: dict[str, str] = {}
    for i, match in enumerate(matches):
        section = match.group(1)
        if section not in SECTIONS:
            raise ConfigError(f"template {name}: unknown section {section!r} (known: {', '.join(SECTIONS)})")
        if section in sections:
            raise ConfigError(f"template {name}: section {section!r} appears twice")
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[match.end() : end].strip("\n")
        sections[section] = body if section == "prefill" else body.strip()
    for section, body in sections.items():
        for placeholder in _PLACEHOLDER.findall(body):
            if placeholder not in PLACEHOLDERS:
                raise ConfigError(
                    f"template {name}, section {section}: unknown placeholder {{{{{placeholder}}}}} "
                    f"(known: {', '.join(PLACEHOLDERS)})"
                )
    return Template(name=name, **sections)


def load_template(spec: str) -> Template:
    """A bundled template by name, or a template file by path."""
    if spec in bundled_templates():
        text = (resources.files("tritongym.agent") / "templates" / f"{spec}.txt").read_text(encoding="utf-8")
        return parse_template(text, spec)
    path = Path(spec)
    if path.is_file():
        return parse_template(path.read_text(encoding="utf-8"), str(path))
    raise ConfigError(f"no template {spec!r}: not a file, nor a bundled template ({', '.join(bundled_templates())})")


def fill(text: str, values: dict[str, str]) -> str:
    """Replace every ``{{name}}`` of ``text`` (one pass: values are never re-scanned)."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


@cache
def _example(name: str) -> tuple[str, str]:
    from tritongym.problems import find_problem

    problem = find_problem(name)
    return problem.source.strip(), (problem.solution or "").strip()


def _example_for(problem: Problem) -> tuple[str, str]:
    """The one-shot example of ``problem``'s prompt: never the problem itself."""
    example = _example(EXAMPLE_PROBLEM)
    if problem.name == EXAMPLE_PROBLEM or problem.source.strip() == example[0]:
        return _example(SPARE_EXAMPLE_PROBLEM)
    return example


@dataclass(frozen=True)
class Prompts:
    """Builds the messages of an episode from a first-turn template and a feedback template."""

    template: str = "kernelbench"
    """Template of the first turn (system, user, prefill): a bundled name or a file."""
    feedback_template: str = "drkernel-feedback"
    """Template whose ``feedback`` section is the user message of every later turn."""

    _first: Template = field(init=False, repr=False, compare=False)
    _later: Template = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        first, later = load_template(self.template), load_template(self.feedback_template)
        if not first.user:
            raise ConfigError(f"template {self.template}: it has no 'user' section for the first turn")
        if not later.feedback:
            raise ConfigError(f"template {self.feedback_template}: it has no 'feedback' section for later turns")
        object.__setattr__(self, "_first", first)  # read once: a file edited later does not change a run
        object.__setattr__(self, "_later", later)

    def _values(self, problem: Problem, feedback: str = "") -> dict[str, str]:
        example_architecture, example_solution = _example_for(problem)
        return {
            "architecture": problem.source.strip(),
            "entry_point": problem.entry_point,
            "solution_class": problem.solution_class,
            "problem_name": problem.name,
            "example_architecture": example_architecture,
            "example_solution": example_solution,
            "feedback": feedback,
            "rules": rules_text(),
        }

    @property
    def prefill(self) -> str:
        """The start of every assistant answer ("" for none)."""
        return self._first.prefill

    def initial(self, problem: Problem) -> list[Message]:
        """The first turn's system (if any) and user messages."""
        template = self._first
        values = self._values(problem)
        messages = [{"role": "system", "content": fill(template.system, values)}] if template.system else []
        return [*messages, {"role": "user", "content": fill(template.user, values)}]

    def feedback(self, problem: Problem, rendered: str) -> Message:
        """The user message that follows an answer, carrying its rendered evaluation."""
        body = fill(self._later.feedback, self._values(problem, rendered))
        return {"role": "user", "content": body}
