"""The launcher store (judge/launcher_builder.py, judge/launcher_cache.py): what a runner may ask for,
what the builder writes, and that a runner reads only what the builder wrote.

The CPU has no CUDA: Triton's real ``cuda_utils`` and launchers do not link here. The builder runs
Triton's own compile path (``compile_module_from_src``, its key, ``_build`` and gcc through
``knobs.build.impl``) on a stand-in of the NVIDIA driver module shaped like Triton 3.4-3.6's
(``make_launcher`` + ``CudaLauncher``) that generates a small real C extension per signature; where the
installed Triton has ``make_launcher`` itself (3.4-3.6: run these tests with such a Triton first on
PYTHONPATH), the builder's source is compared with Triton's and a runner's note made by Triton's own
``CudaLauncher`` goes through the builder to the next job's store hit.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path
from types import SimpleNamespace

import pytest

from tritongym.evaluate.judge import launcher_builder as lb
from tritongym.evaluate.judge import launcher_cache as lc
from tritongym.evaluate.judge import machine_lock

PY_INCLUDE = sysconfig.get_paths()["include"]
needs_gcc = pytest.mark.skipif(
    shutil.which("gcc") is None or not Path(PY_INCLUDE, "Python.h").exists(), reason="needs gcc and Python.h"
)

LAUNCHER = {"kind": "launcher", "signature": ["*fp32", "*fp32", "i32", "constexpr"], "tensordesc": None}


# -- what a runner may ask for -------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        LAUNCHER,
        {"kind": "utils"},
        {"kind": "launcher", "signature": ["*kbf16", ["i64", "fp16"], "u8", "fp8e4nv"], "tensordesc": None},
        {"kind": "launcher", "signature": ["tensordesc<fp16[64, 128]>", "i32"], "tensordesc": [True]},
        {"kind": "launcher", "signature": [], "tensordesc": None},
    ],
)
def test_signatures_of_triton_types_are_accepted_and_round_trip(data):
    spec = lb.parse_spec(data)
    assert lb.parse_spec(json.loads(json.dumps(spec.as_json()))) == spec
    assert spec.as_json() == data


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "launcher", "signature": ['i32"); system("id'], "tensordesc": None},  # C injection
        {"kind": "launcher", "signature": ["*fp32;\n#include </etc/passwd>"], "tensordesc": None},
        {"kind": "launcher", "signature": ["fp32) { return 0; } int x(int"], "tensordesc": None},
        {"kind": "launcher", "signature": ["tensordesc<fp16[64]>; abort()"], "tensordesc": [True]},
        {"kind": "launcher", "signature": ["*void"], "tensordesc": None},
        {"kind": "launcher", "signature": ["i32"] * (lb.MAX_ARGS + 1), "tensordesc": None},  # absurd arity
        {"kind": "launcher", "signature": [[["i32"] * 40, ["i32"] * 40]], "tensordesc": None},  # arity in tuples
        {"kind": "launcher", "signature": [[[["i32"]]]], "tensordesc": None},  # nested too deeply
        {"kind": "launcher", "signature": ["i" + "3" * 100], "tensordesc": None},
        {"kind": "launcher", "signature": [32], "tensordesc": None},
        {"kind": "launcher", "signature": "*fp32", "tensordesc": None},
        {"kind": "launcher", "signature": ["tensordesc<fp16[64, 64]>"], "tensordesc": [True, False]},
        {"kind": "launcher", "signature": ["i32"], "tensordesc": None, "source": "int main(){}"},  # no C taken
        {"kind": "utils", "binary": "7f454c46"},
        {"kind": "kernel"},
        ["utils"],
    ],
)
def test_hostile_or_absurd_signatures_are_refused(data):
    with pytest.raises(lb.InvalidSpec):
        lb.parse_spec(data)


def test_a_jobs_misses_are_read_bounded_validated_and_distinct(tmp_path):
    lines = [json.dumps(LAUNCHER)] * 3 + ["not json", json.dumps({"kind": "launcher", "signature": ["x;"]})]
    lines += [json.dumps({"kind": "launcher", "signature": ["i32"] * n, "tensordesc": None}) for n in range(20)]
    (tmp_path / lc.MISSES).write_text("\n".join(lines) + "\n")
    count, specs = lb.read_misses(tmp_path)
    assert count == 23  # the valid notes
    assert len(specs) == lb.MAX_REQUESTS_PER_JOB and specs[0] == lb.parse_spec(LAUNCHER)
    assert lb.read_misses(tmp_path / "absent") == (0, [])


def test_a_misses_file_that_is_a_link_or_a_fifo_is_not_read(tmp_path):
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps(LAUNCHER) + "\n")
    linked, fifo = tmp_path / "linked", tmp_path / "fifo"
    linked.mkdir()
    fifo.mkdir()
    (linked / lc.MISSES).symlink_to(secret)
    os.mkfifo(fifo / lc.MISSES)  # a reader that opened it blocking would wait forever
    assert lb.read_misses(linked) == (0, [])
    assert lb.read_misses(fifo) == (0, [])


# -- the store -----------------------------------------------------------------------------------


def test_a_store_that_others_may_write_is_refused(tmp_path):
    root = tmp_path / "launchers"
    store = lb.store_dir(root)
    assert store.parent == root and store.is_dir()
    store.chmod(0o777)
    with pytest.raises(lb.SandboxError):
        lb.store_dir(root)
    assert lb.LauncherStore(str(root), "cuda", {}).runner_env == {"TRITON_CACHE_MANAGER": lc.MANAGER}  # none


def test_the_store_serves_only_files_whose_sha256_is_in_the_manifest(tmp_path):
    store = lb.store_dir(tmp_path)
    name = "cuda_utils" + sysconfig.get_config_var("EXT_SUFFIX")
    key = "a" * 64
    path = lb.put(store, key, name, b"trusted")
    assert lc.store_path(str(store), key, name) == path
    assert lc.store_path(str(store), "b" * 64, name) is None  # another key
    Path(path).write_bytes(b"planted")
    assert lc.store_path(str(store), key, name) is None
    with pytest.raises(lb.InvalidSpec):
        lb.put(store, "../escape", name, b"x")
    with pytest.raises(lb.InvalidSpec):
        lb.put(store, key, "kernel.cubin", b"x")
    assert lc.c_module("add_kernel.cubin") is None and lc.c_module(name) == "cuda_utils"


def test_a_write_cut_short_leaves_nothing_after_the_next_one(tmp_path):
    """A builder killed mid-write leaves its temporary file; the next write, under the same lock, removes it."""
    store = lb.store_dir(tmp_path)
    name = "cuda_utils" + sysconfig.get_config_var("EXT_SUFFIX")
    (store / ("a" * 64)).mkdir()
    cut_short = [store / ".tmp-manifest", store / ("a" * 64) / ".tmp-module"]
    for path in cut_short:
        path.write_bytes(b"half")
    lb.put(store, "b" * 64, name, b"trusted")
    assert not any(path.exists() for path in cut_short)
    assert lc.store_path(str(store), "b" * 64, name) is not None


def test_links_fifos_and_a_held_lock_in_the_store_block_nobody(tmp_path, monkeypatch):
    """What a runner that could write the store might leave there: a manifest that is a FIFO (a
    reader that opened it would wait forever), a module that is a link, the lock taken for good."""
    import time

    store = lb.store_dir(tmp_path / "launchers")
    name = "cuda_utils" + sysconfig.get_config_var("EXT_SUFFIX")
    lb.put(store, "a" * 64, name, b"trusted")
    elsewhere = tmp_path / "elsewhere.so"
    elsewhere.write_bytes(b"trusted")
    (store / ("a" * 64) / name).unlink()
    (store / ("a" * 64) / name).symlink_to(elsewhere)  # same bytes, but not the store's file
    assert lc.store_path(str(store), "a" * 64, name) is None
    (store / lc.MANIFEST).unlink()
    os.mkfifo(store / lc.MANIFEST)
    assert lc.read_manifest(str(store)) == {}
    monkeypatch.setattr(lb, "LOCK_TIMEOUT_S", 0.3)
    holder = machine_lock.open_lock(lb.STORE_LOCK, store / ".lock")
    release = machine_lock.take(holder, exclusive=True)  # taken for good, by a builder that does not end
    try:
        start = time.monotonic()
        with pytest.raises(TimeoutError, match="stayed taken"):
            lb.put(store, "b" * 64, name, b"x")
        assert 0.3 <= time.monotonic() - start < 5
    finally:
        release()
        machine_lock.close(holder)
    lb.put(store, "b" * 64, name, b"x")  # free again


# -- building and reading, through Triton's own compile path ---------------------------------------


def gcc(name: str, src: str, srcdir: str, library_dirs, include_dirs, libraries, *rest) -> str:
    """``knobs.build.impl``: the C compiler as Triton's ``_build`` calls it, minus CUDA."""
    so = os.path.join(srcdir, name + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["gcc", src, "-O0", "-shared", "-fPIC", f"-I{PY_INCLUDE}", "-o", so], check=True)
    return so


