"""A GPU runner's CUDA context has the hardware work queues the pool asks for (PoolConfig.runner_work_queues,
runners.runner_device_env), else the driver's default; the judge's own context always keeps the default."""

import pytest

from tritongym.env.local import PoolConfig, device_slots
from tritongym.errors import ConfigError
from tritongym.evaluate.judge.runners import runner_device_env


def test_a_gpu_runner_gets_the_queues_asked_for_and_a_cpu_runner_nothing():
    for device in ("cuda", "cuda:0", "cuda:1"):
        assert runner_device_env(device, "1") == {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}
        assert runner_device_env(device, None) == {}  # the driver's default, as PyTorch runs
    assert runner_device_env("cpu", "1") == {}


def test_the_pool_passes_its_runners_queues_to_every_gpu_judge(monkeypatch):
    monkeypatch.setattr("tritongym.env.local.cuda_device_count", lambda: 2)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    slots = device_slots(PoolConfig(devices="cuda", sandboxes_per_device=2, runner_work_queues=1))
    assert len(slots) == 4 and all(env["TRITONGYM_RUNNER_WORK_QUEUES"] == "1" for _, env in slots)
    assert all("TRITONGYM_RUNNER_WORK_QUEUES" not in env for _, env in device_slots(PoolConfig(devices="cuda")))


@pytest.mark.parametrize("queues", [0, 33, -1])
def test_a_number_of_queues_the_driver_does_not_take_is_refused(queues):
    with pytest.raises(ConfigError, match="runner_work_queues"):
        PoolConfig(runner_work_queues=queues)
