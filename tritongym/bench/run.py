"""A benchmark run: episodes of a policy over a problem set, written to a run directory.

The directory holds ``run.json`` (the settings, the problems, the policy's usage), ``trajectories.jsonl``
(one TurnRecord per turn, appended and flushed line by line) and, from ``tritongym.bench.report``,
``summary.json``, ``report.md`` and the plots. Running the same settings into the same directory
resumes: every turn already recorded is replayed from its content key (:func:`turn_key`) instead of
being generated and evaluated again; turns left unscored (infrastructure errors) are tried again.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tritongym import __version__
from tritongym.agent.episodes import INFRASTRUCTURE, Episode, EpisodeConfig, EpisodeRunner, record_key
from tritongym.agent.feedback import FeedbackConfig
from tritongym.agent.prompts import Prompts
from tritongym.agent.records import TurnRecord, read_records, write_records
from tritongym.env import Env, LocalEnv, PoolConfig
from tritongym.env.base import stream_results
from tritongym.errors import ConfigError
from tritongym.evaluate.config import EvalConfig
from tritongym.paths import writable_dir
from tritongym.policy.base import Policy, SamplingConfig
from tritongym.problems import Problem, TableColumns, load_problems
from tritongym.problems.problem import shrunk_notice

log = logging.getLogger(__name__)

RUN_FILE, TRAJECTORIES = "run.json", "trajectories.jsonl"
NOT_COMPARED = frozenset({"base_url"})
"""Settings a resumed run may change: where the server is, not what it serves (a model server restarted
on another port continues the run; run.json records the latest)."""
POLICIES = ("openai", "scripted", "hf")


@dataclass(frozen=True)
class BenchConfig:
    """Everything that decides a run's results; a run directory holds one (resuming checks it)."""

    policy: str = "openai"
    """``openai`` (a chat-completions server at ``base_url``) or ``scripted`` (a loopback server
    replaying the problems' known solutions)."""
    model: str = ""
    """The model's name on the server (``scripted``: a label, default ``scripted-<script>``)."""
    base_url: str = ""
    """The server's API root, e.g. http://127.0.0.1:8000/v1 (``openai`` only)."""
    script: str = "fix"
    """``scripted`` only: ``fix`` (a broken kernel first, the known solution after feedback) or ``replay``."""
    problems: str = "bundled"
    """The problem set: ``bundled``, a directory (a KernelBench level), a .py file or a .jsonl/.parquet table."""
    levels: tuple[int, ...] = ()
    """Keep problems of these KernelBench levels (empty: all)."""
    ids: str = ""
    """Keep problems whose leading number is in this list, e.g. ``1-20,25`` (empty: all)."""
    samples: int = 1
    """Episodes per problem."""
    turns: int = 1
    iterations: int = 1
    history: str = "all"
    template: str = "kernelbench"
    feedback_template: str = "drkernel-feedback"
    extraction: str = "last"
    feedback_style: str = "text"
    feedback_chars: int = 2000
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 8192
    solutions: str = ""
    """``scripted`` only: a directory of ``<problem name>.py`` solutions replayed instead of the
    problems' known ones (``tritongym solutions inductor`` writes one); problems without a file there
    are left out of the run."""
    small: bool = False
    """Problems shrunk to their CPU sizes (``Problem.prepare``)."""
    sizes: dict[str, int] = field(default_factory=dict)
    """Size constants set on every problem after shrinking (``--size NAME=VALUE``)."""
    eval: EvalConfig = field(default_factory=EvalConfig)

    def settings(self) -> dict[str, Any]:
        return asdict(self)


def parse_ids(spec: str) -> set[int]:
    """``1-20,25`` -> {1, ..., 20, 25}."""
    ids: set[int] = set()
    for part in spec.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not match:
            raise ConfigError(f"--ids expects numbers and ranges such as 1-20,25; {part.strip()!r} is neither")
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        if high < low:
            raise ConfigError(f"--ids range {part.strip()!r} ends before it starts")
        ids.update(range(low, high + 1))
    return ids


def _number(name: str) -> int | None:
    match = re.match(r"(\d+)", name)
    return int(match.group(1)) if match else None