class Compiles:
    """Counts the builds and keeps the sources they compiled."""

    def __init__(self):
        self.sources: list[str] = []

    def __call__(self, name, src, srcdir, *rest):
        self.sources.append(Path(src).read_text())
        return gcc(name, src, srcdir, *rest)


def stand_in_driver():
    """A driver module shaped like Triton 3.4-3.6's NVIDIA one: a launcher's C source from the
    signature, compiled and keyed by Triton's ``compile_module_from_src``."""
    from triton.runtime.build import compile_module_from_src

    def make_launcher(constants, signature, tensordesc_meta):
        described = json.dumps([str(t) for t in signature.values()] + [m is None for m in tensordesc_meta or []])
        text = described.replace("\\", "\\\\").replace('"', '\\"')
        return (
            "#include <Python.h>\n"
            f'static PyObject* types(PyObject* self, PyObject* a) {{ return PyUnicode_FromString("{text}"); }}\n'
            'static PyMethodDef methods[] = {{"types", types, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};\n'
            'static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "__triton_launcher", NULL, -1, methods};\n'
            "PyMODINIT_FUNC PyInit___triton_launcher(void) { return PyModule_Create(&def); }\n"
        )

    class CudaLauncher:
        def __init__(self, src, metadata):  # Triton's locals, which the runner's miss note reads
            constants = src.constants if hasattr(src, "constants") else dict()
            signature = {idx: value for idx, value in src.signature.items()}
            tensordesc_meta = getattr(metadata, "tensordesc_meta", None)
            src = make_launcher(constants, signature, tensordesc_meta)
            self.module = compile_module_from_src(src=src, name="__triton_launcher")

    return SimpleNamespace(make_launcher=make_launcher, CudaLauncher=CudaLauncher)


