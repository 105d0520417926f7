"""The judge's memory: one trial at a time, the float64 reference where it fits, the timing batch
sized from free memory, and out-of-memory errors attributed to whoever ran out (judge: an
infrastructure error that says what the problem needed; runner: the candidate's out_of_memory)."""

from __future__ import annotations

import socket
import types

import pytest
import torch

from tritongym.evaluate.compare import Tolerance
from tritongym.evaluate.judge import judge, memory, trials
from tritongym.evaluate.judge import protocol as p
from tritongym.evaluate.judge.feedback import Failure
from tritongym.evaluate.judge.memory import Footprint, is_out_of_memory, judge_failure, timing_batch
from tritongym.evaluate.judge.reference import Reference
from tritongym.evaluate.result import Verdict

CPU = torch.device("cpu")
GIB = 1 << 30


def reference(tmp_path, forward: str = "return torch.tanh(x)", float64: bool = True, n: int = 64) -> Reference:
    source = (
        "import torch\n\n\nclass Model(torch.nn.Module):\n"
        f"    def forward(self, x):\n        {forward}\n\n\n"
        f"def get_inputs():\n    return [torch.randn({n})]\n\n\ndef get_init_inputs():\n    return []\n"
    )
    return Reference(source, "Model", tmp_path / "reference.py", CPU, float64=float64)


