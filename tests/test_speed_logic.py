"""The GPU timing's bookkeeping, with fake brackets (the brackets themselves need a GPU: tests/gpu)."""

import dataclasses
import time
import types
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from tritongym.evaluate import timing
from tritongym.evaluate.judge import holds as holds_module
from tritongym.evaluate.judge import speed
from tritongym.evaluate.judge.feedback import Failure, speed_feedback


class CpuHolds(holds_module.Holds):
    """The judge's holds without a GPU: the ring is real, the wait kernel's part is played where a hold is
    settled (timed out where its flag was still clear when the work after it finished, or where
    ``times_out`` says). ``log`` records every open, release and settle, in order."""

    def __init__(self, times_out=(), log=None):
        self.ring = holds_module.Ring(np.zeros(2 * holds_module.RING, dtype=np.int32))
        self.opened, self.held_s, self.times_out = {}, 0.0, list(times_out)
        self.log = [] if log is None else log

    def open(self):
        index = self.ring.take()
        self.opened[index] = time.perf_counter()
        self.log.append("hold")
        return index

    def release(self, index):
        if index in self.opened:
            self.log.append("release")
        super().release(index)

    def settle(self, index):
        timed_out = self.times_out.pop(0) if self.times_out else self.ring.words[index] == 0
        self.ring.words[self.ring.size + index] = holds_module.TIMED_OUT if timed_out else holds_module.RELEASED
        self.log.append("settle")
        return super().settle(index)


def bench_with_holds(times_out=(), log=None):
    bench = speed.Bench.__new__(speed.Bench)
    bench.holds = CpuHolds(times_out, log)
    bench.late, bench.late_by = 0, {}
    return bench


def test_a_hold_word_is_reset_before_use_and_reused_only_once_settled():
    ring = holds_module.Ring(np.full(2 * 2, 7, dtype=np.int32))
    first = ring.take()
    assert list(ring.words) == [0, 7, holds_module.WAITING, 7]  # flag clear, outcome waiting
    with pytest.raises(RuntimeError, match="before its kernel returned"):
        ring.settle(first)
    second = ring.take()
    with pytest.raises(RuntimeError, match="reused before that hold was settled"):
        ring.take()  # the ring of two wrapped onto the first, not settled yet
    ring.release(first)
    assert ring.words[first] == 1 and ring.words[second] == 0
    ring.words[ring.size + first] = holds_module.RELEASED
    assert ring.settle(first) is False
    assert ring.take() == first and ring.words[first] == 0  # reset for its next hold
    ring.words[ring.size + second] = holds_module.TIMED_OUT
    assert ring.settle(second) is True  # the kernel gave up: late


def test_a_hold_is_released_once_and_counts_the_hosts_time_to_release_it():
    holds = CpuHolds()
    index = holds.open()
    holds.opened[index] -= 0.004  # the host queued its bracket in 4 ms
    holds.release(index)
    holds.release(index)  # a second release does nothing
    assert holds.log == ["hold", "release"] and 0.004 <= holds.held_s < 0.005
    assert holds.settle(index) is False


def test_late_brackets_are_counted_by_the_side_whose_bracket_it_was():
    bench = bench_with_holds(times_out=[True, True, True, True, True, True, False])
    for kind in ("remote", "remote", "remote", "local", "runner", "twin", "remote"):
        bench._settle(kind, bench.holds.open())
    assert bench.late == 6
    assert bench.late_by == {"candidate": 3, "reference": 1, "runner hand-off": 1, "twin hand-off": 1}
    assert set(speed.LATE_SIDES) == {"local", "remote", "runner", "twin"}  # every hold's kind has its side


def remote_bench(log, times_out=()):
    """A bench whose runner and twin answer at once; ``log`` records the hold's steps and the messages."""
    bench = bench_with_holds(times_out, log)
    bench.scratch, bench.probe_bytes = torch.ones(64, dtype=torch.int8), 16
    bench.kept, bench.shared_out, bench.count = [], [], 1
    bench.go, bench.done = TimedEvent(0.0), TimedEvent(0.0, fired=True)
    bench.twin = SimpleNamespace(done=TimedEvent(0.0, fired=True))
    bench.state = SimpleNamespace(ask=lambda message, expect: log.append(type(message).__name__), deadline=1e18)
    return bench


def test_the_candidates_hold_is_released_only_after_the_runner_said_its_batch_is_queued(monkeypatch):
    # released before BatchQueued, the runner's launches would be made inside its bracket (its time)
    log = []
    bench = remote_bench(log)
    monkeypatch.setattr(bench, "_open", lambda kind, sets: speed.Opened(
        bracket_events(0.022)[:5], True, kind, bench.holds.open()), raising=False)  # fmt: skip
    monkeypatch.setattr(bench, "_poll", lambda event: log.append("poll"), raising=False)
    monkeypatch.setattr(bench, "_copy_out", lambda: None, raising=False)
    bracket, _ = bench.candidate_batch(["sets"])
    assert log == ["hold", "Batch", "release", "poll", "settle"]
    assert bracket == speed.Bracket(pytest.approx(0.010), pytest.approx(80e-6), pytest.approx(22e-6))
    assert bench.late == 0
    log.clear()
    bench.holds.times_out = [True]  # the runner answered after the hold's timeout: late, counted as it is
    bracket, _ = bench.candidate_batch(["sets"])
    assert bracket.seconds == pytest.approx(0.010) and bench.late_by == {"candidate": 1}


