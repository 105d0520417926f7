"""The design experiment's lazy rate: correct work outside the candidate's kernels, by coverage where it was
measured, else by the findings that say PyTorch or the host computed in forward (the rewards' coverage)."""

from tritongym.design.experiment import is_lazy

OK = {"verdict": "ok", "correct": True}
WRONG = {"verdict": "mismatch", "correct": False}


def test_lazy_by_coverage_where_measured_else_by_torch_compute_or_host_reads():
    assert is_lazy(OK | {"coverage": 0.1}, 0.5)
    assert not is_lazy(OK | {"coverage": 0.9, "findings": [{"check": "host_read"}]}, 0.5)
    for check in ("torch_compute", "host_read"):
        assert is_lazy(OK | {"coverage": None, "findings": [{"check": check}]}, 0.5)
        assert not is_lazy(WRONG | {"findings": [{"check": check}]}, 0.5)
    assert not is_lazy(OK | {"findings": [{"check": "timing_untrusted"}]}, 0.5)
