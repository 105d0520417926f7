"""The reference, judge side: model, init inputs, and per trial fresh inputs with the native and
float64 outputs, computed from secret seeds before any runner sees anything of the job."""

from __future__ import annotations

import copy
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from tritongym.evaluate.guards import aliasing
from tritongym.evaluate.judge.feedback import Failure, detail, short
from tritongym.evaluate.judge.tree import clone, detach, map_tensors, to_double
from tritongym.evaluate.result import Verdict


def split_init_inputs(value: Any) -> tuple[list, dict]:
    """KernelBook's ``[args, kwargs]`` form, or KernelBench's plain list of positional arguments."""
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and isinstance(value[0], (list, tuple))
        and isinstance(value[1], dict)
    ):
        return list(value[0]), dict(value[1])
    return list(value), {}


@dataclass
class Trial:
    inputs: list
    """The inputs as generated (never given to anyone: each call gets copies)."""
    expected: Any
    expected64: Any
    inputs_after: list
    """The inputs after the reference's forward (equal to ``inputs`` unless it mutates them)."""
    inputs_after64: list | None
    alias: str
    """What the reference's output shares memory with ('input argument 0'), or ''."""


class Reference:
    def __init__(self, source: str, entry_point: str, path: Path, device: torch.device, float64: bool):
        self.device = device
        path.write_text(source, encoding="utf-8")
        try:
            spec = importlib.util.spec_from_file_location("reference", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules["reference"] = module
            spec.loader.exec_module(module)
            cls = getattr(module, entry_point, None)
            if cls is None:
                raise LookupError(f"the problem defines no class {entry_point!r}")
            self.module = module
            with torch.device(device):
                self.init_args, self.init_kwargs = split_init_inputs(module.get_init_inputs())
                self.model = cls(*self.init_args, **self.init_kwargs).to(device).eval()
        except Exception as exc:
            raise self._broken(exc) from exc
        self.float64_note = ""
        self.model64 = copy.deepcopy(self.model).double() if float64 else None

    @staticmethod
    def _broken(exc: BaseException) -> Failure:
        return Failure(Verdict.INFRASTRUCTURE_ERROR, f"The reference problem itself failed: {short(exc)}", detail(exc))

    def inputs(self, seed: int) -> list:
        """Fresh inputs from a seed, on the device."""
        torch.manual_seed(seed)
        try:
            with torch.device(self.device):
                inputs = list(self.module.get_inputs())
        except Exception as exc:
            raise self._broken(exc) from exc
        return map_tensors(inputs, lambda t: t.to(self.device))

    def trial(self, seed: int) -> Trial:
        inputs = self.inputs(seed)
        try:
            with torch.no_grad():
                given = clone(inputs)
                out = self.model(*given)
                alias = aliasing(out, given, self.model) or ""
                out = detach(clone(out))
                out64, after64 = None, None
                if self.model64 is not None:
                    try:
                        given64 = to_double(inputs)
                        out64 = detach(clone(self.model64(*given64)))
                        after64 = given64
                    except Exception as exc:  # some ops have no float64 kernel: fall back
                        self.model64 = None
                        self.float64_note = f"float64 reference unavailable ({short(exc, 200)})"
        except Failure:
            raise
        except Exception as exc:
            raise self._broken(exc) from exc
        return Trial(inputs, out, out64, given, after64, alias)
