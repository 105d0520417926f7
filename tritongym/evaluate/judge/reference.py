"""The reference, judge side: model, init inputs, and per trial fresh inputs with the native and
float64 outputs, computed from secret seeds in the judge; each trial is computed when it is needed
and dropped once judged, so one trial's tensors at most are held (memory.py)."""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from tritongym.evaluate.guards import aliasing
from tritongym.evaluate.judge import memory
from tritongym.evaluate.judge.feedback import Failure, detail, short
from tritongym.evaluate.judge.memory import free_cached, is_out_of_memory, nbytes
from tritongym.evaluate.judge.tree import clone, detach, map_tensors, tensor_leaves
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


HUB_MARKS = ("huggingface.co", "huggingface_hub", "HF_HUB_OFFLINE", "offline mode")
"""Text of an error (or of the module of its class) that says a download from the Hugging Face Hub
failed: transformers' ``from_pretrained`` without the network, or offline with nothing cached."""


def downloads(exc: BaseException) -> bool:
    """Whether ``exc``, or an exception it was raised from, is a failed download from the Hugging
    Face Hub."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = f"{type(exc).__module__} {exc}"
        if any(mark in text for mark in HUB_MARKS):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


@dataclass
class Trial:
    inputs: list
    """The inputs as generated (never given to anyone: each call gets copies)."""
    expected: Any
    expected64: Any
    inputs_after: list
    """The inputs after the reference's forward (``inputs`` itself unless it mutates them)."""
    inputs_after64: list | None
    """The float64 inputs after the forward, where it mutates them; else None."""
    alias: str
    """What the reference's output shares memory with ('input argument 0'), or ''."""


def _versions(value: Any) -> list[int]:
    """The in-place version counters of a nested value's tensors (an in-place op bumps them)."""
    return [t._version for t in tensor_leaves(value)]


def _to64(value: Any, device: torch.device) -> Any:
    return map_tensors(value, lambda t: t.to(device=device, dtype=torch.float64 if t.is_floating_point() else t.dtype))