@pytest.fixture
def runner_cache(tmp_path, monkeypatch):
    """A job's Triton cache read through the store, as in a runner."""
    from triton import knobs

    store = lb.store_dir(tmp_path / "launchers")
    job_cache = tmp_path / "job" / "triton-cache"
    job_cache.mkdir(parents=True)
    monkeypatch.setenv(lc.STORE_ENV, str(store))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(job_cache))
    monkeypatch.setattr(knobs.cache, "manager_class", lc.StoreCacheManager)
    yield SimpleNamespace(store=store, job=job_cache)


def kernel_launch(driver, signature: dict, tensordesc_meta=None):
    """What a runner's Triton does for a compiled kernel: build (or fetch) its launcher."""
    src = SimpleNamespace(constants={(3,): 256}, signature=signature, fn=SimpleNamespace(arg_names=list(signature)))
    return driver.CudaLauncher(src, SimpleNamespace(tensordesc_meta=tensordesc_meta))


def job_modules(job_cache: Path) -> list[str]:
    return sorted(p.name for p in job_cache.rglob("*.so"))


@needs_gcc
def test_a_missed_launcher_is_built_by_the_builder_and_a_later_job_reads_it(runner_cache, monkeypatch):
    from triton import knobs

    driver, compiles = stand_in_driver(), Compiles()
    monkeypatch.setattr(knobs.build, "impl", compiles)
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    first = kernel_launch(driver, signature)  # job 1: the store is empty, the runner builds it itself
    assert len(compiles.sources) == 1 and job_modules(runner_cache.job) == [first.module.__file__.rsplit("/")[-1]]
    count, specs = lb.read_misses(runner_cache.job)
    assert count == 1 and specs == [lb.parse_spec(LAUNCHER)]

    assert lb.build(runner_cache.store, specs[0], compile=compiles, driver=driver) == "stored"
    assert compiles.sources[1] == compiles.sources[0]  # the builder's own source is the runner's
    assert lb.build(runner_cache.store, specs[0], compile=compiles, driver=driver) == "present"
    assert len(compiles.sources) == 2

    shutil.rmtree(runner_cache.job)  # job 2: a fresh cache, another kernel of the same signature
    runner_cache.job.mkdir()
    second = kernel_launch(driver, {"a": "*fp32", "b": "*fp32", "m": "i32", "BLOCK": "constexpr"})
    assert len(compiles.sources) == 2 and job_modules(runner_cache.job) == []  # nothing compiled
    assert Path(second.module.__file__).parent.parent == runner_cache.store
    assert json.loads(second.module.types())[:3] == ["*fp32", "*fp32", "i32"]
    assert lb.read_misses(runner_cache.job) == (0, [])

    other = kernel_launch(driver, {"a": "*fp16", "n": "i64"})  # another signature: the runner's own build
    assert len(compiles.sources) == 3 and Path(other.module.__file__).is_relative_to(runner_cache.job)


