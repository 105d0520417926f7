"""The honest corpus (tests/candidates/honest/) through one pool, as RL uses it: each candidate's verdict
and findings against what its header expects, one JSON line each as it completes, and a summary.

pytest's ``tests/test_honest_candidates.py`` on a GPU runs a judge per xdist worker with the default
timing budget: on an H200 (session 12, ``-n 8``) 38 of the 88 candidates took 470 s. One pool of a few
sandboxes and a short timing budget judges the whole corpus in one device call (session 9: 44 cases in
192 s with 4 sandboxes and a 3 s budget).

    PYTHONPATH=$PWD python3 benchmarks/honest_corpus.py --device cuda --first storage_alias_check \\
        --out $OUT/honest.jsonl --deadline 480

A case is as expected where it is ``ok`` with its header's findings, or not ``ok`` where its header
says ``# open`` (or ``# open on gpu`` on a GPU); cases needing a newer torch or Triton are skipped,
as the test skips them. Candidates not judged by ``--deadline`` are listed as such."""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import FIRST_COMPLETED, wait
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import torch  # noqa: E402
import triton  # noqa: E402
from test_honest_candidates import HONEST, _header, _problem, _release  # noqa: E402

from tritongym.env import LocalEnv, PoolConfig  # noqa: E402
from tritongym.evaluate import EvalConfig, Verdict  # noqa: E402


def expectation(source: str, device: str) -> tuple[bool | None, list[str]]:
    """(whether the case should be ``ok``, None where it is skipped here; the findings expected)."""
    for package, version in (("triton", triton.__version__), ("torch", torch.__version__)):
        needs = _header(source, package)
        if needs and _release(version) < _release(needs):
            return None, []
    if device == "cpu" and _header(source, "device") == "gpu":
        return None, []
    is_open = bool(_header(source, "open")) or (device == "cuda" and bool(_header(source, "open on gpu")))
    findings = _header(source, "findings")
    return not is_open, sorted(findings.split(", ")) if findings else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--sandboxes", type=int, default=4, help="sandboxes of the one pool")
    parser.add_argument("--budget", type=float, default=3.0, help="timing budget per candidate (s)")
    parser.add_argument("--deadline", type=float, default=480.0, help="seconds after which nothing more is judged")
    parser.add_argument("--first", nargs="*", default=[], help="names judged first")
    parser.add_argument("--out", default="honest_corpus.jsonl")
    args = parser.parse_args()
    began = time.time()
    names = sorted(p.stem for p in HONEST.glob("*.py"))
    names = [n for n in args.first if n in names] + [n for n in names if n not in args.first]
    counts = {"as expected": 0, "NOT as expected": 0, "skipped": 0, "not judged": 0}
    with (
        open(args.out, "a") as out,
        LocalEnv(PoolConfig(devices=args.device, sandboxes_per_device=args.sandboxes)) as env,
    ):
        print(f"pool ready in {time.time() - began:.1f} s", flush=True)
        pending = {}
        for name in names:
            source = (HONEST / f"{name}.py").read_text()
            wanted, findings = expectation(source, args.device)
            if wanted is None:
                counts["skipped"] += 1
                continue
            config = EvalConfig(device=args.device, timing_budget_s=args.budget)
            pending[env.submit(_problem(_header(source, "problem")), source, config)] = (name, wanted, findings)
        while pending:
            done, _ = wait(
                pending, timeout=max(0.0, args.deadline - (time.time() - began)), return_when=FIRST_COMPLETED
            )
            if not done:
                break
            for future in done:
                name, wanted, findings = pending.pop(future)
                result = future.result()
                got = sorted(f.check for f in result.findings)
                fine = (
                    (result.verdict is Verdict.OK and got == findings) if wanted else result.verdict is not Verdict.OK
                )
                counts["as expected" if fine else "NOT as expected"] += 1
                row = {"name": name, "verdict": result.verdict.value, "findings": got, "expected_ok": wanted,
                       "expected_findings": findings, "as_expected": fine, "feedback": result.feedback[:1500],
                       "detail": (result.detail or "")[-2000:], "t": round(time.time() - began, 1)}  # fmt: skip
                out.write(json.dumps(row) + "\n")
                out.flush()
                print(f"{'ok ' if fine else 'BAD'} {name}: {row['verdict']} {got} t={row['t']}", flush=True)
        for future, (name, _, _) in pending.items():
            future.cancel()
            counts["not judged"] += 1
            print(f"NOT JUDGED {name}", flush=True)
    print(json.dumps(counts), f"in {time.time() - began:.0f} s", flush=True)


if __name__ == "__main__":
    main()
