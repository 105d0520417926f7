"""The GPU's verdicts the CPU's are measured against in tests/adversarial/redteam16/README.md (marker
``gpu``; run through the device tool). Run on an H200 in session 11 after the merge: every test passed but
the decoys' two, whose 256 full-size decoys were ``out_of_memory`` (now their own test; the decoys' test
takes 32, not rerun since)."""

from pathlib import Path

import pytest
import torch

from tritongym.evaluate import EvalConfig, Verdict, evaluate
from tritongym.problems import find_problem

HERE = Path(__file__).parent / "redteam16"
HONEST = Path(__file__).parent.parent / "candidates" / "honest"
pytestmark = pytest.mark.gpu


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cuda", "trials": 2, "timing": False, "profile": False, "torch_compute": "forbid",
                         **overrides})  # fmt: skip


@pytest.mark.parametrize("route", ["empty", "clone", "rewrite"])
def test_decoys_or_a_rewrite_before_the_answer_are_seen_on_a_gpu(route):
    """#1 on a GPU, at the full size (8192-wide rows: the extents are sampled, not copied whole): what each
    launch left is sampled after it by a strided copy on the launch's stream, checked by another when the
    memory is handed again, all compared after forward; no synchronisation in forward. 32 decoys: 256 of
    the output's size are more than the job's memory (the next test)."""
    source = (HERE / "decoys_handed_first.py").read_text().replace('ROUTE = "empty"', f'ROUTE = "{route}"')
    result = evaluate(find_problem("11_roll"), source.replace("DECOYS = 256", "DECOYS = 32"), config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output" in result.feedback


def test_256_decoys_at_the_full_size_are_more_memory_than_the_job_allows():
    """Measured on an H200 (session 11): 256 fresh decoys of 11_roll's full-size output held 16.6 GiB in
    trial 1, past the job's 11.75 GiB: the route costs the candidate its verdict before any answer check."""
    result = evaluate(find_problem("11_roll"), (HERE / "decoys_handed_first.py").read_text(), config())
    assert result.verdict is Verdict.OUT_OF_MEMORY, result.feedback


@pytest.mark.parametrize("route", ["pieces", "bits"])
def test_an_answer_in_pieces_or_other_bits_is_seen_on_a_gpu(route):
    """#1b on a GPU: a handed tensor's storage read as bytes in the output's dtype (``set_`` over the
    device storage, a strided slice, its copy)."""
    source = (HERE / "answer_handed_in_pieces.py").read_text().replace('ROUTE = "pieces"', f'ROUTE = "{route}"')
    result = evaluate(find_problem("11_roll"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback


@pytest.mark.parametrize("name", ["glue_clone_between_kernels", "glue_transpose_between_kernels"])
def test_glue_moving_a_kernels_output_is_ok_on_a_gpu(name):
    """The glue-copy false positive on a GPU at the full size, with the default settings (findings none)."""
    result = evaluate(find_problem("11_roll"), (HONEST / f"{name}.py").read_text(), EvalConfig(device="cuda"))
    assert result.verdict is Verdict.OK, result.feedback
    assert result.findings == []


def test_the_provenance_rule_runs_on_device_memory():
    """The rule's own code on CUDA tensors (``handed.FirstHanded``, ``Left``, ``Check``): a launch's
    record, glue's copy of it kept the kernels' work, glue's answer written over it looked at, samples of
    a large extent (past ``LEFT_BYTES``) taken on the current stream and read in ``settle`` (synchronised)
    and ``copies``."""
    from tritongym.evaluate.guards import OpRecorder
    from tritongym.evaluate.judge.handed import LEFT_BYTES, FirstHanded, stepped_sample

    x = torch.randn(512, 1024, device="cuda")
    answer = torch.roll(x, 100, 1)
    assert x.nbytes > LEFT_BYTES

    def looked(route: str) -> int:
        handed = FirstHanded([[x.numel(), "torch.float32"]], [x])
        with OpRecorder(moved=handed.moved) as recorder:
            scratch = torch.full_like(x, float("nan"))  # no earlier call's answer (the allocator's cache)
            after = handed.see((x, scratch), {})
            scratch.copy_(x if route == "rewritten" else answer)  # the kernel's work
            after()
            handed.settle()  # past the bound: decided on the host after the device's work, in forward
            if route == "rewritten":
                scratch.copy_(torch.cat((x[:, -100:], x[:, :-100]), dim=1))
            out = scratch.clone()
            handed.see((out,), {})()
        assert not recorder.compute
        torch.cuda.synchronize()
        flat, step = answer.reshape(-1).cpu(), stepped_sample(answer.numel())
        return sum(torch.equal(s, flat[start::step]) for _, (start, s), _ in handed.copies())

    assert looked("moved") == 0 and looked("rewritten") == 1
