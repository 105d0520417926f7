"""Command-line options derived from a config dataclass: one option per field, named after it, with the
field's default and its help text (``config_doc``), so a new config field is a new flag for free.

    @app.command()
    @config_options(EvalConfig, on_error=usage_error)
    def eval(candidate: Path, *, config: EvalConfig): ...

Flag names: underscores become dashes and a seconds suffix is dropped (``timeout_s`` -> ``--timeout``);
booleans get ``--name/--no-name``; a Literal field takes a string that the config checks.
"""

from __future__ import annotations

import functools
import inspect
import re
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, fields
from typing import Annotated, Literal

import typer

from tritongym.errors import ConfigError


def flag(name: str) -> str:
    """The option of a config field: ``timing_budget_s`` -> ``--timing-budget``."""
    return "--" + name.removesuffix("_s").replace("_", "-")


def _option_type(hint) -> type:
    """The type typer parses for a field annotation (str for a Literal; X | None stays optional)."""
    if typing.get_origin(hint) is Literal:
        return str
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        (inner,) = [a for a in typing.get_args(hint) if a is not type(None)]
        return _option_type(inner) | None
    if hint in (bool, int, float, str):
        return hint
    raise TypeError(f"no command-line type for a config field annotated {hint!r}")


def _parameters(cls) -> list[inspect.Parameter]:
    hints = typing.get_type_hints(cls)
    parameters = []
    for f in fields(cls):
        kind = _option_type(hints[f.name])
        declaration = f"{flag(f.name)}/--no-{flag(f.name)[2:]}" if kind is bool else flag(f.name)
        default = f.default if f.default is not MISSING else f.default_factory()
        option = typer.Option(declaration, help=f.metadata.get("help", ""), rich_help_panel=cls.__name__)
        parameters.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                            annotation=Annotated[kind, option]))  # fmt: skip
    return parameters


def _in_flags(message: str, names: list[str]) -> str:
    """A config's message in the words of the command line: ``timeout_s must be positive`` ->
    ``--timeout must be positive``."""
    for name in sorted(names, key=len, reverse=True):
        message = re.sub(rf"(?<![\w-]){name}(?!\w)", flag(name), message)
    return message


def config_options(cls, on_error: Callable[[str], BaseException]):
    """Give a command one option per field of the dataclass ``cls``; the command receives the
    ``config`` built from them. A value the config refuses becomes ``on_error(message)``."""
    extra = _parameters(cls)
    names = [p.name for p in extra]

    def decorate(command):
        own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "config"]
        clash = set(names) & {p.name for p in own}
        if clash:
            raise TypeError(f"{command.__name__} has parameters named like {cls.__name__} fields: {sorted(clash)}")

        @functools.wraps(command)
        def wrapper(**kwargs):
            values = {name: kwargs.pop(name) for name in names}
            try:
                config = cls(**values)
            except ConfigError as exc:
                raise on_error(_in_flags(str(exc), names)) from None
            return command(config=config, **kwargs)

        wrapper.__signature__ = inspect.Signature([*own, *extra])
        return wrapper

    return decorate
