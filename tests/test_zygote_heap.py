"""The zygote settles its heap before it forks runners (zygote.settle_heap): garbage it left in a
reference cycle is collected in the zygote, never in a runner, where an object's finaliser would run
on state the fork did not copy (an MLIR context joining threads that exist only in the zygote: LLVM
aborted every runner under Triton 3.5)."""

import gc
import os

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