class Reference:
    """The problem's model in the judge. Trials are computed one at a time (``trial``), each only
    when it is needed, so that the judge never holds more than one trial's tensors (memory.py)."""

    def __init__(
        self, source: str, entry_point: str, path: Path, device: torch.device, float64: bool, seed: int | None = None
    ) -> None:
        self.device = device
        self.seed = secrets.randbits(63) if seed is None else seed
        """torch's seed right before the model's constructor (the runner builds the solution under it)."""
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
            self.cls = cls
            with torch.device(device):
                self.init_args, self.init_kwargs = split_init_inputs(module.get_init_inputs())
                torch.manual_seed(self.seed)
                self.model = cls(*self.init_args, **self.init_kwargs).to(device).eval()
        except Exception as exc:
            if is_out_of_memory(exc):
                raise
            raise self._broken(exc) from exc
        self.float64_note = ""
        self.float64_device = device
        """Where the float64 reference runs: the device, or the host once the device could not hold it."""
        self.model64 = self._model64() if float64 else None

    def _model64(self) -> torch.nn.Module:
        try:
            return copy.deepcopy(self.model).double()
        except Exception as exc:
            if not is_out_of_memory(exc) or self.device.type == "cpu":
                raise
        self.model.cpu()  # the device cannot hold a float64 copy of the parameters: make it on the host
        try:
            model64 = copy.deepcopy(self.model).double()
        finally:
            self.model.to(self.device)
        self.float64_device = torch.device("cpu")
        return model64

    @staticmethod
    def _broken(exc: BaseException) -> Failure:
        why = f"The reference problem itself failed: {short(exc)}"
        if downloads(exc):
            why = (
                "The reference problem downloads files from the Hugging Face Hub (pretrained weights or a "
                "config: KernelBench's level 4 does), and this machine could not get them. Evaluate it where "
                "the Hub is reachable, or with the files already in the local Hugging Face cache (HF_HOME). "
                f"Its error: {short(exc)}"
            )
        return Failure(Verdict.INFRASTRUCTURE_ERROR, why, detail(exc))

    def meta_footprint(self, float64: bool) -> memory.Footprint | None:
        """The job's size before any trial is made: the problem built and run on PyTorch's meta device
        (shapes only: nothing is allocated or computed). None where it does not run there (an op
        without a meta kernel, a constructor that makes host tensors, a forward reading values)."""
        try:
            with torch.device("meta"), torch.no_grad():
                init = map_tensors(self.init_args, lambda t: t.to("meta"))
                kwargs = {k: map_tensors(v, lambda t: t.to("meta")) for k, v in self.init_kwargs.items()}
                model = self.cls(*init, **kwargs).eval()
                inputs = list(self.module.get_inputs())
                output = model(*inputs)
            leaves = [*tensor_leaves(inputs), *tensor_leaves(output), *model.state_dict().values()]
            if not all(t.device.type == "meta" for t in leaves if isinstance(t, torch.Tensor)):
                return None
            return memory.Footprint.of(model, inputs, output, float64)
        except Exception:  # the meta device is a shortcut: the trial's own sizes are the measure
            return None

    def inputs(self, seed: int) -> list:
        """Fresh inputs from a seed, on the device."""
        torch.manual_seed(seed)
        try:
            with torch.device(self.device):
                inputs = list(self.module.get_inputs())
        except Exception as exc:
            if is_out_of_memory(exc):
                raise
            raise self._broken(exc) from exc
        return map_tensors(inputs, lambda t: t.to(self.device))

    def trial(self, seed: int, watch: contextlib.AbstractContextManager | None = None) -> Trial:
        """One trial: fresh inputs, the reference's output on a copy of them, and its float64 output.
        The inputs after the forward are kept apart only where the reference changed them in place.
        ``watch``: a context manager around the native forward alone (work_queues.StreamWatch)."""
        inputs = self.inputs(seed)
        try:
            with torch.no_grad():
                given = clone(inputs)
                before = _versions(given)
                with watch or contextlib.nullcontext():
                    out = self.model(*given)
                alias = aliasing(out, given, self.model) or ""
                out = detach(clone(out) if alias else out)
                after = given if _versions(given) != before else inputs
                del given
        except Failure:
            raise
        except Exception as exc:
            if is_out_of_memory(exc):
                raise
            raise self._broken(exc) from exc
        out64, after64 = self._float64(inputs, 2 * (nbytes(inputs) + nbytes(out)))
        memory.give_back(self.device, nbytes(inputs) + nbytes(out))
        return Trial(inputs, out, out64, after, after64, alias)

    def _float64(self, inputs: list, size64: int) -> tuple[Any, list | None]:
        """The float64 output and inputs after (None where unchanged), on the device, or on the host
        where the device cannot hold them; (None, None) with ``float64_note`` set where neither can
        or the model has no float64 kernel for one of its ops. ``size64``: the inputs' and output's
        bytes in float64 (at most)."""
        while self.model64 is not None:
            place = self.float64_device
            try:
                with torch.no_grad():
                    self.model64.to(place)
                    given64 = _to64(inputs, place)
                    before = _versions(given64)
                    out64 = self.model64(*given64)
                    out64 = detach(clone(out64) if aliasing(out64, given64, self.model64) else out64)
                    return out64, (given64 if _versions(given64) != before else None)
            except Exception as exc:
                given64 = out64 = None
                if not is_out_of_memory(exc):  # some ops have no float64 kernel
                    self._without_float64(f"float64 reference unavailable ({short(exc, 200)})")
                elif place.type != "cpu":  # the device cannot hold it: the host may
                    free_cached(place)
                    self._to_host(size64)
                else:
                    self._without_float64(f"float64 reference does not fit in memory ({short(exc, 200)})")
        return None, None

    def _to_host(self, size64: int) -> None:
        available = memory.host_available_bytes()
        if available < memory.HOST_FLOAT64_FACTOR * size64:
            self._without_float64(
                f"float64 reference does not fit in memory (neither on the GPU nor in the host's "
                f"{available / 2**30:.1f} GiB available)"
            )
        else:
            self.float64_device = torch.device("cpu")

    def _without_float64(self, note: str) -> None:
        self.model64 = None
        self.float64_note = note