@pytest.mark.parametrize(
    ("exc", "oom"),
    [
        (MemoryError(), True),
        (torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 16.00 GiB"), True),
        (RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory"), True),
        (RuntimeError("shape mismatch"), False),
        (ValueError("out of memory"), False),  # only allocation errors' types count
    ],
)
def test_allocation_failures_are_told_apart_from_other_errors(exc, oom):
    assert is_out_of_memory(exc) is oom


def test_footprint_is_a_documented_multiple_of_the_problem():
    fp = Footprint(inputs=3 * GIB, outputs=GIB, params=GIB, float64=True)
    assert fp.correctness == GIB + 2 * GIB + 2 * 3 * GIB + GIB + 2 * GIB  # P + P64 + 2 I + O + O64
    assert Footprint(3 * GIB, GIB, 0, float64=False).correctness == 7 * GIB
    assert Footprint(3 * GIB, GIB, 0, float64=True, mutates=True).correctness == 9 * GIB + 3 * 3 * GIB  # + I + I64
    assert fp.timing(2) == 2 * (2 * 3 * GIB + 3 * GIB)  # 2 I + 3 O per call
    assert Footprint(3 * GIB, GIB, 0, float64=False, mutates=True).timing(1) == 3 * 3 * GIB + 3 * GIB  # + I
    assert "3.00 GiB" in fp.describe() and "12.00 GiB while it checks a trial" in fp.describe()
    assert "9.00 GiB per call of a timing batch" in fp.describe()


@pytest.mark.parametrize(
    ("available", "wanted", "calls"),
    [(200 * GIB, 64, 64), (100 * GIB, 8, 8), (20 * GIB, 64, 16), (GIB, 64, 1)],
    ids=["plenty", "wanted-caps", "half-of-free", "one-fits-whole"],
)
def test_timing_batch_is_sized_from_free_memory(available, wanted, calls):
    fp = Footprint(inputs=GIB // 8, outputs=GIB // 8, params=0, float64=False)  # 0.625 GiB per call
    assert timing_batch(fp, int(available), wanted) == calls


def test_a_timing_batch_that_cannot_fit_one_call_is_the_judges_failure_with_sizes():
    fp = Footprint(inputs=16 * GIB, outputs=16 * GIB, params=0, float64=False)
    with pytest.raises(Failure) as caught:
        timing_batch(fp, 40 * GIB, 64)
    assert caught.value.verdict is Verdict.INFRASTRUCTURE_ERROR
    assert "80.00 GiB" in caught.value.feedback and "40.00 GiB are available" in caught.value.feedback
    assert "not the solution's fault" in caught.value.feedback


def test_a_kernelbench_size_problem_gets_a_timing_batch_on_an_h200():
    # 16 GiB in, 16 GiB out (level 1 activations at their own size): one call holds 80 GiB, which
    # fits beside the model and the runner on a 141 GB GPU (it needed 144 GiB before)
    fp = Footprint(inputs=16 * GIB, outputs=16 * GIB, params=0, float64=True)
    assert timing_batch(fp, 100 * GIB, 64) == 1


# --- the reference: one trial at a time, float64 where it fits --------------------------------------


def test_a_trial_keeps_no_copy_of_inputs_the_reference_leaves_unchanged(tmp_path):
    trial = reference(tmp_path).trial(1)
    assert trial.inputs_after is trial.inputs and trial.inputs_after64 is None
    assert torch.equal(trial.expected, torch.tanh(trial.inputs[0]))
    assert trial.expected64.dtype is torch.float64


def test_a_reference_that_mutates_its_input_keeps_the_mutated_copies_apart(tmp_path):
    trial = reference(tmp_path, "return torch.relu_(x)").trial(1)
    assert trial.inputs_after is not trial.inputs
    assert torch.equal(trial.inputs_after[0], torch.relu(trial.inputs[0]))
    assert (trial.inputs[0] < 0).any()  # the generated inputs themselves are untouched
    assert torch.equal(trial.inputs_after64[0], torch.relu(trial.inputs[0].double()))
    assert trial.alias == "input argument 0"


def test_the_float64_reference_moves_to_the_host_when_the_device_cannot_hold_it(tmp_path, monkeypatch):
    ref = reference(tmp_path)
    ref.float64_device = torch.device("meta")  # stands for a GPU that runs out of memory
    forward = ref.model64.forward

    def device_full(x):
        if x.device.type == "meta":
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 32.00 GiB")
        return forward(x)

    monkeypatch.setattr(ref.model64, "forward", device_full)
    monkeypatch.setattr(memory, "host_available_bytes", lambda: 64 * GIB)
    trial = ref.trial(1)
    assert ref.float64_device == CPU and not ref.float64_note
    assert torch.equal(trial.expected64, torch.tanh(trial.inputs[0].double()))


def test_the_float64_reference_is_given_up_with_a_note_when_the_host_has_no_room_either(tmp_path, monkeypatch):
    ref = reference(tmp_path)
    ref.float64_device = torch.device("meta")
    monkeypatch.setattr(ref.model64, "forward", lambda x: (_ for _ in ()).throw(torch.OutOfMemoryError("CUDA oom")))
    monkeypatch.setattr(memory, "host_available_bytes", lambda: 1024)
    trial = ref.trial(1)
    assert trial.expected64 is None and ref.model64 is None
    assert "does not fit in memory" in ref.float64_note and "0.0 GiB available" in ref.float64_note


def test_a_host_out_of_memory_in_float64_gives_fixed_tolerances_not_a_crash(tmp_path, monkeypatch):
    ref = reference(tmp_path)
    monkeypatch.setattr(ref.model64, "forward", lambda x: (_ for _ in ()).throw(MemoryError()))
    trial = ref.trial(1)
    assert trial.expected64 is None and "does not fit in memory" in ref.float64_note


def test_the_reference_running_out_of_memory_is_not_called_a_broken_problem(tmp_path, monkeypatch):
    ref = reference(tmp_path)
    monkeypatch.setattr(ref.model, "forward", lambda x: (_ for _ in ()).throw(torch.OutOfMemoryError("CUDA oom")))
    with pytest.raises(torch.OutOfMemoryError):
        ref.trial(1)
    monkeypatch.setattr(ref.model, "forward", lambda x: (_ for _ in ()).throw(ValueError("bad problem")))
    with pytest.raises(Failure, match="The reference problem itself failed"):
        ref.trial(1)


# --- out-of-memory attribution --------------------------------------------------------------------


class FakeRunner:
    """Answers every Call with the given output (the candidate's honest answer)."""

    def __init__(self, outputs):
        self.outputs = outputs

    def children(self):
        return []


def fake_state(tmp_path, count: int, answer) -> judge.JobState:
    ctx = types.SimpleNamespace(device=CPU, gpu_lock=-1, channel=types.SimpleNamespace(stage=lambda name: None))
    state = judge.JobState(job=None, ctx=ctx, deadline=float("inf"))
    state.trials = count
    state.runner = FakeRunner(None)
    asked = []

    def ask(message, expect, max_payload=0):
        asked.append(message)
        return answer(message)

    state.ask = ask
    state.asked = asked
    return state


def honest(message: p.Call) -> p.Output:
    (x,) = message.args
    return p.Output(value=torch.tanh(x), inputs_after=[x.clone()], launches=1, off_stream=0, off_stream_ops=[],
                    compute={}, tampering=[], threads=[], alias="")  # fmt: skip


def test_trials_are_made_one_at_a_time_and_each_is_judged(tmp_path, monkeypatch):
    ref = reference(tmp_path)
    held = []
    make = ref.trial

    def counted(seed):
        held.append(sum(1 for t in made if t() is not None))
        trial = make(seed)
        made.append(__import__("weakref").ref(trial))
        return trial

    made: list = []
    monkeypatch.setattr(ref, "trial", counted)
    state = fake_state(tmp_path, 4, honest)
    outcome, last = judge.run_trials(state, ref, [counted(7)], Tolerance())
    assert outcome.verdict is Verdict.OK and outcome.passed == 4 and len(state.asked) == 4
    assert held == [0, 0, 0, 0]  # when a trial is made, no earlier one is still alive
    assert last is made[-1]()


def test_the_judges_out_of_memory_while_it_compares_an_answer_is_not_the_candidates_crash(tmp_path, monkeypatch):
    def full(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB")

    monkeypatch.setattr(trials, "compare_outputs", full)
    ref = reference(tmp_path)
    state = fake_state(tmp_path, 2, honest)
    with pytest.raises(torch.OutOfMemoryError):  # not Failure(CRASH): run_job reports it as the judge's
        judge.run_trials(state, ref, [ref.trial(1)], Tolerance())


def test_an_answer_that_cannot_be_judged_for_another_reason_stays_the_candidates_crash(tmp_path, monkeypatch):
    monkeypatch.setattr(trials, "compare_outputs", lambda *a, **k: (_ for _ in ()).throw(TypeError("odd value")))
    ref = reference(tmp_path)
    with pytest.raises(Failure) as caught:
        judge.run_trials(fake_state(tmp_path, 2, honest), ref, [ref.trial(1)], Tolerance())
    assert caught.value.verdict is Verdict.CRASH


def test_the_hollow_check_does_not_swallow_the_judges_out_of_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(judge, "compare_outputs", lambda *a, **k: (_ for _ in ()).throw(MemoryError()))
    ref = reference(tmp_path)
    trial = ref.trial(1)
    with pytest.raises(MemoryError):
        judge.output_still_correct([torch.tanh(trial.inputs[0])], trial, Tolerance())
    monkeypatch.setattr(judge, "compare_outputs", lambda *a, **k: (_ for _ in ()).throw(TypeError("odd")))
    assert judge.output_still_correct([torch.tanh(trial.inputs[0])], trial, Tolerance()) is False


def test_reading_an_answer_the_judge_has_no_memory_for_is_not_a_broken_protocol(monkeypatch):
    ours, theirs = socket.socketpair()
    with ours, theirs:
        p.send(theirs, p.HollowResult(value=torch.ones(1000)))

        def full(self, *args):
            raise MemoryError()

        monkeypatch.setattr(p._Decoder, "tensor", full)
        with pytest.raises(MemoryError):
            p.receive(ours, (p.HollowResult,), float("inf"), 1 << 20)
        p.send(theirs, p.HollowResult(value=torch.ones(10)))
        monkeypatch.setattr(p._Decoder, "tensor", lambda self, *a: (_ for _ in ()).throw(ValueError("bad")))
        with pytest.raises(p.ProtocolError):  # anything else the sender sent wrong is still its fault
            p.receive(ours, (p.HollowResult,), float("inf"), 1 << 20)


def test_run_job_reports_the_judges_out_of_memory_as_infrastructure_with_the_problems_size(monkeypatch):
    def evaluate(state):
        state.footprint = Footprint(inputs=16 * GIB, outputs=16 * GIB, params=0, float64=True)
        state.enter("trial 2")
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 16.00 GiB")

    monkeypatch.setattr(judge, "evaluate", evaluate)
    ctx = types.SimpleNamespace(device=CPU, gpu_lock=-1, channel=types.SimpleNamespace(stage=lambda name: None))
    job = types.SimpleNamespace(timeout_s=10.0)
    result = judge.run_job(ctx, job, 1000)
    assert result["verdict"] == Verdict.INFRASTRUCTURE_ERROR
    feedback = result["feedback"]
    assert "The judge ran out of" in feedback and "during trial 2" in feedback
    assert "one input set 16.00 GiB" in feedback and "not the solution's fault" in feedback


def test_judge_failure_names_the_gpu_for_a_cuda_out_of_memory():
    failure = judge_failure(torch.OutOfMemoryError("CUDA oom"), "timing", torch.device("cuda"), None)
    assert "ran out of GPU memory during timing" in failure.feedback
    assert failure.verdict is Verdict.INFRASTRUCTURE_ERROR


def test_the_judges_processes_exceeding_host_memory_is_infrastructure_not_the_candidates():
    from helpers import small_problem
    from tritongym.evaluate import EvalConfig
    from tritongym.evaluate.evaluator import outcome_result
    from tritongym.evaluate.sandbox import SandboxOutcome

    outcome = SandboxOutcome(out_of_memory=True, host_limit=40 << 30)
    outcome.stage, outcome.stages_seen = "trial 1", ["reference", "import", "build", "trial 1"]
    result = outcome_result(small_problem("vector_add"), outcome, EvalConfig())
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR
    assert "The judge used more than 40960 MiB of host memory during trial 1" in result.feedback


def test_a_runner_may_hold_the_tensors_in_transit_beyond_the_jobs_host_limit():
    fp = Footprint(inputs=16 * GIB, outputs=16 * GIB, params=0, float64=True)
    assert memory.runner_host_limit(8 * GIB, fp) == 8 * GIB + 64 * GIB
    wide_model = Footprint(inputs=GIB, outputs=GIB, params=8 * GIB, float64=False)  # built on the host
    assert memory.runner_host_limit(8 * GIB, wide_model) == 8 * GIB + 4 * GIB + 16 * GIB
    assert memory.judge_host_bytes(fp, torch.device("cuda"), float64_on_host=False) == 2 * memory.answer_bytes(fp)
    on_host = memory.judge_host_bytes(fp, torch.device("cuda"), float64_on_host=True)
    assert on_host == 2 * memory.answer_bytes(fp) + memory.HOST_FLOAT64_FACTOR * 64 * GIB
    assert memory.judge_host_bytes(fp, CPU, float64_on_host=False) == 2 * memory.answer_bytes(fp) + fp.correctness


def test_a_trials_answer_stays_on_the_gpu_only_for_a_problem_under_its_limit_that_fits_beside_the_rest():
    mib = 1 << 20
    limit = memory.DEVICE_ANSWER_BYTES
    small = Footprint(inputs=256 * mib, outputs=128 * mib, params=0, float64=True)
    assert memory.answer_on_device(small, available=2 * (256 + 2 * 128) * mib, limit=limit)  # I + 2 O in half of it
    assert not memory.answer_on_device(small, available=2 * (256 + 2 * 128) * mib - 1, limit=limit)
    edge = Footprint(inputs=limit - 1, outputs=1, params=0, float64=False)
    assert memory.answer_on_device(edge, available=1 << 50, limit=limit)
    large = Footprint(inputs=limit, outputs=1, params=0, float64=False)
    assert not memory.answer_on_device(large, available=1 << 50, limit=limit)  # its output comes through the socket
    # the output slot and the judge's copy of it are the job's: 2 O more while a trial is checked
    assert memory.job_bytes(small, limit) == small.correctness + 2 * small.outputs + 3 * (256 + 128) * mib
    assert memory.job_bytes(large, limit) == max(large.correctness, large.timing(1)) + 3 * (large.inputs + 1)
    assert memory.job_bytes(large, 2 * limit) == large.correctness + 2 * large.outputs + 3 * (large.inputs + 1)


def test_the_answer_limit_is_an_eighth_of_a_judges_share_of_the_gpu_and_at_least_a_gib():
    # KernelBench level 1's 4 GiB matrix-scalar product (I + O = 8 GiB) keeps its answers on an H200
    h200 = 139 * GIB
    assert memory.answer_limit(h200, judges=1) == h200 // 8
    four_gib = Footprint(inputs=4 * GIB, outputs=4 * GIB, params=0, float64=False)
    assert memory.answer_on_device(four_gib, available=130 * GIB, limit=memory.answer_limit(h200, judges=1))
    assert not memory.answer_on_device(four_gib, available=130 * GIB, limit=memory.answer_limit(h200, judges=3))
    assert memory.answer_limit(h200, judges=4) == h200 // 32
    assert memory.answer_limit(4 * GIB, judges=2) == memory.DEVICE_ANSWER_BYTES  # the floor


def test_a_job_larger_than_its_judges_share_of_the_gpu_takes_the_whole_gpu():
    small = Footprint(inputs=GIB, outputs=GIB, params=0, float64=True)  # max(2 + 1 + 2, timing 5) + runner 6
    assert memory.job_bytes(small, memory.DEVICE_ANSWER_BYTES) == 11 * GIB
    # timing beside the model and its float64 copy (3 + 5) ties with the trial (1 + 2 + 2 + 1 + 2)
    params = Footprint(inputs=GIB, outputs=GIB, params=GIB, float64=True)
    assert memory.job_bytes(params, memory.DEVICE_ANSWER_BYTES) == 8 * GIB + 6 * GIB
    outputs = Footprint(inputs=GIB, outputs=4 * GIB, params=GIB, float64=False)  # model 1 + timing 14 beat the trial 7
    assert memory.job_bytes(outputs, memory.DEVICE_ANSWER_BYTES) == 15 * GIB + 15 * GIB
    assert not memory.needs_whole_gpu(small, 80 * GIB, judges=4)  # 20 GiB each
    assert memory.needs_whole_gpu(small, 40 * GIB, judges=4)  # 10 GiB each
    assert not memory.needs_whole_gpu(small, 10 * GIB, judges=1)  # alone on its GPU anyway


def test_the_gpu_lock_held_exclusively_for_a_whole_job_makes_the_stages_locks_no_ops(tmp_path):
    import os

    from tritongym.evaluate.judge import machine_lock
    from tritongym.evaluate.judge.speed import gpu_lock

    name = f"test-whole-job-{os.getpid()}-{tmp_path.name}"
    lock = machine_lock.open_lock(name, tmp_path / "gpu.lock")
    other = machine_lock.open_lock(name, tmp_path / "gpu.lock")  # another judge's

    def other_can_share() -> bool:
        release = machine_lock.take(other, exclusive=False, wait=False)
        if release is None:
            return False
        release()
        return True

    try:
        with gpu_lock(lock, exclusive=True):
            with gpu_lock(lock, exclusive=False):  # a trial's shared use inside the whole job's hold
                assert not other_can_share()
            assert not other_can_share()  # the nested use did not release the job's hold
            with gpu_lock(lock, exclusive=True):  # timing inside it
                pass
            assert not other_can_share()
        assert other_can_share()
    finally:
        machine_lock.close(lock)
        machine_lock.close(other)
        if machine_lock.supported():
            machine_lock._libc.semctl(lock, 0, machine_lock.IPC_RMID)


def test_the_pool_tells_each_gpu_judge_how_many_judges_share_its_gpu(monkeypatch):
    from tritongym.env import local

    monkeypatch.setattr(local, "cuda_device_count", lambda: 2)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    slots = local.device_slots(local.PoolConfig(devices="cuda", sandboxes_per_device=3))
    assert len(slots) == 6
    assert {env["TRITONGYM_JUDGES_PER_GPU"] for _, env in slots} == {"3"}
    assert sorted(env["CUDA_VISIBLE_DEVICES"] for _, env in slots) == ["0", "0", "0", "1", "1", "1"]
    named = local.device_slots(local.PoolConfig(devices="cuda:0,1", sandboxes_per_device=4))  # gpu_run.sh rlbatch
    assert sorted(env["CUDA_VISIBLE_DEVICES"] for _, env in named) == ["0"] * 4 + ["1"] * 4


@pytest.mark.parametrize("announced", [False, True], ids=["over-the-job-share", "within-the-problems-size"])
def test_the_pools_watch_on_the_judge_grows_by_the_size_the_judge_announces(announced):
    import json
    import os
    import subprocess
    import sys

    from tritongym.evaluate.sandbox import Sandbox, SandboxOutcome

    code = "import time; x = bytearray(300 << 20); print('ready', flush=True); time.sleep(30)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    read_fd, write_fd = os.pipe()
    try:
        assert proc.stdout.readline().strip() == b"ready"  # a judge holding 300 MiB for its problem
        sandbox = Sandbox()
        sandbox._proc, sandbox._channel = proc, read_fd
        if announced:
            os.write(write_fd, (json.dumps({"host_bytes": 1 << 30, "nonce": "n"}) + "\n").encode())
        outcome = SandboxOutcome()
        sandbox._watch(outcome, __import__("time").monotonic() + 1.5, 100 << 20, until="result", nonce="n")
        assert outcome.out_of_memory is not announced and outcome.timed_out is announced
        assert outcome.host_limit == (100 << 20) + ((1 << 30) if announced else 0)
    finally:
        proc.kill()
        proc.wait()
        os.close(read_fd)
        os.close(write_fd)


def test_a_large_trial_gives_the_judges_cached_gpu_memory_back_for_the_runner(tmp_path, monkeypatch):
    emptied = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(True))
    memory.give_back(torch.device("cuda"), memory.GIVE_BACK_BYTES - 1)
    memory.give_back(CPU, 4 * memory.GIVE_BACK_BYTES)
    assert emptied == []  # a small trial keeps the cache; the CPU has none
    memory.give_back(torch.device("cuda"), memory.GIVE_BACK_BYTES)
    assert emptied == [True]
    given = []
    monkeypatch.setattr(memory, "give_back", lambda device, size: given.append((device, size)))
    reference(tmp_path, n=64).trial(1)
    assert given == [(CPU, 2 * 64 * 4)]  # every trial, with its inputs' and output's bytes


def test_the_judges_own_work_and_waits_move_the_deadline_by_the_timeout_at_most():
    """JobState.extend: a baseline compiled in the judge or a wait for another job's hold of the GPU
    is given back to the job, and the pool told (its watch moves as far), up to the timeout once more."""
    import types

    from tritongym.evaluate.judge import judge

    sent = []
    ctx = types.SimpleNamespace(channel=types.SimpleNamespace(send=sent.append))
    state = judge.JobState(job=types.SimpleNamespace(timeout_s=10.0), ctx=ctx, deadline=100.0)
    state.extend(4.0)
    state.extend(-1.0)
    state.extend(0.0)
    assert state.deadline == 104.0 and sent == [{"extend_s": 4.0}]
    state.extend(8.0)
    state.extend(3.0)
    assert state.deadline == 110.0 and state.extended == 10.0 and sent[1:] == [{"extend_s": 6.0}]
    assert state.stages["deadline_extended"] == 10.0


POINTWISE_CONV = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(16, 64, 1024, 1024)]


def get_init_inputs():
    return [64, 128]
"""


def test_the_meta_device_gives_a_jobs_size_before_its_first_trial(tmp_path):
    """Reference.meta_footprint: a 4 GiB-in, 8 GiB-out convolution (KernelBench level 1's
    87_conv_pointwise_2D) sized without allocating it, as its trial would measure it; a forward that
    reads values cannot run on the meta device: no estimate."""
    conv = Reference(POINTWISE_CONV, "Model", tmp_path / "reference.py", CPU, float64=True)
    estimate = conv.meta_footprint(float64=True)
    assert estimate == Footprint(inputs=4 << 30, outputs=8 << 30, params=64 * 128 * 4, float64=True)
    (tmp_path / "small").mkdir()
    (tmp_path / "reads").mkdir()
    small = reference(tmp_path / "small")
    trial = small.trial(0)
    assert small.meta_footprint(True) == Footprint.of(small.model, trial.inputs, trial.expected, True)
    reads = reference(tmp_path / "reads", forward="return torch.tanh(x) if bool(x.sum() > 0) else x")
    assert reads.meta_footprint(True) is None


def test_a_job_too_large_to_share_its_gpu_holds_it_alone_from_its_first_trial(tmp_path, monkeypatch):
    """judge.whole_gpu_early: with four judges on an H200 the 12 GiB convolution needs the GPU alone,
    decided before its trial is made; a small problem, one judge per GPU or the CPU do not."""
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda device: types.SimpleNamespace(total_memory=143_771_000_000)
    )
    gpu = types.SimpleNamespace(device=torch.device("cuda"), judges_per_gpu=4)
    conv = Reference(POINTWISE_CONV, "Model", tmp_path / "reference.py", CPU, float64=True)
    assert judge.whole_gpu_early(conv, gpu, float64=True)
    assert not judge.whole_gpu_early(reference(tmp_path), gpu, float64=True)
    assert not judge.whole_gpu_early(conv, types.SimpleNamespace(device=torch.device("cuda"), judges_per_gpu=1), True)
    assert not judge.whole_gpu_early(conv, types.SimpleNamespace(device=CPU, judges_per_gpu=4), True)