def pick_problems(source: str, levels: tuple[int, ...] = (), ids: str = "") -> list[Problem]:
    """The problems of a set (``bundled``, a directory, a file, a table) of these KernelBench levels
    and leading numbers (empty: all), as loaded."""
    problems = load_problems(source, TableColumns())
    if levels:
        problems = [p for p in problems if p.level in levels]
        if not problems:
            raise ConfigError(f"no problem of {source} is in level(s) {list(levels)}")
    if ids:
        wanted = parse_ids(ids)
        problems = [p for p in problems if _number(p.name) in wanted]
        if not problems:
            raise ConfigError(f"no problem of {source} has a leading number in --ids {ids}")
    return problems


def select_problems(config: BenchConfig) -> list[Problem]:
    """The run's problems: the set, filtered by level and id, then prepared (``Problem.prepare``:
    missing packages refused by name, shrunk if ``small``, ``sizes`` applied)."""
    problems = pick_problems(config.problems, config.levels, config.ids)
    if config.solutions:
        problems = with_solutions(problems, Path(config.solutions))
    return [p.prepare(small=config.small, sizes=config.sizes) for p in problems]


def with_solutions(problems: list[Problem], directory: Path) -> list[Problem]:
    """The problems that have a solution file ``<name>.py`` in ``directory``, each carrying it as its
    known solution (what the scripted policy replays); the others are left out, and logged."""
    if not directory.is_dir():
        raise ConfigError(f"--solutions {directory}: no such directory")
    kept = [replace(p, solution=(directory / f"{p.name}.py").read_text(encoding="utf-8")) for p in problems
            if (directory / f"{p.name}.py").is_file()]  # fmt: skip
    if not kept:
        raise ConfigError(f"--solutions {directory}: no <problem name>.py file for any of the {len(problems)} problems")
    if len(kept) < len(problems):
        missing = sorted({p.name for p in problems} - {p.name for p in kept})
        log.warning(
            "%d problems have no solution in %s and are left out: %s", len(missing), directory, ", ".join(missing)
        )
    return kept


def episode_config(config: BenchConfig) -> EpisodeConfig:
    return EpisodeConfig(
        turns=config.turns,
        iterations=config.iterations,
        history=config.history,
        extraction=config.extraction,
        prompts=Prompts(config.template, config.feedback_template),
        feedback=FeedbackConfig(style=config.feedback_style, max_chars=config.feedback_chars),
    )


def _jsonable(settings: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(settings))


def prepare_run_dir(out: Path, config: BenchConfig, problems: list[Problem]) -> tuple[dict[str, Any], list[TurnRecord]]:
    """Create the run directory, or check that it holds the same settings; returns run.json's content
    and the records kept from an earlier run (turns left unscored are dropped, to be tried again)."""
    writable_dir(out, "--out")
    settings = _jsonable(config.settings())
    run_file, trajectories = out / RUN_FILE, out / TRAJECTORIES
    if run_file.exists():
        run = json.loads(run_file.read_text(encoding="utf-8"))
        before = {k: run.get(k) for k in settings}
        changed = sorted(k for k in settings if before[k] != settings[k] and k not in NOT_COMPARED)
        if changed and not _has_records(trajectories):  # nothing recorded yet: nothing to keep, start anew
            log.info("%s recorded no turn yet: it starts anew with these settings", out)
            stamp = datetime.now(UTC)
            run = {"run_id": f"{out.name}-{stamp:%Y%m%dT%H%M%S}", "created": stamp.isoformat(timespec="seconds")}
        elif changed:
            detail = ", ".join(f"{k}: {before[k]!r} -> {settings[k]!r}" for k in changed)
            raise ConfigError(f"{out} holds a run with other settings ({detail}); choose another --out to start anew")
    else:
        stamp = datetime.now(UTC)
        run = {"run_id": f"{out.name}-{stamp:%Y%m%dT%H%M%S}", "created": stamp.isoformat(timespec="seconds")}
    run |= settings | {"problem_names": [p.name for p in problems], "tritongym_version": __version__}
    kept: list[TurnRecord] = []
    if trajectories.exists():
        kept = [r for r in read_records(trajectories) if r.verdict != INFRASTRUCTURE]
        temporary = trajectories.with_suffix(".jsonl.tmp")
        temporary.unlink(missing_ok=True)
        write_records(temporary, kept)  # also drops a line an interruption cut short
        temporary.replace(trajectories)
    else:
        trajectories.touch()
    run_file.write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")
    return run, kept


