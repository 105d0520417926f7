"""Durable task store (SQLite): a task is written before it is acknowledged, results stay queryable
and export to JSONL, and a content-addressed cache returns the stored result of an identical
(problem, candidate, config, device, versions) evaluation unless a fresh one is asked for, where
the candidate's text alone decided it (``TEXT_VERDICTS``: a run of its code is evaluated again)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.result import EvalResult, Verdict
from tritongym.problems import Problem

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done')),
    priority INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    cached INTEGER NOT NULL DEFAULT 0,
    payload TEXT NOT NULL,
    result TEXT,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_queue ON tasks (state, priority DESC, created);
CREATE INDEX IF NOT EXISTS tasks_key ON tasks (key, state);
"""


TEXT_VERDICTS = (Verdict.INVALID_SOURCE, Verdict.SYNTAX_ERROR, Verdict.HACK_FORBIDDEN_API)
"""Verdicts decided from the candidate's text before any of its code ran: the same text always gets
them, so they are the only results the cache serves again. A verdict reached by running the code is
one draw (the trials' secret inputs; on a GPU the scheduling and the timing too): serving it again
would give a kernel that is right on half of its runs (a race between blocks, a bug only some inputs
show) its first draw for ever, `ok` once lucky (red team 5 #5)."""


def content_key(problem: Problem, candidate: str, config: EvalConfig, fingerprint: dict) -> str:
    """Hash of everything that determines an evaluation (the secret seeds aside)."""
    material = {
        "problem": [problem.source, problem.entry_point],
        "candidate": candidate,
        "config": asdict(config),
        "environment": fingerprint,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class StoredTask:
    id: str
    state: str
    priority: int
    attempts: int
    cached: bool
    problem: Problem
    candidate: str
    config: EvalConfig
    result: EvalResult | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "state": self.state,
            "attempts": self.attempts,
            "cached": self.cached,
            "problem": self.problem.name,
            "result": self.result.to_dict() if self.result else None,
        }


def _payload(problem: Problem, candidate: str, config: EvalConfig) -> str:
    return json.dumps(
        {
            "problem": problem.to_dict(),
            "candidate": candidate,
            "config": asdict(config),
        }
    )


class TaskStore:
    """Thread-safe; one connection guarded by a lock (SQLite serialises writers anyway)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")  # acknowledged means on disk
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _row(self, row: tuple) -> StoredTask:
        id_, state, priority, attempts, cached, payload, result = row
        data = json.loads(payload)
        return StoredTask(
            id=id_,
            state=state,
            priority=priority,
            attempts=attempts,
            cached=bool(cached),
            problem=Problem(**data["problem"]),
            candidate=data["candidate"],
            config=EvalConfig(**data["config"]),
            result=EvalResult.from_dict(json.loads(result)) if result else None,
        )

    def add(self, tasks: list[tuple[Problem, str, EvalConfig, int, bool]], fingerprint: dict) -> list[str]:
        """Persist (problem, candidate, config, priority, fresh) tasks in one transaction; return ids.
        A task whose identical evaluation is stored with a verdict its text alone decided
        (``TEXT_VERDICTS``), and not ``fresh``, is born done, from cache."""
        now = time.time()
        ids = []
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for problem, candidate, config, priority, fresh in tasks:
                    key = content_key(problem, candidate, config, fingerprint)
                    hit = None
                    if not fresh:
                        marks = ", ".join("?" * len(TEXT_VERDICTS))
                        hit = self._db.execute(
                            "SELECT result FROM tasks WHERE key = ? AND state = 'done' AND cached = 0 "
                            f"AND json_extract(result, '$.verdict') IN ({marks}) LIMIT 1",
                            (key, *(v.value for v in TEXT_VERDICTS)),
                        ).fetchone()
                    task_id = uuid.uuid4().hex
                    self._db.execute(
                        "INSERT INTO tasks (id, key, state, priority, cached, payload, result, created, updated) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (task_id, key, "done" if hit else "queued", priority, int(bool(hit)),
                         _payload(problem, candidate, config), hit[0] if hit else None, now, now),
                    )  # fmt: skip
                    ids.append(task_id)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return ids

    def claim(self, limit: int) -> list[StoredTask]:
        """Mark up to ``limit`` queued tasks running (highest priority, oldest first) and return them."""
        if limit <= 0:
            return []
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            rows = self._db.execute(
                "SELECT id FROM tasks WHERE state = 'queued' ORDER BY priority DESC, created LIMIT ?", (limit,)
            ).fetchall()
            ids = [r[0] for r in rows]
            self._db.executemany(
                "UPDATE tasks SET state = 'running', attempts = attempts + 1, updated = ? WHERE id = ?",
                [(time.time(), i) for i in ids],
            )
            self._db.execute("COMMIT")
        return self.get(ids)

    def complete(self, task_id: str, result: EvalResult) -> None:
        with self._lock:
            self._db.execute(
                "UPDATE tasks SET state = 'done', result = ?, updated = ? WHERE id = ? AND state != 'done'",
                (result.to_json(), time.time(), task_id),
            )

    def requeue_interrupted(self) -> int:
        """After a restart: tasks that were running when the service stopped go back to the queue."""
        with self._lock:
            return self._db.execute(
                "UPDATE tasks SET state = 'queued', updated = ? WHERE state = 'running'", (time.time(),)
            ).rowcount

    def get(self, ids: list[str]) -> list[StoredTask]:
        if not ids:
            return []
        with self._lock:
            marks = ",".join("?" * len(ids))
            rows = self._db.execute(
                f"SELECT id, state, priority, attempts, cached, payload, result FROM tasks WHERE id IN ({marks})",
                ids,
            ).fetchall()
        by_id = {r[0]: self._row(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def counts(self) -> dict[str, int]:
        with self._lock:
            rows = self._db.execute("SELECT state, count(*) FROM tasks GROUP BY state").fetchall()
        return {"queued": 0, "running": 0, "done": 0} | dict(rows)

    def export(self) -> Iterator[str]:
        """Every finished task as one JSON line (id, problem, cached, result)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, json_extract(payload, '$.problem.name'), cached, result FROM tasks "
                "WHERE state = 'done' ORDER BY updated"
            ).fetchall()
        for task_id, problem, cached, result in rows:
            yield (
                json.dumps({"id": task_id, "problem": problem, "cached": bool(cached), "result": json.loads(result)})
                + "\n"
            )
