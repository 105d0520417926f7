"""Triton's compiler warmed in the zygote (compiler_warmth.py): a compile for a GPU target with no
GPU, which leaves nothing behind, and a zygote that goes on forking runners whatever it was asked to
warm for."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from tritongym.evaluate.judge import compiler_warmth
from tritongym.evaluate.judge.runners import RunnerSupply


def test_the_warm_compile_needs_no_gpu_and_leaves_no_cache(monkeypatch, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    scratch = []
    real = compiler_warmth.tempfile.mkdtemp

    def recorded(**kwargs):
        scratch.append(real(**kwargs))
        return scratch[-1]

    monkeypatch.setattr(compiler_warmth.tempfile, "mkdtemp", recorded)
    compiler_warmth.warm_compiler(90)
    assert os.environ["TRITON_CACHE_DIR"] == str(cache)
    assert list(cache.iterdir()) == []
    assert len(scratch) == 1 and not os.path.exists(scratch[0])


def warm_scratch(*roots: Path) -> set[Path]:
    return {path for root in roots for path in root.glob("tritongym-warm-*")}


def test_a_zygote_asked_to_warm_for_any_target_still_forks_runners(monkeypatch, tmp_path):
    """It goes on cold after a target LLVM aborts on, and the aborted probe leaves no scratch."""
    monkeypatch.setenv("TRITONGYM_RUNNER_USER", "same")
    env = dict(os.environ) | {"TRITON_INTERPRET": "1", "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    roots = (tmp_path, Path(tempfile.gettempdir()))
    before = warm_scratch(*roots)
    supply = RunnerSupply("cpu", env, str(tmp_path), tmp_path)
    try:
        supply.launch()
        supply.zygote.wait_started()
        supply.zygote.warm(1)  # no such target: the zygote says so and goes on, cold
        supply.zygote.warm(90)
        supply.replenish()
        runner = supply.take(time.monotonic() + 120)
        runner.ping(5.0)
        runner.kill()
        assert supply.zygote.alive
        assert warm_scratch(*roots) <= before, "the aborted probe's compile left its scratch"
    finally:
        supply.close()
