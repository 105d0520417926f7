"""A GPU runner's CUDA context gets one hardware work queue where its problem's reference ran its GPU
work on one stream, else the judge's own setting (work_queues.py), decided by the judge from a
profile of the reference, once per problem; a pool may set a number for every runner instead
(PoolConfig.runner_work_queues)."""

import os
from types import SimpleNamespace
from typing import ClassVar

import pytest

from tritongym.env.local import PoolConfig, device_slots
from tritongym.errors import ConfigError
from tritongym.evaluate.judge import work_queues as wq
from tritongym.evaluate.judge.runners import RunnerSupply
from tritongym.evaluate.judge.zygote import REQUEST

DEFAULT_STREAM = 7


def test_only_gpu_work_counts_toward_the_streams_of_a_profile():
    records = [("kernel", DEFAULT_STREAM), ("gpu_memcpy", DEFAULT_STREAM), ("gpu_memset", DEFAULT_STREAM)]
    assert wq.work_streams(records) == {DEFAULT_STREAM}
    assert wq.work_streams([*records, ("gpu_user_annotation", 20)]) == {DEFAULT_STREAM}  # a span, not work
    assert wq.work_streams([*records, ("kernel", 20)]) == {DEFAULT_STREAM, 20}  # a library's stream of its own


def test_one_queue_only_where_the_reference_ran_on_one_stream():
    assert wq.queues_for({DEFAULT_STREAM}) == wq.ONE_QUEUE
    assert wq.queues_for({DEFAULT_STREAM, 20}) == wq.JUDGES_OWN  # cuDNN's RNNs, some convolutions
    assert wq.queues_for(set()) == wq.JUDGES_OWN  # no GPU work seen: nothing to go by
    assert wq.queues_for(None) == wq.JUDGES_OWN  # the profiler could not say
    assert wq.queues_for({DEFAULT_STREAM, 20}, override=1) == 1  # the pool's number, whatever ran
    assert wq.queues_for({DEFAULT_STREAM}, override=8) == 8


def test_a_spare_of_the_judges_own_setting_serves_every_job_and_a_one_queue_spare_only_one_queue_jobs():
    assert wq.fits(wq.ONE_QUEUE, wq.ONE_QUEUE) and wq.fits(wq.JUDGES_OWN, wq.JUDGES_OWN)
    assert wq.fits(wq.JUDGES_OWN, wq.ONE_QUEUE)  # made as the reference's context was: biases nothing
    assert not wq.fits(wq.ONE_QUEUE, wq.JUDGES_OWN)  # would serialise the library's streams


def test_the_judge_decides_once_per_problem_and_forks_the_next_spare_for_the_last_jobs_problem():
    choice = wq.QueueChoice()
    single, multi = wq.problem_key("single", "Model"), wq.problem_key("multi", "Model")
    assert single != wq.problem_key("single", "Other")  # the entry point is part of the problem
    assert not choice.known(single) and choice.for_problem(single) == wq.JUDGES_OWN  # never profiled
    assert choice.predicted == wq.ONE_QUEUE  # the first spare: most problems run on one stream
    choice.decide(single, {DEFAULT_STREAM})
    choice.decide(multi, {DEFAULT_STREAM, 20})
    assert choice.known(single) and choice.for_problem(single) == wq.ONE_QUEUE
    assert choice.for_problem(multi) == wq.JUDGES_OWN
    assert choice.profile_ended is not None  # a timing waits for CUPTI to go (settle_s)
    forced = wq.QueueChoice(override=1)
    assert forced.known(multi) and forced.for_problem(multi) == 1 and forced.predicted == 1


def test_a_spare_that_does_not_fit_the_job_is_given_up_and_one_that_does_is_kept():
    supply = RunnerSupply.__new__(RunnerSupply)  # no zygote: only the spare's bookkeeping
    one_queue = SimpleNamespace(queues=wq.ONE_QUEUE)
    supply.spare = one_queue
    assert supply.unfit_spare(wq.ONE_QUEUE) is None and supply.spare is one_queue
    assert supply.unfit_spare(wq.JUDGES_OWN) is one_queue and supply.spare is None
    assert supply.unfit_spare(wq.JUDGES_OWN) is None  # no spare: nothing to give up
    own = supply.spare = SimpleNamespace(queues=wq.JUDGES_OWN)
    assert supply.unfit_spare(wq.ONE_QUEUE) is None and supply.spare is own


def test_a_gpu_runner_gets_the_queues_asked_for_and_a_cpu_runner_nothing():
    for device in ("cuda", "cuda:0", "cuda:1"):
        assert wq.runner_env(1, device) == {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}
        assert wq.runner_env(wq.JUDGES_OWN, device) == {}  # the judge's environment, as the reference runs
    assert wq.runner_env(1, "cpu") == {}
    assert REQUEST.unpack(REQUEST.pack(b"f", 1001, 1)) == (b"f", 1001, 1)  # the zygote's fork request carries it


class _Event:
    def __init__(self, kind: str, stream: int, on_device: bool = True):
        self._kind, self._stream, self._on_device = kind, stream, on_device

    def device_type(self):
        import torch

        return torch.autograd.DeviceType.CUDA if self._on_device else torch.autograd.DeviceType.CPU

    def activity_type(self):
        return self._kind

    def device_resource_id(self):
        return self._stream


class _Profiler:
    """torch.profiler.profile's part StreamWatch reads, with the records a test gives it."""

    events: ClassVar[list] = []

    def __init__(self, activities):
        self.profiler = SimpleNamespace(kineto_results=SimpleNamespace(events=lambda: list(self.events)))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