def check_settings(config: BenchConfig) -> None:
    """Refuse settings that cannot run, before any problem is loaded or anything is written to the run
    directory (a run started with a typo would otherwise hold the typo's settings)."""
    if config.policy not in POLICIES:
        raise ConfigError(f"--policy must be one of {', '.join(POLICIES)}, not {config.policy!r}")
    for name in ("samples", "turns", "iterations"):
        if getattr(config, name) < 1:
            raise ConfigError(f"--{name} must be at least 1, not {getattr(config, name)}")
    if config.policy == "scripted":
        from tritongym.policy.scripted import SCRIPTS

        if config.script not in SCRIPTS:
            raise ConfigError(f"--script must be one of {', '.join(SCRIPTS)}, not {config.script!r}")
    if config.solutions and config.policy != "scripted":
        raise ConfigError("--solutions is for --policy scripted (it replays the solutions of a directory)")
    if config.policy == "openai" and not config.model:
        raise ConfigError("--policy openai needs --model (the model's name on the server)")
    if config.policy == "openai" and not config.base_url:
        raise ConfigError("--policy openai needs --base-url (the server's API root, e.g. http://host:8000/v1)")
    if config.policy == "hf" and not config.model:
        raise ConfigError("--policy hf needs --model (a model directory or a hub name)")


def _has_records(trajectories: Path) -> bool:
    """Whether a run's trajectories hold a line (a started run that recorded nothing holds none)."""
    if not trajectories.exists():
        return False
    with trajectories.open("rb") as fh:
        return any(line.strip() for line in fh)


@contextmanager
def open_policy(config: BenchConfig, problems: list[Problem], concurrency: int, request_timeout_s: float) -> Iterator:
    """The policy of a run, checked to be reachable. ``scripted`` starts its loopback server and is
    then asked through the OpenAI client, over HTTP, exactly as a real server would be; ``hf`` loads
    a local transformers model (``config.model``: a directory or hub name) in this process."""
    if config.policy == "hf":
        yield _load_hf(config.model)
        return
    from tritongym.policy.openai import OpenAIConfig, OpenAIPolicy

    with ExitStack() as stack:
        if config.policy == "scripted":
            from tritongym.policy.scripted import ScriptedPolicy, ScriptServer, replay_script

            reasoning = Prompts(config.template, config.feedback_template).prefill.startswith("<think>")
            script = ScriptedPolicy(problems, replay_script(config.script, reasoning), name=config.model)
            try:
                import openai  # noqa: F401 - the loopback server is asked through it
            except ImportError:
                log.info("the openai client is not installed: the scripted policy answers in-process, not over HTTP")
                yield script
                return
            base_url = stack.enter_context(ScriptServer(script)).url
        else:  # openai (check_settings refused any other name)
            base_url = config.base_url
        settings = OpenAIConfig(
            model=config.model, base_url=base_url, max_concurrency=concurrency, timeout_s=request_timeout_s
        )
        policy = stack.enter_context(OpenAIPolicy(settings))
        policy.check()
        yield policy


def _load_hf(model: str) -> Policy:
    try:
        from tritongym.policy.hf import load_hf_policy
    except ImportError as exc:
        raise ConfigError(f"--policy hf needs transformers: pip install 'tritongym[train]' ({exc})") from None
    return load_hf_policy(model, what="--model")


@contextmanager
def open_service(url: str) -> Iterator[Env]:
    """The Env of a running ``tritongym serve`` (bearer token from $TRITONGYM_TOKEN), checked first."""
    try:
        import httpx

        from tritongym.env.client import HttpEnv
    except ImportError:
        raise ConfigError("--env-url needs the service client: pip install 'tritongym[serve]'") from None
    token = os.environ.get("TRITONGYM_TOKEN") or None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx.get(url.rstrip("/") + "/metrics", headers=headers, timeout=10.0)
    except httpx.HTTPError as exc:
        raise ConfigError(f"cannot reach the evaluation service at {url}: {exc}") from None
    if response.status_code in (401, 403):
        raise ConfigError(f"the evaluation service at {url} refused the token (set $TRITONGYM_TOKEN)")
    if response.status_code != 200:
        raise ConfigError(f"{url} does not answer as a tritongym service (/metrics: HTTP {response.status_code})")
    with HttpEnv(url, token) as env:
        yield env


