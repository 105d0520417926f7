"""The top-level API: what the README imports from ``tritongym`` is there, and importing is cheap."""

import subprocess
import sys

import pytest

import tritongym


def test_top_level_names_import_lazily():
    code = (
        "import sys, tritongym\n"
        "assert 'torch' not in sys.modules, 'import tritongym loaded torch'\n"
        "from tritongym import EvalConfig, HttpEnv, LocalEnv, RayEnv, Task, evaluate, load_problems\n"
        "assert 'ray' not in sys.modules, 'RayEnv imported ray before it was used'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_top_level_evaluate_is_called_as_the_readme_shows(monkeypatch):
    from tritongym import evaluate
    from tritongym.evaluate import evaluator

    monkeypatch.setattr("tritongym.evaluate.evaluate", lambda *args, **kwargs: ("judged", args, kwargs))
    assert evaluate("problem", "source", config=None) == ("judged", ("problem", "source"), {"config": None})
    assert evaluator.evaluate.__module__ == "tritongym.evaluate.evaluator"


def test_every_exported_name_resolves_to_its_module_object():
    from tritongym.env.local import LocalEnv
    from tritongym.evaluate.config import EvalConfig

    assert tritongym.LocalEnv is LocalEnv and tritongym.EvalConfig is EvalConfig
    assert tritongym.evaluate.EvalConfig is EvalConfig and callable(tritongym.evaluate)
    for name in tritongym.__all__:
        assert getattr(tritongym, name) is not None
    assert set(tritongym.__all__) <= set(dir(tritongym))
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        tritongym.Nothing  # noqa: B018