@needs_gcc
def test_a_tampered_module_in_the_store_is_ignored_and_built_into_the_job(runner_cache, monkeypatch):
    from triton import knobs

    driver, compiles = stand_in_driver(), Compiles()
    monkeypatch.setattr(knobs.build, "impl", compiles)
    spec = lb.parse_spec(LAUNCHER)
    assert lb.build(runner_cache.store, spec, compile=compiles, driver=driver) == "stored"
    (entry,) = [e for e in lc.read_manifest(str(runner_cache.store)) if "__triton_launcher" in e]
    planted = runner_cache.store / entry
    planted.write_bytes(planted.read_bytes() + b"\0")  # a runner that could write the store
    launched = kernel_launch(driver, {"x": "*fp32", "y": "*fp32", "n": "i32", "B": "constexpr"})
    assert Path(launched.module.__file__).is_relative_to(runner_cache.job)
    assert len(compiles.sources) == 2 and lb.read_misses(runner_cache.job)[0] == 1
    assert lb.build(runner_cache.store, spec, compile=compiles, driver=driver) == "stored"  # the builder repairs it
    assert lc.store_path(str(runner_cache.store), *entry.split("/")) is not None


@needs_gcc
def test_a_c_module_planted_in_the_cache_directory_is_never_loaded(runner_cache, monkeypatch):
    """At warm-up a runner's cache directory is shared by the runners of its user: a module found
    there that this process did not build is built again, not loaded."""
    from triton import knobs

    driver, compiles = stand_in_driver(), Compiles()
    monkeypatch.setattr(knobs.build, "impl", compiles)
    signature = {"x": "*fp32", "n": "i32"}
    kernel_launch(driver, signature)
    kernel_launch(driver, signature)  # a second kernel of one signature in one process: built once
    assert len(compiles.sources) == 1
    monkeypatch.setattr(lc, "_built_here", set())  # the next runner: the file is someone else's now
    launched = kernel_launch(driver, signature)
    assert len(compiles.sources) == 2 and lb.read_misses(runner_cache.job)[0] == 2
    assert Path(launched.module.__file__).is_relative_to(runner_cache.job)


@needs_gcc
def test_tensor_descriptor_lowering_is_part_of_the_request(runner_cache, monkeypatch):
    from triton import knobs

    driver, compiles = stand_in_driver(), Compiles()
    monkeypatch.setattr(knobs.build, "impl", compiles)
    signature = {"d": "tensordesc<fp16[64, 64]>", "n": "i32"}
    kernel_launch(driver, signature, tensordesc_meta=[{"swizzle": 128}])
    _, (spec,) = lb.read_misses(runner_cache.job)
    assert spec.tensordesc == (True,)
    lb.build(runner_cache.store, spec, compile=compiles, driver=driver)
    assert compiles.sources[1] == compiles.sources[0]