@dataclass
class BenchOutcome:
    run_dir: Path
    records: list[TurnRecord]
    episodes: list[Episode]
    new_records: int
    report_written: bool

    @property
    def unscored(self) -> int:
        return sum(1 for r in self.records if r.verdict == INFRASTRUCTURE)


def write_report(run_dir: Path) -> bool:
    """Summary, report and plots through tritongym.bench.report, where that package is present."""
    try:
        from tritongym.bench.report import write_report as render
    except ImportError:
        log.warning("the report step is unavailable (tritongym.bench.report is missing); records are in %s", run_dir)
        return False
    try:
        render(run_dir)
    except Exception:  # the records are safe on disk; `tritongym report` can render them again
        log.exception("writing the report of %s failed", run_dir)
        return False
    return True


class LazyLocalEnv:
    """The local pool, started at the first submission: a resumed run with nothing left to evaluate
    starts no sandbox."""

    def __init__(self, config: PoolConfig):
        self.config = config
        self._env: LocalEnv | None = None

    def submit(self, problem, candidate, config=None, *, priority=0, timeout_s=None):
        if self._env is None:
            self._env = LocalEnv(self.config)
        return self._env.submit(problem, candidate, config, priority=priority, timeout_s=timeout_s)

    def evaluate_many(self, tasks, config=None):
        return stream_results(self, tasks, config)

    def close(self) -> None:
        if self._env is not None:
            self._env.close()

    def __enter__(self) -> LazyLocalEnv:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _save_usage(out: Path, run: dict[str, Any], usage: dict[str, Any], seconds: float) -> None:
    """Add this session's spending to run.json (kept across resumes, interrupted sessions included)."""
    previous = run.get("usage") or {}
    run["usage"] = {k: round(previous.get(k, 0) + v, 3) for k, v in usage.items()}
    run["seconds"] = round(run.get("seconds", 0.0) + seconds, 3)
    run["updated"] = datetime.now(UTC).isoformat(timespec="seconds")
    (out / RUN_FILE).write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")


def run_bench(
    config: BenchConfig,
    out: Path,
    *,
    jobs: int | None = None,
    concurrency: int = 32,
    request_timeout_s: float = 600.0,
    env: Env | None = None,
    progress: Callable[[TurnRecord], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
) -> BenchOutcome:
    """Run (or resume) a benchmark into ``out``, evaluating on ``env`` (default: the local pool on
    ``config.eval.device`` with ``jobs`` sandboxes, started when first needed). ``on_start(total_turns,
    done_turns)`` is called once the run is set up, ``progress`` with every new record."""
    check_settings(config)
    episodes_config = episode_config(config)
    problems = select_problems(config)
    if config.policy == "scripted" and (unsolved := [p.name for p in problems if not p.solution]):
        log.warning(
            "the scripted policy knows no solution for %d problem(s), so it answers none there (each turn "
            "fails); --solutions DIR replays a directory's: %s",
            len(unsolved),
            ", ".join(unsolved),
        )
    if notice := shrunk_notice(problems):
        log.warning("%s", notice)
    run, kept = prepare_run_dir(out, config, problems)
    cache = {record_key(r): r for r in kept}
    started = time.monotonic()
    new: list[TurnRecord] = []

    def on_record(record: TurnRecord) -> None:
        write_records(out / TRAJECTORIES, [record])
        new.append(record)
        if progress:
            progress(record)

    with ExitStack() as stack:
        policy = stack.enter_context(open_policy(config, problems, concurrency, request_timeout_s))
        usage = getattr(policy, "usage_dict", dict)  # a server's requests and tokens; a local model has none
        stack.callback(lambda: _save_usage(out, run, usage(), time.monotonic() - started))
        if env is None:
            env = stack.enter_context(LazyLocalEnv(PoolConfig(devices=config.eval.device, sandboxes_per_device=jobs)))
        if on_start:
            on_start(len(problems) * config.samples * episodes_config.total_turns, len(kept))
        sampling = SamplingConfig(temperature=config.temperature, top_p=config.top_p, max_tokens=config.max_tokens)
        runner = EpisodeRunner(
            policy,
            env,
            episodes_config,
            sampling=sampling,
            eval_config=config.eval,
            run_id=run["run_id"],
            on_record=on_record,
            cache=cache,
        )
        episodes = runner.run(problems, config.samples)
    records = [r for e in episodes for r in e.records]
    return BenchOutcome(out, records, episodes, len(new), write_report(out))
