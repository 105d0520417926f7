"""The design experiment's lazy rate: correct work outside the candidate's kernels, by coverage where it was
measured, else by the findings that say PyTorch or the host computed in forward."""

from tritongym.design.experiment import is_lazy


def test_lazy_by_coverage_where_measured_else_by_torch_compute_or_host_reads():
    assert is_lazy({"correct": True, "coverage": 0.1}, 0.5)
    assert not is_lazy({"correct": True, "coverage": 0.9, "findings": [{"check": "host_read"}]}, 0.5)
    for check in ("torch_compute", "host_read"):
        assert is_lazy({"correct": True, "coverage": None, "findings": [{"check": check}]}, 0.5)
        assert not is_lazy({"correct": False, "findings": [{"check": check}]}, 0.5)
    assert not is_lazy({"correct": True, "findings": [{"check": "timing_untrusted"}]}, 0.5)
