"""One convention for documenting configs: each dataclass field carries its help text in its metadata.

``documented("What it does.", default=...)`` declares a field; ``field_help(Config, "name")`` reads it
back (the CLI builds its options from it, the docs quote it).
"""

from __future__ import annotations

from dataclasses import field, fields


def documented(text: str, **kwargs):
    """A dataclass field whose help text is ``text`` (keyword arguments as for ``dataclasses.field``)."""
    return field(metadata={"help": text}, **kwargs)


def field_help(cls, name: str) -> str:
    """The help text of field ``name`` of the dataclass ``cls``."""
    for f in fields(cls):
        if f.name == name:
            return f.metadata.get("help", "")
    raise KeyError(f"{cls.__name__} has no field {name!r}")