def test_the_twins_empty_bracket_is_released_once_the_twin_queued_its_part(monkeypatch):
    log = []
    bench = remote_bench(log)
    monkeypatch.setattr(bench, "_open", lambda kind, sets: log.append(kind) or speed.Opened(
        bracket_events(0.022)[:5], True, kind, bench.holds.open()), raising=False)  # fmt: skip
    monkeypatch.setattr(bench, "_hand_to_twin", lambda: log.append("twin") or (TimedEvent(0.5), TimedEvent(0.8)),
                        raising=False)  # fmt: skip
    monkeypatch.setattr(bench, "_poll", lambda event: log.append("poll"), raising=False)
    monkeypatch.setattr(bench, "_copy_out", lambda: None, raising=False)
    bracket, hand_off, timed = bench.remote_empty_batch(["sets"])
    assert log == ["remote", "hold", "twin", "release", "poll", "settle"]  # the candidate's kind of hold
    assert hand_off == pytest.approx(0.3e-3) and timed and bracket.seconds == pytest.approx(0.010)


def test_a_local_bracket_is_released_once_its_end_is_queued():
    log = []
    bench = remote_bench(log)
    opened = speed.Opened(bracket_events(0.022)[:5], True, "local", bench.holds.open())
    end = opened.events[4]
    end.record = lambda: log.append("end")
    bench._close(opened)
    assert log == ["hold", "end", "release", "settle"] and bench.late == 0


def test_a_company_check_whose_hold_timed_out_says_nothing(monkeypatch):
    made = iter([TimedEvent(1.0), TimedEvent(1.35), TimedEvent(1.0), TimedEvent(1.35)])
    log = []
    bench = remote_bench(log, times_out=[False, True])
    monkeypatch.setattr(speed.torch.cuda, "Event", lambda enable_timing=False: next(made))
    bench.twin = SimpleNamespace(go=TimedEvent(0.0), done=TimedEvent(0.0, fired=True),
                                 hand_off=lambda: log.append("twin"))  # fmt: skip
    assert bench.company_check() == pytest.approx(0.35e-3)
    assert log == ["hold", "twin", "release", "settle"]
    assert bench.company_check() == 0.0 and bench.late_by == {"twin hand-off": 1}


