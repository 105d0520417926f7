"""The third red team's breaks (tests/adversarial/redteam3/README.md). Each test asserts the safe
behaviour and is marked xfail(strict=True) while its break is open: it flips when the break is fixed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import CANDIDATES, DEVICE, small_problem
from tritongym.env import LocalEnv, PoolConfig
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.evaluate.judge.evidence import no_kernel, source_kernels, unknown_own_kernels
from tritongym.evaluate.judge.landlock import abi_version

HERE = Path(__file__).parent / "redteam3"
ROOT = os.geteuid() == 0
cpu_only = pytest.mark.skipif(DEVICE != "cpu", reason="the interpreter's break (a GPU profiles the forward)")


def config(**overrides) -> EvalConfig:
    return EvalConfig(device=DEVICE, **({"trials": 2, "timing_budget_s": 1.0} | overrides))


def same_user_pool(monkeypatch) -> LocalEnv:
    """A pool whose runners keep the judge's user (the GPU default; always so under a judge not root)."""
    if ROOT:
        monkeypatch.setenv("TRITONGYM_RUNNER_USER", "same")
    else:
        monkeypatch.delenv("TRITONGYM_RUNNER_USER", raising=False)
    return LocalEnv(PoolConfig(devices=DEVICE, sandboxes_per_device=1))


def run_in_order(env: LocalEnv, names: list[str], **overrides) -> list:
    problem = small_problem("vector_add")
    paths = [HERE / name if (HERE / name).exists() else CANDIDATES / name for name in names]
    return [env.submit(problem, path.read_text(), config(**overrides)).result() for path in paths]


def test_a_runner_of_the_judges_user_can_write_no_file_of_the_judges(monkeypatch):
    """Write access is probed by opening for appending (nothing is written): tritongym's, torch's and
    Triton's sources (imported by every later judge) and the sandbox home (the judge's caches). The
    probe imports tritongym to find its files, which the static checks refuse: they are off here."""
    with same_user_pool(monkeypatch) as env:
        (probe,) = run_in_order(env, ["probes_writable_files.py"], static_checks=False)
    assert probe.verdict is Verdict.OK, probe.feedback
    assert "WRITABLE" not in probe.stdout, probe.stdout


@pytest.mark.skipif(not ROOT, reason="a judge that is not root has runners that are not root: /proc/sys is refused")
def test_a_runner_of_the_judges_user_cannot_write_the_hosts_kernel_settings(monkeypatch):
    """Each setting is written with the value it has (nothing changes)."""
    with same_user_pool(monkeypatch) as env:
        (probe,) = run_in_order(env, ["probes_writable_sysctls.py"])
    assert probe.verdict is Verdict.OK, probe.feedback
    assert "SYSCTL_WRITABLE" not in probe.stdout, probe.stdout


def test_a_runner_of_the_judges_user_cannot_lower_its_zygotes_limits(monkeypatch):
    with same_user_pool(monkeypatch) as env:
        attacker, first, second = run_in_order(env, ["caps_zygote_address_space.py", "correct.py", "correct.py"])
    assert attacker.verdict is Verdict.OK, attacker.feedback
    assert first.verdict is Verdict.OK and second.verdict is Verdict.OK, (first.feedback, second.feedback)


@pytest.mark.skipif(not ROOT, reason="a non-root judge's /proc files are root's: its runners cannot write them")
def test_a_runner_of_the_judges_user_cannot_mark_its_zygote_for_the_oom_killer(monkeypatch):
    with same_user_pool(monkeypatch) as env:
        attacker, *victims = run_in_order(
            env, ["marks_judge_for_oom_killer.py", "reports_own_scores.py", "reports_own_scores.py"]
        )
    assert attacker.verdict is Verdict.OK, attacker.feedback
    assert all("oom_score_adj 0" in victim.stdout for victim in victims), [v.stdout for v in victims]


@cpu_only
def test_a_hand_made_inductor_launcher_running_numpy_is_no_triton(warm_env):
    result = warm_env.submit(
        small_problem("vector_add"), (HERE / "fake_inductor_launcher.py").read_text(), config(torch_compute="forbid")
    ).result()
    assert result.verdict in (Verdict.HACK_NO_TRITON, Verdict.HACK_TAMPERING), result.feedback


