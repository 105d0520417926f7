"""The zygote settles its heap before it forks runners (zygote.settle_heap): garbage it left in a
reference cycle is collected in the zygote, never in a runner, where an object's finaliser would run
on state the fork did not copy (an MLIR context joining threads that exist only in the zygote: LLVM
aborted every runner under Triton 3.5)."""

import gc
import os
import weakref

import torch

from tritongym.evaluate.judge.memory import release
from tritongym.evaluate.judge.zygote import settle_heap


class Finalised:
    """A cycle's member whose finaliser writes which process ran it."""

    def __init__(self, path: str):
        self.path, self.me = path, self

    def __del__(self):
        with open(self.path, "a") as fh:
            fh.write(f"{os.getpid()}\n")


def test_garbage_in_a_cycle_is_collected_in_the_zygote_not_in_a_forked_runner(tmp_path):
    log = tmp_path / "finalised"
    gc.disable()  # the cycle stays uncollected until settle_heap, as the warm-up's did
    try:
        Finalised(str(log))
        settle_heap()
        pid = os.fork()
        if pid == 0:
            gc.collect()  # a runner's collector: nothing of the zygote's is left to finalise
            os._exit(0)
        os.waitpid(pid, 0)
    finally:
        gc.enable()
        gc.unfreeze()
    assert log.read_text().split() == [str(os.getpid())]


class Held:
    """A cycle's member holding a tensor, as a job's objects may (its memory goes back only once the
    cycle is collected)."""

    def __init__(self):
        self.me, self.tensor = self, torch.zeros(4)


def test_the_judges_settled_start_is_not_walked_and_a_jobs_cycle_is_still_freed():
    """The judge settles its heap once started (judge.main): the collection after every job
    (memory.release) walks only what jobs made since, and still frees a job's garbage in a cycle."""
    gc.disable()  # nothing is collected but by settle_heap and release
    try:
        started = Held()  # alive through the judge's life, as its modules and contexts are
        settle_heap()
        assert all(obj is not started for obj in gc.get_objects())  # frozen: no collection walks it
        job = weakref.ref(Held().tensor)  # the job's cycle, garbage once the job ends
        assert job() is not None
        release(torch.device("cpu"))
        assert job() is None
        assert started.tensor is not None
    finally:
        gc.enable()
        gc.unfreeze()