def test_the_warm_up_runs_its_repetitions_and_gives_the_last():
    given = iter(["first", "second"])
    bench = SimpleNamespace(untimed=0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(speed, "repetition", lambda b, model, rep, first, clean: next(given))
        assert speed.warm_up(bench, None, 2) == "second" and bench.untimed == 2
    assert speed.WARM_UP_REPS == 2  # after the preparation's first run: one alone on the GPU, then the last


REP = timing.Rep(reference=10e-3, candidate=5e-3, empty=0.1e-3, remote_empty=0.5e-3, hand_off=0.3e-3,
                 runner_hand_off=0.31e-3)  # fmt: skip


def test_the_measured_repetitions_holds_and_brackets_are_summed_as_stages(monkeypatch):
    job = SimpleNamespace(timing_budget_s=0.0, timing_target=0.0, baseline="eager", timeout_s=60.0)
    ctx = SimpleNamespace(hand_off_s=0.3e-3, copy_bandwidth=0.0, flush_s=80e-6, probe_s=20e-6,
                          device=torch.device("cpu"))  # fmt: skip
    state = SimpleNamespace(job=job, ctx=ctx, deadline=time.monotonic() + 60, stages={})
    bench = SimpleNamespace(holds=SimpleNamespace(held_s=0.0), inputs_s=0.0, check_s=0.0, late=0, late_by={},
                            untimed=0, scratch=torch.empty(8))  # fmt: skip
    given = [REP] * (speed.WARM_UP_REPS + 5)  # the warm-up's, five measured

    def repetition(b, model, rep, candidate_first, clean):
        b.holds.held_s += 0.01
        return given.pop(0)

    monkeypatch.setattr(speed, "repetition", repetition)
    prepared = speed.Prepared(model=None, bench=bench, count=100, footprint=None, sample_inputs=["x"],
                              sample_output="y", sample_bytes=8, one_s=1e-4, bytes_read=8, mutates=False,
                              persistent=False)  # fmt: skip
    result = speed.time_candidate(state, None, prepared)
    assert result["timing"]["reps"] == 5 and state.stages["timing_untimed_reps"] == speed.WARM_UP_REPS == 2
    assert state.stages["timing_measured_reps"] == 5 and "timing_late_reps" not in state.stages
    assert state.stages["timing_holds"] == pytest.approx(0.05)  # the measured repetitions' holds alone
    assert state.stages["timing_check"] == pytest.approx(0.0)  # the fake repetitions check nothing
    assert state.stages["timing_brackets"] == pytest.approx(5 * (10e-3 + 5e-3 + 0.1e-3 + 0.5e-3 + 0.31e-3), abs=1e-4)


CLEAN = timing.Clean(flush_s=80e-6, probe_s=20e-6, hand_off_s=300e-6)


def bracket(seconds, flush_s=80e-6, probe_s=20e-6):
    return None if seconds is None else speed.Bracket(seconds, flush_s, probe_s)


class FakeBench:
    """Brackets of fixed lengths (seconds); None where a bracket was late. ``order`` records every
    step of a repetition, so that the check can be seen to come before the empty brackets (which
    reuse the candidate's copy-out buffers)."""

    def __init__(self, reference, candidate, empty, remote_empty, hand_off=0.0003, outputs=("r", "c"), flush=None):
        flushes = flush or [80e-6] * 4
        self.values = [bracket(v, f) for v, f in zip((reference, candidate, empty, remote_empty), flushes, strict=True)]
        self.hand_off = hand_off
        self.runner = hand_off + 10e-6  # the runner's context costs a little more to switch to
        self.twin_timed = True  # whether the GPU timed the twin's hand-off in its empty bracket
        self.company = []  # the hand-offs of the company checks after the brackets (default: hand_off)
        self.outputs = outputs
        self.order = []
        self.check_s = 0.0
        self.state = types.SimpleNamespace(timed_bounds=[0.5])  # the trials' bounds (speed.check_batch)
        self.mutates = False  # the reference changes no input in place: the inputs after are not checked

    def fresh_inputs(self):
        return ["sets"]

    def reference_batch(self, model, sets):
        self.order.append("reference")
        return self.values[0], [[self.outputs[0]]]

    def candidate_batch(self, sets):
        self.order.append("candidate")
        return self.values[1], [self.outputs[1]]

    def empty_batch(self):
        self.order.append("empty")
        return self.values[2]

    def remote_empty_batch(self, sets):
        self.order.append("remote_empty")
        return self.values[3], self.hand_off, self.twin_timed

    def company_check(self):
        self.order.append("twin")
        return self.company.pop(0) if self.company else self.hand_off

    def runner_hand_off(self, sets):
        self.order.append("runner")
        return self.runner


def test_the_preparation_runs_the_batch_once(monkeypatch):
    # the batch's first run (slots, caches, first launches) under the shared hold; the exclusive part's
    # warm-up is one repetition more
    reps = []
    monkeypatch.setattr(speed, "repetition", lambda bench, model, rep, first, clean: reps.append(rep))
    for name, value in (("_baseline", lambda reference, baseline, inputs: reference.model),
                        ("outputs_persist", lambda model, output, inputs: False),
                        ("forward_ops", lambda model, inputs: 1),
                        ("_batch_size", lambda state, model, inputs, footprint, nbytes, queue: (8, 1e-4)),
                        ("SharedInputs", lambda slots, shape: "shared")):  # fmt: skip
        monkeypatch.setattr(speed, name, value)
    monkeypatch.setattr(speed.Footprint, "of", classmethod(lambda cls, *args, **kwargs: "footprint"))
    bench = SimpleNamespace(untimed=0, shared_in=[], shape=None)
    monkeypatch.setattr(speed, "Bench", lambda *args: bench)
    job = SimpleNamespace(baseline="eager")
    state = SimpleNamespace(job=job, footprint=None, forward_ops=1, stages={})
    reference = SimpleNamespace(inputs=lambda seed: [torch.ones(2)], model=lambda x: x * 2)
    prepared = speed.prepare_timing(state, reference)
    assert reps == [0] * speed.PREPARE_REPS == [0] and bench.untimed == 1
    assert state.stages["timing_setup_untimed_reps"] == 1 and prepared.count == 8
    speed.warm_up(bench, None)
    assert len(reps) == 1 + speed.WARM_UP_REPS == 3


def test_a_repetition_keeps_every_bracket_and_takes_the_order_it_is_given(monkeypatch):
    checked = []
    bench = FakeBench(0.010, 0.008, 0.002, 0.0025)

    def check(expected, got, rep, bounds):
        checked.append((expected, got))
        assert bounds == [0.5]  # the trials' bounds, as the job's state holds them
        bench.order.append("check")

    monkeypatch.setattr(speed, "check_batch", check)
    rep = speed.repetition(bench, None, 0, False, CLEAN)
    assert rep == timing.Rep(0.010, 0.008, 0.002, 0.0025, 0.0003, None, 0.00031)
    assert bench.check_s > 0  # the check's seconds (stage timing_check)
    speed.repetition(bench, None, 1, True, CLEAN)
    steps = ["check", "empty", "twin", "remote_empty", "runner", "twin"]  # outputs checked before the empties
    pair = [["reference", "twin", "candidate", "twin"], ["candidate", "twin", "reference", "twin"]]
    assert bench.order == [*pair[0], *steps, *pair[1], *steps]
    assert checked == [([["r"]], ["c"])] * 2  # outputs are checked every time


def test_a_repetition_whose_flush_or_hand_off_was_slow_says_it_had_company(monkeypatch):
    monkeypatch.setattr(speed, "check_batch", lambda expected, got, rep, bounds: None)
    slow_flush = FakeBench(0.010, 0.008, 0.002, 0.0025, flush=[80e-6, 80e-6, 1.5e-3, 80e-6])
    assert "L2 flush" in speed.repetition(slow_flush, None, 0, False, CLEAN).contended
    slow_hand_off = FakeBench(0.010, 0.008, 0.002, 0.0045, hand_off=0.0023)
    assert "hand-off" in speed.repetition(slow_hand_off, None, 0, True, CLEAN).contended
    slow_runner = FakeBench(0.010, 0.008, 0.002, 0.0025)
    slow_runner.runner = 0.0023  # a runner's own hand-off much slower than clean: company (or its own doing)
    assert "hand-off" in speed.repetition(slow_runner, None, 0, False, CLEAN).contended
    company_after_the_reference = FakeBench(0.010, 0.008, 0.002, 0.0025)
    company_after_the_reference.company = [0.0003, 0.0021, 0.0003]  # the check after the second bracket
    assert "hand-off" in speed.repetition(company_after_the_reference, None, 0, True, CLEAN).contended
    left_after_its_empty_batch = FakeBench(0.010, 0.008, 0.002, 0.0025)
    left_after_its_empty_batch.company = [0.0003, 0.0003, 0.0003, 0.0021]  # the check after the runner's hand-off
    assert "hand-off" in speed.repetition(left_after_its_empty_batch, None, 0, True, CLEAN).contended


def test_a_hand_off_the_gpu_did_not_time_says_nothing_about_company(monkeypatch):
    # a late empty bracket (counted as it is at the longest hold): the GPU reached ``handed`` before the
    # twin had queued its wait, so the events hold the host's round trip to the twin
    monkeypatch.setattr(speed, "check_batch", lambda expected, got, rep, bounds: None)
    host_timed = FakeBench(0.010, 0.008, 0.002, 0.0045, hand_off=0.0023)
    host_timed.runner = 0.0  # the runner's, likewise: not measured (Bench.runner_hand_off)
    host_timed.twin_timed = False
    host_timed.company = [0.0003] * 4  # the company checks, each behind a hold of its own: clean
    rep = speed.repetition(host_timed, None, 0, True, CLEAN)
    assert rep.contended is None and rep.hand_off == 0.0023  # subtracted as measured (capped: timing.subtracted)
    host_timed.company = [0.0003, 0.0003, 0.0003, 0.0021]  # a company check after it still sees company
    assert "hand-off" in speed.repetition(host_timed, None, 0, True, CLEAN).contended


def test_the_runners_hand_off_counts_only_where_the_gpu_timed_it(monkeypatch):
    # handed fired when the runner answered (its hold had timed out) -> 0, else measured; the hold is
    # released only after the runner's answer
    for handed_fired, times_out, expected in ((False, False, 0.35e-3), (True, True, 0.0)):
        log = []
        bench = remote_bench(log, times_out=[times_out])
        handed, back = TimedEvent(1.0, fired=handed_fired), TimedEvent(1.35)
        made = iter([handed, back])
        monkeypatch.setattr(bench, "_open", lambda kind, sets, b=bench: speed.Opened(
            bracket_events(0.022)[:5], True, kind, b.holds.open()), raising=False)  # fmt: skip
        monkeypatch.setattr(speed.torch.cuda, "Event", lambda enable_timing=False, made=made: next(made))
        assert bench.runner_hand_off(["sets"]) == pytest.approx(expected)
        assert log == ["hold", "Batch", "release", "settle"]
        assert bench.late_by == ({"runner hand-off": 1} if times_out else {})


def test_a_batch_is_as_long_as_each_side_can_queue_behind_a_hold():
    # vector_add: two inputs and one output copied by the judge per call, one kernel on either side
    assert speed.queue_calls(2, 1, 1, 1, False) == speed.QUEUED_OPS // 3
    assert speed.queue_calls(1, 1, 1, 1, False) == speed.QUEUED_OPS // 2
    assert speed.queue_calls(1, 1, 40, 1, False) == speed.QUEUED_OPS // 40  # a reference of many ops
    assert speed.queue_calls(1, 2, 40, 1, True) == speed.QUEUED_OPS // 42  # ... that copies its outputs too
    assert speed.queue_calls(1, 1, 1, 99, False) == speed.QUEUED_OPS // 100  # the candidate's launches and copies
    assert speed.queue_calls(1, 1, 10**6, 0, False) == 1


def test_the_queued_operations_scale_with_the_launch_queue():
    # every GPU judge, twin and runner gets the driver's queue four times longer (work_queues)
    assert speed.queued_ops("4x") == 4 * speed.QUEUED_OPS
    assert speed.queued_ops("2x") == 2 * speed.QUEUED_OPS
    assert speed.queued_ops("0.5x") == speed.QUEUED_OPS // 2  # the driver's shorter queue
    for default in (None, "", "4", "fourx", "0x", "-2x", "nanx", "1e9x"):
        assert speed.queued_ops(default) == speed.QUEUED_OPS, default
    assert speed.queue_calls(2, 1, 1, 1, False, speed.queued_ops("4x")) == 4 * speed.QUEUED_OPS // 3


def test_the_references_queued_operations_are_counted_as_pytorch_dispatches_them():
    assert speed.forward_ops(lambda x: (x * 2).view(-1).sum(), [torch.ones(2, 2)]) == 2  # a view launches nothing
    assert speed.forward_ops(lambda x: torch.empty_like(x).copy_(x).relu(), [torch.ones(3)]) == 2

    def fails(x):
        raise RuntimeError("no")

    assert speed.forward_ops(fails, [torch.ones(1)]) == 1


class TimedEvent:
    """A CUDA event stand-in: when the GPU reached it (ms) and whether it had fired when asked."""

    def __init__(self, at_ms, fired=False):
        self.at_ms, self.fired = at_ms, fired

    def record(self):
        pass

    def query(self):
        return self.fired

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return other.at_ms - self.at_ms


def closing_bench():
    bench = bench_with_holds()
    bench.scratch, bench.probe_bytes = torch.ones(64, dtype=torch.int8), 16
    return bench


def bracket_events(probe_ms, probe_start_fired=False):
    """A bracket of 10 ms whose flush took 0.08 ms and whose probe's events are ``probe_ms`` apart."""
    start, probe_start = TimedEvent(0.0), TimedEvent(10.0 - probe_ms, fired=probe_start_fired)
    return [start, TimedEvent(0.5), TimedEvent(0.58), probe_start, TimedEvent(10.0)]


def opened(bench, probe_ms, flush_timed=True, probe_start_fired=False, kind="local"):
    return speed.Opened(bracket_events(probe_ms, probe_start_fired), flush_timed, kind, bench.holds.open())


def test_a_workload_is_timed_by_the_gpu_only_where_it_was_queued_before_the_gpu_reached_it():
    assert speed.gpu_timed(TimedEvent(0.0, fired=False)) is True
    assert speed.gpu_timed(TimedEvent(0.0, fired=True)) is False  # the GPU idled: the events time the host


def test_a_bracket_reports_the_flush_and_probe_the_gpu_timed():
    bench = closing_bench()
    timed = bench._close(opened(bench, 0.022))
    assert timed == speed.Bracket(pytest.approx(0.010), pytest.approx(80e-6), pytest.approx(22e-6))
    assert not bench.scratch[:16].any() and bench.scratch[16:].all()  # the probe wrote its bytes


def test_a_probe_queued_on_a_gpu_that_caught_up_with_the_host_says_nothing(monkeypatch):
    # a remote bracket: its probe is queued only once the judge saw done, the GPU idle by then; the
    # host took 150 us to launch it (a false alarm at 2x the clean 28 us + 20 us before)
    monkeypatch.setattr(speed, "check_batch", lambda expected, got, rep, bounds: None)
    bench = closing_bench()
    late_probe = bench._close(opened(bench, 0.150, probe_start_fired=True, kind="remote"))
    assert late_probe.probe_s == 0.0 and late_probe.flush_s == pytest.approx(80e-6)
    assert late_probe.seconds == pytest.approx(0.010)  # the bracket itself counts as it is
    late_flush = bench._close(opened(bench, 0.022, flush_timed=False, kind="remote"))
    assert late_flush.flush_s == 0.0 and late_flush.probe_s == pytest.approx(22e-6)
    reps = []
    for probe in (late_probe, speed.Bracket(0.010, 80e-6, 150e-6)):  # the same 150 us, timed by the GPU
        bench = FakeBench(0.010, 0.008, 0.002, 0.0025)
        bench.values[1] = probe
        reps.append(speed.repetition(bench, None, 0, False, CLEAN))
    assert reps[0].contended is None
    assert "end probe" in reps[1].contended  # a slow probe the GPU timed is still company


def test_the_clean_workloads_are_calibrated_behind_holds_from_what_the_gpu_timed(monkeypatch):
    # per repetition a flush then a probe (ms, whether its start had fired when it was queued): the
    # first repetition warms up; a workload queued after the GPU caught up, or whose hold timed out, is
    # host-timed and left out
    script = iter([(0.090, False), (0.030, False),  # warm-up
                   (0.077, False), (0.022, False),
                   (0.200, True), (0.150, True),  # the host stalled: the GPU had reached start
                   (0.078, False), (0.021, False),
                   (0.500, False), (0.400, False),  # the holds timed out
                   (0.076, False), (0.023, False)])  # fmt: skip
    holds = CpuHolds(times_out=[False] * 8 + [True, True] + [False] * 2)

    class Event:
        def __init__(self, enable_timing=False):
            self.elapsed_ms, self.fired = None, False

        def record(self):
            pass

        def query(self):
            return self.fired

        def synchronize(self):
            pass

        def elapsed_time(self, other):
            return self.elapsed_ms

    made = []

    def event(enable_timing=False):
        made.append(Event())
        if len(made) % 2:  # a start: its elapsed time to the end that follows, and whether it had fired
            made[-1].elapsed_ms, made[-1].fired = next(script)
        return made[-1]

    monkeypatch.setattr(speed, "workload_bytes", lambda device: (64, 16))
    monkeypatch.setattr(speed.torch.cuda, "Event", event)
    flush, probe = speed.calibrate_workloads("cpu", holds, reps=5)
    assert (flush, probe) == (pytest.approx(77e-6), pytest.approx(22e-6))
    assert holds.log == ["hold", "release", "settle"] * 12  # every workload behind a hold, warm-up included


def test_a_fast_candidates_batch_grows_until_its_signal_dominates_the_hand_off():
    # 100 calls: the candidate's net 0.2 ms against a noise of 0.3 ms of hand-off + 0.1 x 0.1 ms of copies
    short = timing.Rep(reference=10.1e-3, candidate=0.6e-3, empty=0.1e-3, remote_empty=0.4e-3, hand_off=0.3e-3)
    grown = speed.grown_count(short, 100, 0.3e-3, limit=4096)
    assert grown == 620  # 4 x 0.31 ms of signal at 2 us a call
    assert speed.grown_count(short, 100, 0.3e-3, limit=300) == 300
    long = dataclasses.replace(short, candidate=2.5e-3)
    assert speed.grown_count(long, 100, 0.3e-3, limit=4096) == 100
    lost = dataclasses.replace(short, candidate=0.39e-3)  # no signal at all: as far as allowed
    assert speed.grown_count(lost, 100, 0.3e-3, limit=4096) == 4096


def _untrusted_result(reps, stopped, late_by=None):
    late_by = late_by or {}
    bench = SimpleNamespace(scratch=torch.empty(8), late=sum(late_by.values()), late_by=late_by)
    ctx = SimpleNamespace(hand_off_s=0.3e-3, copy_bandwidth=0.0)
    counted = timing.tally(reps, 100, 0.3e-3) if reps else None
    return speed.timing_result(counted, stopped, "eager", 100, bench, reps, ctx, 1000, 2.3)


def test_a_timing_that_stops_untrusted_reports_no_speedup_and_says_why():
    ok = timing.Rep(reference=10.1e-3, candidate=5.4e-3, empty=0.1e-3, remote_empty=0.4e-3, hand_off=0.3e-3)
    hogged = dataclasses.replace(ok, contended="a L2 flush took 1500 us (clean: 80 us)")
    result = _untrusted_result([ok, hogged, hogged], "ceiling")
    assert result["speedup"] is None
    assert result["timing"]["reps"] == 1 and result["timing"]["contended_reps"] == 2
    assert result["timing"]["invalid_reps"] == 2 and result["timing"]["stopped"] == "ceiling"
    (finding,) = result["findings"]
    assert finding["check"] == "timing_untrusted" and "contended x2" in finding["message"]
    assert "Timing gave no speedup" in speed_feedback(result)
    nothing = _untrusted_result([], "ceiling")
    assert nothing["speedup"] is None and "timing" not in nothing
    trusted = _untrusted_result([ok] * 5, "budget", {"candidate": 13, "runner hand-off": 1})
    assert trusted["speedup"] == pytest.approx(2.0) and "findings" not in trusted
    assert trusted["timing"]["late_brackets"] == 14
    assert trusted["timing"]["late_by"] == {"candidate": 13, "runner hand-off": 1}  # whose host time counted
    assert "Speedup 2x" in speed_feedback(trusted)


def test_a_wrong_timed_output_fails_the_repetition():
    with pytest.raises(Failure, match="During timing"):
        speed.check_batch([[torch.ones(4)]], [torch.zeros(1, 4)], 1)


@pytest.mark.parametrize("chunk", [5, 30, 1 << 24], ids=["pieces-of-a-call", "two-calls-stacked", "whole-batch"])
def test_the_timed_check_compares_every_call_of_every_output_in_its_own_layout(monkeypatch, chunk):
    monkeypatch.setattr(speed.compare, "CHUNK_ELEMENTS", chunk)
    calls = [[torch.randn(4, 3).t(), torch.arange(6)] for _ in range(3)]  # a transposed output and an integer one
    got = [torch.stack([c[0].contiguous() for c in calls]), torch.stack([c[1] for c in calls])]
    speed.check_batch(calls, got, 1)  # equal: passes
    got[0][2, 1, 0] += 1.0  # one element of the last call
    with pytest.raises(Failure, match="1 of 36 elements of output 0 over 3 calls"):
        speed.check_batch(calls, got, 2)
    got[0][2, 1, 0] -= 1.0
    got[1][1, 5] = 0  # an integer output of the middle call
    with pytest.raises(Failure, match="1 of 18 elements of output 1 over 3 calls"):
        speed.check_batch(calls, got, 3)


def test_the_timed_check_accepts_loose_rounding_and_matching_nans():
    expected = [[torch.tensor([1.0, float("nan"), 100.0])]]
    assert speed.check_batch(expected, [torch.tensor([[1.005, float("nan"), 100.5]])], 1) is None
    with pytest.raises(Failure):
        speed.check_batch(expected, [torch.tensor([[float("nan"), float("nan"), 100.0]])], 1)  # a NaN it has not
    # finite where the reference's NaN may be PyTorch's overflow (the trials judged it against float64)
    assert speed.check_batch(expected, [torch.tensor([[1.0, 0.0, 100.0]])], 1) is None


class WritesItsOwnBuffer(torch.nn.Module):
    def __init__(self, registered: bool):
        super().__init__()
        if registered:
            self.register_buffer("out", torch.zeros(4))
        else:
            self.out = torch.zeros(4)

    def forward(self, x):
        return self.out.copy_(x * 2)


@pytest.mark.parametrize(
    ("model", "persists"),
    [
        (WritesItsOwnBuffer(registered=True), True),
        (WritesItsOwnBuffer(registered=False), True),
        (lambda x: torch.tanh(x), False),
        (lambda x: (x.view(2, 2), x * 2), False),  # a view of its input: every timed call has its own
        (lambda x: x.relu_(), False),
    ],
    ids=["buffer", "plain-attribute", "fresh", "input-view", "in-place-input"],
)
def test_a_reference_returning_memory_its_next_call_overwrites_is_told_apart(model, persists):
    # such outputs are copied as they come in the reference's timed batch, or every call would be
    # compared with the last call's values
    inputs = [torch.randn(4)]
    assert speed.outputs_persist(model, model(*inputs), inputs) is persists


def test_a_timed_call_is_judged_against_the_outputs_rms_as_the_trials_are():
    """The timed check's loose bound, as the trials' (compare.py): 1e-2 relative to the element plus
    the output's RMS. Inductor's Mamba2 (level 3, 48 and 49) has outputs of exp(cumulative sums):
    elements near 0 beside elements of 1e6 carry float32 errors of their neighbours' scale, within
    the trials' bound and over a bound of 1 unit (its ``mismatch`` in session 11); an output scaled by
    1e-9 is judged as the same output (a bound of 1 unit passed any error there)."""
    gen = torch.Generator().manual_seed(0)
    calls = [torch.randn(4096, generator=gen).exp().mul(1e6) for _ in range(3)]
    for call in calls:
        call[:8] = 0.25  # small elements beside large ones
    rounding = torch.stack([c + 1e-7 * c.square().mean().sqrt() for c in calls])  # float32's error at the RMS
    for scale in (1.0, 1e-9):
        speed.check_batch([[c * scale] for c in calls], [rounding * scale], 0)
    wrong = rounding.clone()
    wrong[1, 100] += 0.05 * calls[1].square().mean().sqrt()  # 5% of the RMS off at one element
    for scale in (1.0, 1e-9):
        with pytest.raises(Failure) as raised:
            speed.check_batch([[c * scale] for c in calls], [wrong * scale], 0)
        assert raised.value.verdict.value == "mismatch" and "1 of 12288 elements" in raised.value.feedback
    zeros = [[torch.zeros(16)] for _ in range(2)]
    speed.check_batch(zeros, [torch.zeros(2, 16)], 0)
    with pytest.raises(Failure):
        speed.check_batch(zeros, [torch.full((2, 16), 1e-30)], 0)
    assert speed._rms([torch.tensor([3.0, float("inf")]), torch.tensor([4.0, float("nan")])]).item() == 2.5


def dispatched(fn) -> list[str]:
    """The PyTorch ops ``fn`` dispatches, by name (a host read of a device value is ``_local_scalar_dense``)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func.__name__)
            return func(*args, **(kwargs or {}))

    recorder = Recorder()
    recorder.ops = []
    with recorder:
        fn()
    return recorder.ops


def test_the_timed_check_reads_the_device_once_and_launches_no_more_for_more_calls(monkeypatch):
    # a batch of many small calls (hundreds on the bundled problems): the RMS once took a few kernels per
    # call, and every output (and its largest magnitude) a read of its own, each a wait for the GPU
    reads = []
    for name in ("tolist", "item", "__int__", "__float__", "__bool__"):
        original = getattr(torch.Tensor, name)
        monkeypatch.setattr(torch.Tensor, name, lambda t, *a, _f=original, _n=name: reads.append(_n) or _f(t, *a))

    def check(calls):
        expected = [[torch.randn(8), torch.arange(3)] for _ in range(calls)]
        got = [torch.stack([c[0] for c in expected]), torch.stack([c[1] for c in expected])]
        reads.clear()
        ops = dispatched(lambda: speed.check_batch(expected, got, 1, [1e-3, 0.0]))
        assert reads == ["tolist"]  # one read of the device for the whole batch
        return ops

    launched = [[op for op in check(n) if not op.startswith(("view", "select", "slice"))] for n in (2, 300)]
    assert len(launched[1]) == len(launched[0]), launched  # views per call launch nothing


def test_the_timed_check_names_the_first_output_that_failed_as_before():
    calls = [[torch.ones(4), torch.ones(4)] for _ in range(2)]
    off = [torch.ones(2, 4), torch.ones(2, 4)]
    off[0][1, 2] += 1e-3  # over 4 x the bound below, under the loose tolerance: a precision failure
    off[1][0, 0] = 5.0  # a mismatch, in the later output
    with pytest.raises(Failure) as raised:
        speed.check_batch(calls, off, 7, [1e-6, 1e-6])
    assert raised.value.verdict.value == "precision" and "1 of 8 elements of output 0" in raised.value.feedback
    off[0][1, 2] = 2.0  # a mismatch in output 0 comes before its precision, and before output 1
    with pytest.raises(Failure) as raised:
        speed.check_batch(calls, off, 7, [1e-6, 1e-6])
    assert raised.value.verdict.value == "mismatch" and "output 0" in raised.value.feedback


def test_input_sets_staged_in_the_slots_layout_reach_the_slots_as_copied_call_by_call():
    # a transposed leaf, a broadcast-shaped one and an odd-sized integer one: one copy per leaf then
    # gives the slots the same bytes as a copy per call and leaf (each call's place 256-byte aligned)
    sets = [[torch.randn(3, 5).t(), torch.randn(1, 7), torch.arange(3, dtype=torch.int16) + k] for k in range(4)]
    specs, _ = speed.slot_specs(sets[0], torch.ones(1), len(sets))
    staged = speed.staged_buffer(specs, torch.device("cpu"), 1 << 40)
    assert all(speed.slot_bytes(t).eq(0).all() for t in staged)  # zeroed: the gaps never hold judge memory
    speed.stage_sets(staged, sets)
    by_call, by_call_again, at_once = (
        speed.carve_slots(torch.full((1 << 16,), fill, dtype=torch.uint8), specs, speed.SharedArena.ALIGN)
        for fill in (7, 9, 7)
    )
    speed.copy_sets(by_call, sets, None)
    speed.copy_sets(by_call_again, sets, None)
    speed.copy_sets(at_once, sets, staged)
    for k, inputs in enumerate(sets):
        for a, b, leaf in zip(by_call, at_once, inputs, strict=True):
            assert torch.equal(a[k], leaf) and torch.equal(b[k], leaf)
    for a, a_again, b in zip(by_call, by_call_again, at_once, strict=True):
        gaps = speed.slot_bytes(a) != speed.slot_bytes(a_again)  # bytes no copy of a call wrote
        assert gaps.any() and speed.slot_bytes(b)[gaps].eq(0).all()
    assert speed.staged_buffer(specs, torch.device("cpu"), 8 * speed.carved_bytes(specs, 512) - 1) is None
    assert speed.staged_buffer(specs, torch.device("cpu"), 8 * speed.carved_bytes(specs, 512)) is not None
    big = [((1, speed.STAGED_BYTES + 1), (speed.STAGED_BYTES + 1, 1), torch.uint8)]
    assert speed.staged_buffer(big, torch.device("meta"), 1 << 50) is None  # over the most staged


def _counts_before_session_12(expected, got, bounds):
    """The timed check's counts as computed before session 12 (one float64 copy per side and a new
    tensor per operation; RMS per call, largest magnitude read to the host): the reference the fewer
    passes of ``speed.check_counts`` must match; with red team 20 #1's rule for an element the reference
    has non-finite (the same NaN or infinity, or a finite value, else off)."""
    import math

    out = []
    for m, g in enumerate(got):
        bound = bounds[m] if bounds is not None and m < len(bounds) else None
        group = max(1, speed.compare.CHUNK_ELEMENTS // max(g[0].numel(), 1))
        bad = imprecise = 0
        rms = None
        if g.is_floating_point() or g.is_complex():
            squares, count = torch.zeros((), dtype=torch.float64), 0
            for call in expected:
                flat = call[m].reshape(-1) if not call[m].is_complex() else torch.view_as_real(call[m]).reshape(-1)
                chunk = flat.double()
                squares += torch.where(torch.isfinite(chunk), chunk, 0.0).square().sum()
                count += flat.numel()
            rms = (squares / max(count, 1)).sqrt().clamp_min(torch.finfo(expected[0][m].dtype).tiny)
        for first in range(0, len(expected), group):
            last = min(first + group, len(expected))
            e = torch.stack([expected[k][m] for k in range(first, last)]) if last - first > 1 else expected[first][m]
            e_flat, g_flat = e.reshape(-1), g[first:last].reshape(-1)
            scale = None
            if bound is not None and bound < math.inf:
                values = e_flat.double() if not e_flat.is_complex() else torch.view_as_real(e_flat).double()
                scale = float(torch.where(torch.isfinite(values), values.abs(), 0.0).max()) if e_flat.numel() else 0.0
            for start in range(0, e_flat.numel(), speed.compare.CHUNK_ELEMENTS):
                ec = e_flat[start : start + speed.compare.CHUNK_ELEMENTS]
                gc = g_flat[start : start + speed.compare.CHUNK_ELEMENTS]
                if ec.is_floating_point() or ec.is_complex():
                    wide = torch.complex128 if ec.is_complex() else torch.float64  # red team 20 #4
                    e64, g64 = ec.to(wide), gc.to(wide)
                    same = (torch.isnan(e64) & torch.isnan(g64)) | (e64 == g64)
                    same |= ~torch.isfinite(e64) & torch.isfinite(g64)  # red team 20 #1's rule
                    error = (g64 - e64).abs()
                    loose = (error <= speed.LOOSE_TOLERANCE * (e64.abs() + rms)) & torch.isfinite(e64)
                    bad += int((~(loose | same)).sum())
                    if scale is not None:
                        imprecise += int((~((error <= speed.TIMED_SLACK * bound * scale) | same)).sum())
                else:
                    bad += int((ec != gc).sum())
        out.append([bad, imprecise])
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("chunk", [7, 1 << 24], ids=["chunked", "whole"])
def test_the_timed_checks_fewer_passes_count_as_before(monkeypatch, dtype, chunk):
    # outputs near the loose and the precision bounds, NaNs and infinities on either side or both, the
    # largest finite values of the dtype, subnormals, and one call's output of its own
    monkeypatch.setattr(speed.compare, "CHUNK_ELEMENTS", chunk)
    gen = torch.Generator().manual_seed(12)
    big = torch.finfo(dtype).max
    for trial in range(6):
        calls = 1 + trial % 4
        expected = [[torch.randn(5, 3, generator=gen).mul(10.0 ** (trial - 2)).to(dtype),
                     torch.arange(4) + k] for k in range(calls)]  # fmt: skip
        got = [torch.stack([c[0] for c in expected]).clone(), torch.stack([c[1] for c in expected]).clone()]
        noise = torch.randn(got[0].shape, generator=gen).mul(10.0 ** -(trial % 5)).to(dtype)
        got[0] += noise * got[0].float().abs().mean().to(dtype)
        nan, inf = float("nan"), float("inf")
        specials = [(nan, nan), (nan, 1.0), (2.0, nan), (inf, inf), (-inf, inf), (big, -big), (big, big), (1e-40, 0.0),
                    (0.0, -0.0)]  # fmt: skip
        for e_value, g_value in specials[trial : trial + 4]:
            k, i, j = (trial % calls, (trial * 3) % 5, trial % 3)
            expected[k][0][i, j] = e_value
            got[0][k, i, j] = g_value
        got[1][0, 1] += trial % 2  # an integer output off where trial is odd
        bounds = [10.0 ** -(trial % 4 + 1), 0.0]
        before = _counts_before_session_12(expected, got, bounds)
        assert speed.check_counts(expected, got, bounds).tolist() == before, (trial, before)
        assert speed.check_counts(expected, got, None).tolist() == [[b, 0] for b, _ in before]


def test_the_rms_and_the_largest_magnitude_come_out_as_before():
    gen = torch.Generator().manual_seed(3)
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.complex64):
        outputs = [torch.randn(6, generator=gen).to(dtype) * 3 for _ in range(4)]
        outputs[1][2] = float("inf")
        outputs[2][0] = float("nan")
        flats = [o.reshape(-1) if not o.is_complex() else torch.view_as_real(o).reshape(-1) for o in outputs]
        every = torch.cat([f.double() for f in flats])
        finite = torch.where(torch.isfinite(every), every, 0.0)
        assert speed._rms(outputs).item() == pytest.approx(finite.square().mean().sqrt().item(), rel=1e-12)
        assert speed._largest(outputs[1]).item() == finite[len(flats[0]) : 2 * len(flats[0])].abs().max().item()
    assert speed._largest(torch.tensor([-7, 3])).item() == 7.0  # integers: every element finite


def test_the_clean_hand_off_is_measured_behind_the_brackets_flag_holds(monkeypatch):
    # the twin's empty bracket less the judge's, each behind a hold released once the bracket is queued:
    # the twin's once it queued its part, the judge's once its end is
    from tritongym.evaluate.judge import twin as twin_module

    log = []
    pairs = iter([(0.0, 0.1), (0.0, 0.4), (0.0, 0.1), (0.0, 0.45), (0.0, 0.1), (0.0, 0.35)])  # ms: local, remote

    class Made:
        def __init__(self):
            self.pending = None

        def __call__(self, enable_timing=False):
            if self.pending is None:
                at = next(pairs)
                self.pending = TimedEvent(at[1])
                start = TimedEvent(at[0])
                start.record = lambda: log.append("start")
                return start
            end, self.pending = self.pending, None
            end.record = lambda: log.append("end")
            return end

    monkeypatch.setattr(twin_module.torch.cuda, "Event", Made())
    monkeypatch.setattr(twin_module, "wait_for", lambda event, deadline: log.append("poll"))
    twin = SimpleNamespace(go=TimedEvent(0.0), done=TimedEvent(0.0), hand_off=lambda: log.append("twin"))
    holds = CpuHolds(log=log)
    assert twin_module.calibrate(twin, holds, reps=3) == pytest.approx(0.3e-3)  # the median of 0.3, 0.35, 0.25 ms
    local = ["hold", "start", "end", "release", "settle"]
    remote = ["hold", "start", "twin", "release", "poll", "end", "settle"]
    assert log == (local + remote) * 3


def test_the_holds_kernel_is_loaded_and_released_at_once(monkeypatch):
    # run once outside the exclusive lock: released right after its launch, it never waits out its timeout
    steps, pending = [], []

    class Wait:
        def __getitem__(self, grid):
            return lambda flags, index, size, timeout_ns, num_warps: pending.append((flags, index, size, timeout_ns))

    def synchronize():  # the GPU runs the kernel: it sees the flag as the host left it
        for flags, index, size, timeout_ns in pending:
            steps.append(("ran", int(flags[index]), timeout_ns))
            flags[size + index] = holds_module.RELEASED if flags[index] else holds_module.TIMED_OUT

    monkeypatch.setattr(holds_module, "_wait", Wait())
    monkeypatch.setattr(holds_module.torch.cuda, "_sleep", lambda cycles: steps.append(("sleep", cycles)))
    monkeypatch.setattr(holds_module.torch.cuda, "synchronize", synchronize)
    unpinned = torch.zeros  # no pinned memory without CUDA
    monkeypatch.setattr(holds_module.torch, "zeros", lambda n, dtype=None, pin_memory=False: unpinned(n, dtype=dtype))
    holds_module.load()
    assert steps == [("sleep", 0), ("ran", 1, int(holds_module.MAX_HOLD_S * 1e9))]