@pytest.fixture
def fake_profile(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.profiler, "profile", _Profiler)
    monkeypatch.delenv(wq.TEARDOWN_ENV, raising=False)
    return _Profiler


def test_the_stream_watch_reads_the_streams_of_the_forwards_gpu_work(fake_profile):
    fake_profile.events = [_Event("kernel", DEFAULT_STREAM), _Event("cpu_op", 99, on_device=False)]
    with wq.StreamWatch("cuda") as watch:
        pass
    assert watch.streams == {DEFAULT_STREAM}
    assert os.environ[wq.TEARDOWN_ENV] == "1"  # CUPTI is finalized when the judge's profile ends
    fake_profile.events = [_Event("kernel", DEFAULT_STREAM), _Event("kernel", 20)]
    with wq.StreamWatch("cuda") as watch:
        pass
    assert wq.queues_for(watch.streams) == wq.JUDGES_OWN


def test_the_forwards_own_failure_passes_through_the_watch_and_leaves_the_streams_unknown(fake_profile):
    fake_profile.events = [_Event("kernel", DEFAULT_STREAM)]
    with pytest.raises(ZeroDivisionError), wq.StreamWatch("cuda") as watch:
        1 / 0  # noqa: B018
    assert watch.streams is None


def test_a_profiler_that_cannot_start_leaves_the_streams_unknown_and_the_forward_runs(monkeypatch):
    import torch

    def broken(activities):
        raise RuntimeError("CUPTI unavailable")

    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.profiler, "profile", broken)
    ran = []
    with wq.StreamWatch("cuda") as watch:
        ran.append(1)
    assert ran == [1] and watch.streams is None and wq.queues_for(watch.streams) == wq.JUDGES_OWN


def test_the_pool_passes_its_runners_queues_to_every_gpu_judge(monkeypatch):
    monkeypatch.setattr("tritongym.env.local.cuda_device_count", lambda: 2)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    slots = device_slots(PoolConfig(devices="cuda", sandboxes_per_device=2, runner_work_queues=1))
    assert len(slots) == 4 and all(env[wq.OVERRIDE_ENV] == "1" for _, env in slots)
    assert all(wq.OVERRIDE_ENV not in env for _, env in device_slots(PoolConfig(devices="cuda")))  # per problem


def test_every_gpu_judge_gets_the_scaled_launch_queue_unless_the_pool_says_none(monkeypatch):
    monkeypatch.setattr("tritongym.env.local.cuda_device_count", lambda: 2)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    slots = device_slots(PoolConfig(devices="cuda", sandboxes_per_device=2))
    assert len(slots) == 4 and all(env[wq.LAUNCH_QUEUE_SCALE_ENV] == wq.LAUNCH_QUEUE_SCALE for _, env in slots)
    assert wq.LAUNCH_QUEUE_SCALE_ENV == "CUDA_SCALE_LAUNCH_QUEUES" and wq.LAUNCH_QUEUE_SCALE == "4x"
    halved = device_slots(PoolConfig(devices="cuda:1", launch_queue_scale="2x"))
    assert [env[wq.LAUNCH_QUEUE_SCALE_ENV] for _, env in halved] == ["2x"]
    assert all(
        wq.LAUNCH_QUEUE_SCALE_ENV not in env
        for _, env in device_slots(PoolConfig(devices="cuda", launch_queue_scale=None))
    )
    assert all(env == {} for _, env in device_slots(PoolConfig(devices="cpu", sandboxes_per_device=2)))


def test_one_evaluation_on_a_gpu_gets_the_pools_launch_queue_scale(monkeypatch):
    """``evaluate`` outside a pool (resolve_device) times a forward of many launches as a pool's judge
    does: its sandbox's environment carries the same scaled queue; the CPU's carries nothing."""
    from tritongym.evaluate import evaluator

    monkeypatch.setattr(evaluator, "cuda_device_count", lambda: 2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert evaluator.resolve_device("cuda:1") == (
        "cuda",
        {"CUDA_VISIBLE_DEVICES": "5", wq.LAUNCH_QUEUE_SCALE_ENV: wq.LAUNCH_QUEUE_SCALE},
    )
    assert evaluator.resolve_device("cpu") == ("cpu", {})


@pytest.mark.parametrize("scale", ["1x", "0.5x", "8x", ""])
def test_a_launch_queue_scale_the_pool_does_not_take_is_refused(scale):
    with pytest.raises(ConfigError, match="launch_queue_scale"):
        PoolConfig(launch_queue_scale=scale)


def test_the_judges_environment_reaches_its_processes(tmp_path):
    from tritongym.evaluate.sandbox import sandbox_env

    env = sandbox_env(tmp_path, interpret=False, extra={wq.LAUNCH_QUEUE_SCALE_ENV: "4x"})
    assert env[wq.LAUNCH_QUEUE_SCALE_ENV] == "4x"  # the judge's; its twin, zygote and runners inherit it


@pytest.mark.parametrize("queues", [0, 33, -1])
def test_a_number_of_queues_the_driver_does_not_take_is_refused(queues):
    with pytest.raises(ConfigError, match="runner_work_queues"):
        PoolConfig(runner_work_queues=queues)
    with pytest.raises(ValueError, match=wq.OVERRIDE_ENV):
        wq.parse_override(str(queues))
    assert wq.parse_override("") is None and wq.parse_override(None) is None and wq.parse_override("1") == 1


def test_a_timing_starts_a_settling_time_after_the_judges_last_profile():
    assert wq.settle_s(None, 100.0) == 0.0  # no profile ran in this judge
    assert wq.settle_s(100.0, 100.25) == pytest.approx(wq.SETTLE_S - 0.25)
    assert wq.settle_s(100.0, 100.0 + wq.SETTLE_S + 0.1) == 0.0
