"""Values made safe to serialise anywhere: text that encodes as UTF-8 and numbers JSON allows.

Results carry text that a candidate controls (its exception messages, its output). A ``str`` may
hold lone UTF-16 surrogates (a JSON escape such as ``"\\ud800"`` decodes to one) that no UTF-8
encoder accepts, and numbers may be NaN or infinite, which strict JSON rejects.
"""

from __future__ import annotations

import math
from typing import Any


def clean_text(text: str) -> str:
    """``text`` unchanged if it encodes as UTF-8, else with each unencodable character as ``?``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="replace").decode("utf-8")
    return text


def json_safe(value: Any, finite: bool = False) -> Any:
    """A copy of a JSON-like value with every string cleaned (keys too); with ``finite``, NaN and
    infinities become None."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {json_safe(k, finite) if isinstance(k, str) else k: json_safe(v, finite) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v, finite) for v in value]
    if finite and isinstance(value, float) and not math.isfinite(value):
        return None
    return value