def test_cuda_utils_is_built_through_tritons_own_call_and_read_back(runner_cache, monkeypatch):
    """The installed Triton's ``CudaUtils`` builds into the store under Triton's key; a runner's cache
    manager then serves it (the module is not loaded: it would need libcuda)."""
    pytest.importorskip("triton.backends.nvidia.driver")
    monkeypatch.setenv("TRITON_LIBCUDA_PATH", str(runner_cache.store.parent))  # no ldconfig lookup
    built = []

    def fake(name, src, srcdir, *rest):
        built.append(name)
        so = Path(srcdir, name + sysconfig.get_config_var("EXT_SUFFIX"))
        so.write_bytes(b"cuda_utils of " + Path(src).read_bytes()[:64])
        return str(so)

    assert lb.build(runner_cache.store, lb.Spec("utils"), compile=fake) == "stored"
    assert lb.build(runner_cache.store, lb.Spec("utils"), compile=fake) == "present"
    assert built == ["cuda_utils"]
    (entry,) = lc.read_manifest(str(runner_cache.store))
    key, filename = entry.split("/")
    manager = lc.StoreCacheManager(key)
    assert manager.get_file(filename) == str(runner_cache.store / entry)
    assert lb.read_misses(runner_cache.job) == (0, [])
    if not lb.per_signature_launchers():  # Triton >= 3.7: one generic launcher inside cuda_utils
        assert lb.build(runner_cache.store, lb.parse_spec(LAUNCHER), compile=fake) == "unneeded"


def test_the_builders_source_is_tritons_own(runner_cache, monkeypatch):
    """With a Triton that generates a launcher per signature, the source the builder compiles for a
    runner's note is what ``make_launcher`` generates for the kernel's signature and constants."""
    driver = pytest.importorskip("triton.backends.nvidia.driver")
    if not lb.per_signature_launchers(driver):
        pytest.skip(f"this Triton builds no launcher per signature ({driver.__name__} has no make_launcher)")
    monkeypatch.setenv("TRITON_LIBCUDA_PATH", str(runner_cache.store.parent))
    compiles = Compiles()

    def fake(name, src, srcdir, *rest):
        compiles.sources.append(Path(src).read_text())
        so = Path(srcdir, name + sysconfig.get_config_var("EXT_SUFFIX"))
        so.write_bytes(b"launcher")
        return str(so)

    signature = {"x": "*fp32", "t": ("i32", "*fp16"), "n": "i64", "B": "constexpr"}
    spec = lb.parse_spec({"kind": "launcher", "signature": ["*fp32", ["i32", "*fp16"], "i64", "constexpr"],
                          "tensordesc": None})  # fmt: skip
    assert lb.build(runner_cache.store, spec, compile=fake) == "stored"
    assert compiles.sources == [driver.make_launcher({(3,): 128}, signature, None)]


STUB_LAUNCHER = """#include <Python.h>
static PyObject* launch(PyObject* self, PyObject* args) { Py_RETURN_NONE; }
static PyMethodDef methods[] = {{"launch", launch, METH_VARARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "__triton_launcher", NULL, -1, methods};
PyMODINIT_FUNC PyInit___triton_launcher(void) { return PyModule_Create(&def); }
"""


@needs_gcc
def test_with_tritons_own_launcher_a_runners_note_is_built_and_read_by_the_next_job(runner_cache, monkeypatch):
    """Triton's real ``CudaLauncher`` in a runner notes the signature it missed; the builder builds from
    that note under the same key; the next job's ``CudaLauncher`` of another kernel of that signature
    reads it from the store. Only the compiler is a stand-in (no CUDA here): it compiles a stub
    module of the same name and records the source Triton asked it to compile."""
    from triton import knobs

    driver = pytest.importorskip("triton.backends.nvidia.driver")
    if not lb.per_signature_launchers(driver):
        pytest.skip(f"this Triton builds no launcher per signature ({driver.__name__} has no make_launcher)")
    monkeypatch.setenv("TRITON_LIBCUDA_PATH", str(runner_cache.store.parent))
    sources = []

    def stub(name, src, srcdir, *rest):
        sources.append(Path(src).read_text())
        Path(src).write_text(STUB_LAUNCHER)
        return gcc(name, src, srcdir, *rest)

    monkeypatch.setattr(knobs.build, "impl", stub)
    metadata = SimpleNamespace(tensordesc_meta=None, num_ctas=1, cluster_dims=(1, 1, 1), global_scratch_size=0,
                               global_scratch_align=1, profile_scratch_size=0, profile_scratch_align=1,
                               launch_cooperative_grid=False, launch_pdl=False)  # fmt: skip

    def launch(names):
        signature = dict(zip(names, ["*fp32", ("i32", "*fp16"), "i64", "constexpr"], strict=True))
        src = SimpleNamespace(constants={names[3]: 128}, signature=signature, fn=SimpleNamespace(arg_names=names))
        driver.CudaLauncher(src, metadata)

    launch(["x", "t", "n", "B"])
    assert len(sources) == 1 and len(job_modules(runner_cache.job)) == 1
    count, specs = lb.read_misses(runner_cache.job)
    assert count == 1 and specs[0].signature == ("*fp32", ("i32", "*fp16"), "i64", "constexpr")
    assert lb.build(runner_cache.store, specs[0], compile=stub) == "stored"
    assert sources[1] == sources[0]
    shutil.rmtree(runner_cache.job)
    runner_cache.job.mkdir()
    launch(["y", "pair", "m", "BLOCK"])
    assert len(sources) == 2 and job_modules(runner_cache.job) == [] and lb.read_misses(runner_cache.job) == (0, [])