@cpu_only
def test_numpy_called_from_an_interpreted_kernel_body_is_refused_as_on_a_gpu(warm_env):
    """Triton's frontend runs on the CPU too (evaluate/frontend.py): a kernel may not reference a plain
    Python function, so its first launch fails as on a GPU, before any NumPy runs. Triton 3.9 rejects
    it while hashing what the kernel references (a RuntimeError: runtime_error, the GPU's verdict too);
    a Triton whose hash does not check it rejects it in its code generator (compile_error)."""
    result = warm_env.submit(
        small_problem("vector_add"), (HERE / "numpy_inside_interpreted_kernel.py").read_text(), config()
    ).result()
    assert result.verdict in (Verdict.RUNTIME_ERROR, Verdict.COMPILE_ERROR), result.feedback
    rejected = ("Unsupported function referenced: <function host_add", "Cannot access global variable host_add")
    assert any(message in result.feedback for message in rejected), result.feedback


def test_a_kernel_made_by_a_decorator_factory_is_judged(warm_env):
    result = warm_env.submit(
        small_problem("vector_add"), (HERE / "decorator_factory_kernel.py").read_text(), config()
    ).result()
    assert result.verdict is Verdict.OK, result.feedback


FACTORY = """
import triton
def kernel(**options):
    def wrap(fn):
        return triton.jit(fn, **options)
    return wrap
@kernel()
def add(x):
    pass
"""
LOOP = """
import triton
def _add(x):
    pass
def _mul(x):
    pass
add, mul = [triton.jit(fn) for fn in (_add, _mul)]
"""
KEYWORD = """
import triton
def add(x):
    pass
add_kernel = triton.jit(fn=add)
"""
DEDENTED = """
import textwrap
class Kernels:
    def source(self):
        return async_compile.triton("add", textwrap.dedent('''
            import triton
            @triton.jit
            def add(x):
                pass
        '''))
"""


@pytest.mark.parametrize("text", [FACTORY, LOOP, KEYWORD, DEDENTED], ids=["factory", "loop", "keyword", "dedented"])
def test_every_honest_way_to_make_a_kernel_is_let_through(text):
    """Not every way to make a kernel can be followed by reading the text: a text is refused as having
    no kernel only when nothing in it is named jit (and code in dedented strings is read)."""
    assert no_kernel(source_kernels(text)) is None


@pytest.mark.skipif(not ROOT, reason="only a runner with a user of its own has files to tell from the judge's")
def test_a_runners_files_in_tmp_go_with_the_job(warm_env):
    import glob

    result = warm_env.submit(
        small_problem("vector_add"), (HERE / "leaves_files_in_tmp.py").read_text(), config()
    ).result()
    left = glob.glob("/tmp/redteam3-leftover-*")
    for path in left:
        os.unlink(path)
    assert result.verdict is Verdict.OK, result.feedback
    assert not left
    if abi_version() > 0:  # a runner with a user of its own is confined too
        assert "refused" in result.stdout, result.stdout


@pytest.mark.skipif(DEVICE != "cpu" or not ROOT, reason="a network namespace of its own: CPU runners of a root judge")
def test_a_runner_cannot_reach_a_service_on_its_host(warm_env):
    import http.server
    import threading

    asked: list[str] = []

    class Listener(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Listener)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    source = (HERE / "reaches_host_services.py").read_text().replace('("127.0.0.1", 1)', f'("127.0.0.1", {port})', 1)
    try:
        result = warm_env.submit(small_problem("vector_add"), source, config()).result()
    finally:
        server.shutdown()
        server.server_close()
    assert result.verdict is Verdict.OK, result.feedback
    assert not asked


def _remove_segments(key: int, count: int) -> int:
    """Remove the System V segments key..key+count-1; return how many there were."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    found = 0
    for index in range(count):
        shm = libc.shmget(key + index, 0, 0)
        if shm >= 0:
            found += 1
            libc.shmctl(shm, 0, None)  # IPC_RMID
    return found


def test_a_runner_cannot_hold_memory_in_system_v_segments(warm_env):
    try:
        result = warm_env.submit(
            small_problem("vector_add"),
            (HERE / "hides_memory_in_sysv_shm.py").read_text(),
            config(memory_limit_mb=4096),
        ).result()
    finally:
        left = _remove_segments(0x7E3D0000, 4)
    assert "held 0 MiB" in result.stdout, (result.verdict, result.stdout)  # the seccomp filter refuses shmget
    assert not left


def test_a_repr_keyword_does_not_let_a_profile_claim_any_kernel_as_own():
    text = """
import triton
def decoy(x):
    pass
decoy_kernel = triton.jit(decoy, repr=lambda _: "decoy")
"""
    rows = [{"name": "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32", "own": True, "time_us": 10.0}]
    assert unknown_own_kernels(source_kernels(text), rows)
