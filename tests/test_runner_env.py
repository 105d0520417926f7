"""A GPU runner's CUDA context is made with one hardware work queue (runners.runner_device_env):
cheaper to make while several runners start at once; the judge's own context keeps the default."""

from tritongym.evaluate.judge.runners import runner_device_env


def test_a_gpu_runner_gets_one_work_queue_and_a_cpu_runner_nothing():
    for device in ("cuda", "cuda:0", "cuda:1"):
        assert runner_device_env(device) == {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}
    assert runner_device_env("cpu") == {}
