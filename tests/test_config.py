import pytest

from tritongym.env.local import PoolConfig
from tritongym.env.ray_backend import RayConfig
from tritongym.errors import ConfigError
from tritongym.evaluate import EvalConfig, EvalResult, Verdict
from tritongym.evaluate.result import ErrorStats, Finding, KernelShare, TimingStats


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"trials": 0}, "trials must be at least 1"),
        ({"tolerance": "loose"}, "tolerance must be"),
        ({"timeout_s": 0}, "timeout_s must be positive"),
        ({"atol": -1.0}, "atol must not be negative"),
        ({"scale_floor": -1e-5}, "scale_floor must not be negative"),
        ({"device": "tpu"}, "device must be"),
        ({"baseline": "jit"}, "baseline must be"),
        ({"timing_target": 0}, "timing_target must be positive"),
        ({"timing_budget_s": -1}, "timing_budget_s must be positive"),
    ],
)
def test_invalid_settings_are_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        EvalConfig(**kwargs)


def test_every_field_is_documented():
    from dataclasses import fields

    for f in fields(EvalConfig):
        assert len(EvalConfig.help(f.name)) > 20


def test_result_round_trips_through_json_and_rejects_unknown_fields():
    import json

    result = EvalResult(
        problem="p",
        verdict=Verdict.MISMATCH,
        feedback="f",
        errors=ErrorStats("output", 1.0, 2.0, 0.1, [1, 2], 3.0, 2.0, 4, 10, 1e-7),
        findings=[Finding("tolerance", "m")],
        speedup=1.5,
        timing=TimingStats("eager", 3.0, [2.9, 3.1], 2.0, [1.9, 2.1], [1.45, 1.55], 0.02, 40, "target", 5, 1 << 28),
        coverage=0.75,
        kernels=[KernelShare("k", 1, 3.0, 0.75, True), KernelShare("gemm", 1, 1.0, 0.25, False)],
    )
    again = EvalResult.from_dict(json.loads(result.to_json()))
    assert again == result
    with pytest.raises(ValueError, match="unknown result fields"):
        EvalResult.from_dict({**result.to_dict(), "reward": 100.0})
    with pytest.raises(ValueError):
        EvalResult.from_dict({**result.to_dict(), "verdict": "excellent"})


def test_compiled_follows_the_verdict():
    assert Verdict.MISMATCH.compiled and Verdict.TIMEOUT.compiled
    assert not Verdict.COMPILE_ERROR.compiled and not Verdict.SYNTAX_ERROR.compiled


def test_every_config_documents_its_fields_the_same_way():
    from dataclasses import fields

    from tritongym.config_doc import field_help
    from tritongym.rl import PolicyLossConfig

    service = pytest.importorskip("tritongym.env.service")
    for cls in (EvalConfig, PoolConfig, RayConfig, service.ServiceConfig, PolicyLossConfig):
        for f in fields(cls):
            assert len(field_help(cls, f.name)) > 15, (cls.__name__, f.name)
    with pytest.raises(KeyError, match="no field 'nope'"):
        field_help(PoolConfig, "nope")


@pytest.mark.parametrize(
    ("cls", "kwargs", "message"),
    [
        (PoolConfig, {"sandboxes_per_device": 0}, "sandboxes_per_device must be at least 1"),
        (PoolConfig, {"max_attempts": 0}, "max_attempts must be at least 1"),
        (RayConfig, {"num_workers": -1}, "num_workers must be at least 1"),
        (RayConfig, {"devices": "cuda:0"}, "on Ray"),
    ],
)
def test_pool_settings_are_checked_and_config_errors_are_value_errors(cls, kwargs, message):
    with pytest.raises(ValueError, match=message) as caught:
        cls(**kwargs)
    assert isinstance(caught.value, ConfigError)