def test_a_runner_with_a_user_of_its_own_cannot_write_the_store(tmp_path, monkeypatch):
    """CPU runners of their own user (root judge): the store is the judge's and read-only to them."""
    from helpers import run_candidate
    from tritongym.evaluate import Verdict

    if os.geteuid() != 0 or os.environ.get("TRITONGYM_RUNNER_USER") == "same":
        pytest.skip("runners have a user of their own only under a root judge")
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="tritongym-store-test-"))  # traversable: a refusal is the store's
    top.chmod(0o755)
    root = top / "launchers"
    store = lb.store_dir(root)
    lb.put(store, "a" * 64, "cuda_utils" + sysconfig.get_config_var("EXT_SUFFIX"), b"trusted")
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    monkeypatch.setenv("TRITONGYM_LAUNCHER_STORE", str(root))
    candidate = (Path(__file__).parent / "candidates" / "correct.py").read_text() + (
        "\nimport os\nstore = os.environ['TRITONGYM_LAUNCHER_STORE']\n"
        "for target in ('manifest.json', 'planted.so', 'a' * 64 + '/cuda_utils.so'):\n"
        "    try:\n"
        "        open(os.path.join(store, target), 'wb').write(b'x')\n"
        "        print('WROTE', target)\n"
        "    except OSError as exc:\n"
        "        print('REFUSED', type(exc).__name__)\n"
    )
    (tmp_path / "writes_store.py").write_text(candidate)
    try:
        result = run_candidate("writes_store", directory=tmp_path, static_checks=False, timing=False)
    finally:
        after = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
        shutil.rmtree(top)
    assert result.verdict is Verdict.OK, result.feedback
    assert result.stdout.count("REFUSED PermissionError") == 3 and "WROTE" not in result.stdout
    assert after == before


# -- the judge's side ------------------------------------------------------------------------------


def test_after_a_job_the_judge_counts_the_runners_builds_and_asks_for_them_once(tmp_path):
    store = lb.LauncherStore(str(tmp_path / "launchers"), "cpu", {})
    assert store.builder is None and store.runner_env[lc.STORE_ENV] == str(store.path)
    assert store.runner_env["TRITON_CACHE_MANAGER"] == lc.MANAGER
    asked = []
    store.builder = SimpleNamespace(ask=asked.extend)
    job = tmp_path / "job"
    (job / "triton-cache").mkdir(parents=True)
    (job / "triton-cache" / lc.MISSES).write_text(json.dumps(LAUNCHER) + "\n" + json.dumps({"kind": "utils"}) + "\n")
    assert store.after_job(job) == 2
    assert asked == [lb.parse_spec(LAUNCHER), lb.Spec("utils")]
    assert lb.LauncherStore("", "cuda", {}).runner_env == {"TRITON_CACHE_MANAGER": lc.MANAGER}


def test_the_builder_process_starts_answers_and_never_blocks_the_judge(tmp_path):
    """The real process (no CUDA here: ``cuda_utils`` fails to link, which it logs; requests it cannot
    build are today's behaviour), asked for more than it builds at once."""
    import sys

    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.pathsep.join(sys.path)}
    builder = lb.Builder(lb.store_dir(tmp_path), env | {"TRITON_LIBCUDA_PATH": str(tmp_path)})
    try:
        assert builder.wait_ready(120)
        many = [
            lb.parse_spec({"kind": "launcher", "signature": ["i32"] * (n % 60), "tensordesc": None}) for n in range(60)
        ]
        builder.ask(many * 2)
        assert len(builder.asked) == 60 and builder.proc.poll() is None
    finally:
        builder.close()
    assert builder.proc.returncode is not None
