"""The judge's twin is started again when it is gone (a runner of the judge's user may kill it)."""

from types import SimpleNamespace

from tritongym.evaluate.judge import twin


class FakeTwin:
    started = 0

    def __init__(self, device):
        FakeTwin.started += 1
        self.exit_code = None
        self.closed = False
        self.process = SimpleNamespace(poll=lambda: self.exit_code)

    def close(self):
        self.closed = True


def test_a_live_twin_is_kept_and_a_gone_one_replaced(monkeypatch):
    monkeypatch.setattr(twin, "Twin", FakeTwin)
    ctx = SimpleNamespace(twin=None, device="cuda:0")
    first = twin.ensure_twin(ctx)
    assert twin.ensure_twin(ctx) is first and FakeTwin.started == 1
    first.exit_code = -9  # killed
    second = twin.ensure_twin(ctx)
    assert second is not first and ctx.twin is second and first.closed and FakeTwin.started == 2


def test_the_twin_starts_before_the_judges_events_and_context_are_made(monkeypatch):
    # its import of torch and its own CUDA context overlap the judge's context (the pool's start)
    import io

    order = []

    class Event:
        def __init__(self, interprocess=False):
            order.append("event")

        def ipc_handle(self):
            return b"\x01"

    def popen(args, **kwargs):
        order.append("twin")
        return SimpleNamespace(stdin=io.BytesIO(), stdout=io.BytesIO(twin.QUEUED), poll=lambda: None)

    monkeypatch.setattr(twin.torch.cuda, "Event", Event)
    monkeypatch.setattr(twin.subprocess, "Popen", popen)
    monkeypatch.setattr(twin.torch.cuda, "set_device", lambda index: order.append(f"context {index}"))
    started = twin.Twin(SimpleNamespace(index=1))
    assert order == ["twin", "context 1", "event", "event"]
    assert started.process.stdin.getvalue() == b"01 01\n"  # the handles, once the events exist
