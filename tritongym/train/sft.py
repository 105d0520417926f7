"""Supervised fine-tuning on (prompt, completion) pairs, the loss on completion tokens only, and the
export of SFT datasets from trajectory records.

A pair is a chat context (``messages``, possibly ending with an assistant prefill, exactly as the
policy saw it) and the completion that followed. Its prompt tokens are the chat template's, as the
``hf`` policy renders them; its completion tokens are the completion's followed by end-of-turn.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from torch import Tensor

from tritongym.agent.episodes import UNEVALUATED
from tritongym.agent.prompts import Prompts
from tritongym.agent.records import NO_CODE, read_records
from tritongym.errors import ConfigError, ProblemError
from tritongym.evaluate.result import Verdict
from tritongym.policy.base import Message
from tritongym.policy.hf import chat_prompt_ids
from tritongym.problems import load_table
from tritongym.rewards.outcome import lazy, trusted_speedup
from tritongym.train.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from tritongym.train.config import SFTConfig
from tritongym.train.interrupt import StopAfterStep, TrainingInterrupted
from tritongym.train.metrics import MetricsWriter, plot_metrics, truncate_metrics
from tritongym.train.model import build_optimizer, load_model

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SFTPair:
    messages: list[Message]
    """The context (the last message may be an assistant prefill the completion continues)."""
    completion: str


# -- datasets -------------------------------------------------------------------------------------


def export_sft(
    trajectories: str | Path,
    out: str | Path,
    *,
    verdicts: tuple[str, ...] = ("ok",),
    min_speedup: float | None = None,
    min_coverage: float | None = None,
) -> dict[str, int]:
    """Write the turns of trajectory JSONL files that pass the filters as SFT pairs (one JSON line
    each: ``messages``, ``completion``, and ``problem``/``verdict``/``speedup``/``coverage`` for
    reference). A turn without a measured speedup (coverage) fails a ``min_speedup``
    (``min_coverage``) filter, and so does a speedup no reward trusts (``outcome.trusted_speedup``: one
    flagged beyond the roofline). A lazy turn (``outcome.lazy``: PyTorch or the host did part of
    forward's work) is never written: it is no demonstration of a kernel, and fine-tuning on it taught
    the hack every reward pays as lazy (red team 23 #7). Identical pairs are written once. Returns
    counts (``lazy``: the turns left out as lazy)."""
    known = [v.value for v in Verdict] + [NO_CODE, UNEVALUATED]
    if unknown := [v for v in verdicts if v not in known]:
        raise ConfigError(f"unknown verdict(s) {', '.join(unknown)}; a turn's verdict is one of: {', '.join(known)}")
    paths = [Path(p) for p in ([trajectories] if isinstance(trajectories, str | Path) else trajectories)]
    seen, counts = set(), {"read": 0, "written": 0, "duplicates": 0, "lazy": 0}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for path in paths:
            if not path.is_file():
                raise ConfigError(f"{path}: no such trajectory file")
            for record in read_records(path):
                counts["read"] += 1
                result = record.result or {}
                speedup, coverage = result.get("speedup"), result.get("coverage")
                if record.verdict not in verdicts:
                    continue
                if lazy(result):
                    counts["lazy"] += 1
                    continue
                trusted = trusted_speedup(result)
                if min_speedup is not None and (trusted is None or trusted < min_speedup):
                    continue
                if min_coverage is not None and (coverage is None or coverage < min_coverage):
                    continue
                key = json.dumps([record.messages, record.completion])
                if key in seen:
                    counts["duplicates"] += 1
                    continue
                seen.add(key)
                row = {
                    "messages": record.messages,
                    "completion": record.completion,
                    "problem": record.problem,
                    "verdict": record.verdict,
                    "speedup": speedup,
                    "coverage": coverage,
                }
                fh.write(json.dumps(row) + "\n")
                counts["written"] += 1
    return counts


def load_pairs(path: str | Path, template: str = "kernelbench") -> list[SFTPair]:
    """Pairs from an export-sft JSONL (rows with ``messages`` and ``completion``), or from a KernelBook
    table (rows with ``python_code`` and ``triton_code``: the prompt is ``template``'s first turn for
    the reference, the completion the Triton code as one python block)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such SFT dataset")
    if path.suffix == ".jsonl":
        rows = _json_rows(path)
        first = next((row for _, row in rows), None)
        if first is None:
            raise ConfigError(f"{path}: the dataset is empty")
        if "messages" in first:
            pairs = []
            for number, row in rows:
                if not isinstance(row.get("messages"), list) or not isinstance(row.get("completion"), str):
                    raise ConfigError(f"{path}:{number}: an SFT row needs 'messages' (a list) and 'completion'")
                pairs.append(SFTPair(row["messages"], row["completion"]))
            return pairs
    prompts = Prompts(template)
    pairs = []
    try:
        problems = load_table(path)
    except ProblemError as exc:  # its fix names eval's --source-column; an SFT table has fixed columns
        raise ConfigError(
            f"{str(exc).split('; choose the column')[0]}; an SFT dataset is an export-sft JSONL (rows with "
            "'messages' and 'completion') or a KernelBook table (columns python_code and triton_code)"
        ) from None
    for problem in problems:
        if not problem.solution:
            continue
        messages = prompts.initial(problem)
        if prompts.prefill:
            messages.append({"role": "assistant", "content": prompts.prefill})
        pairs.append(SFTPair(messages, f"```python\n{problem.solution.strip()}\n```"))
    if not pairs:
        raise ConfigError(f"{path}: no row has a Triton solution (column triton_code)")
    return pairs


def _json_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a JSONL file; a line that is no JSON object is a
    ConfigError naming it."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{number}: not a JSON line ({exc.msg})") from None
        if not isinstance(row, dict):
            raise ConfigError(f"{path}:{number}: a row must be a JSON object, not {type(row).__name__}")
        rows.append((number, row))
    return rows


# -- tensors --------------------------------------------------------------------------------------


@dataclass
class SFTBatch:
    input_ids: Tensor
    """long [B, L], right-padded."""
    attention_mask: Tensor
    loss_mask: Tensor
    """bool [B, L-1]: the target ``input_ids[:, 1:]`` is a completion token."""


def tokenize_pairs(pairs: list[SFTPair], tokenizer: Any, max_tokens: int) -> tuple[list[tuple[list[int], int]], int]:
    """(token ids, prompt length) per pair, and how many pairs were skipped for being too long."""
    out, skipped = [], 0
    for pair in pairs:
        prompt = chat_prompt_ids(tokenizer, pair.messages)
        completion = [*tokenizer(pair.completion, add_special_tokens=False).input_ids, tokenizer.eos_token_id]
        if len(prompt) + len(completion) > max_tokens:
            skipped += 1
            continue
        out.append((prompt + completion, len(prompt)))
    return out, skipped


def collate(items: list[tuple[list[int], int]], pad_id: int) -> SFTBatch:
    width = max(len(ids) for ids, _ in items)
    ids = torch.full((len(items), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(items), width), dtype=torch.long)
    mask = torch.zeros((len(items), width - 1), dtype=torch.bool)
    for i, (tokens, prompt_len) in enumerate(items):
        ids[i, : len(tokens)] = torch.tensor(tokens)
        attention[i, : len(tokens)] = 1
        mask[i, prompt_len - 1 : len(tokens) - 1] = True
    return SFTBatch(ids, attention, mask)


def completion_loss(model: Any, batch: SFTBatch) -> tuple[Tensor, int]:
    """Summed negative log-likelihood of the completion tokens, and their count."""
    device = next(model.parameters()).device
    logits = model(input_ids=batch.input_ids.to(device), attention_mask=batch.attention_mask.to(device)).logits
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    nll = -logp.gather(-1, batch.input_ids[:, 1:, None].to(device))[..., 0]
    mask = batch.loss_mask.to(device)
    return (nll * mask).sum(), int(mask.sum())


@torch.no_grad()
def mean_completion_loss(model: Any, items: list[tuple[list[int], int]], pad_id: int, micro_batch_size: int) -> float:
    """Mean per-token completion NLL over ``items``."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for start in range(0, len(items), micro_batch_size):
        loss, n = completion_loss(model, collate(items[start : start + micro_batch_size], pad_id))
        total, count = total + float(loss), count + n
    model.train(was_training)
    return total / max(count, 1)


# -- the loop -------------------------------------------------------------------------------------


def run_sft(
    config: SFTConfig, *, model: Any = None, tokenizer: Any = None, resume: bool = False, progress: bool = True
) -> list[dict[str, float]]:
    """Train on the dataset of ``config.data.path``; metrics per optimizer step (``sft/loss`` is the
    mean per-token completion NLL of the step's pairs)."""
    run, optim = config.run, config.optim
    torch.manual_seed(run.seed)
    if model is None:
        model, tokenizer = load_model(config.model, run.seed)
    items, skipped = tokenize_pairs(
        load_pairs(config.data.path, config.data.template), tokenizer, config.data.max_tokens
    )
    if not items:
        raise ConfigError(f"{config.data.path}: no pair fits in data.max_tokens={config.data.max_tokens}")
    order = torch.randperm(len(items), generator=torch.Generator().manual_seed(run.seed)).tolist()
    n_eval = int(len(items) * config.data.eval_fraction)
    held_out = [items[i] for i in order[:n_eval]]
    train = [items[i] for i in order[n_eval:]]
    per_step = optim.micro_batch_size * max(optim.grad_accumulation, 1)
    steps_per_epoch = -(-len(train) // per_step)
    total = steps_per_epoch * run.epochs
    if run.max_steps:
        total = min(total, run.max_steps)
    optimizer, scheduler = build_optimizer(model, optim, total)
    out = Path(run.out)
    out.mkdir(parents=True, exist_ok=True)
    step = 0
    if resume:
        path = latest_checkpoint(out)
        if path is None:
            raise ConfigError(f"--resume: {out} has no checkpoint")
        step = int(load_checkpoint(path, model, optimizer, scheduler)["step"])
        truncate_metrics(out / "metrics.jsonl", step)
    (out / "config.json").write_text(json.dumps(config.to_dict(), indent=1), encoding="utf-8")
    writer = MetricsWriter(out, tensorboard=run.tensorboard)
    pad = tokenizer.pad_token_id
    history = []
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()]
    with StopAfterStep() as stop, Progress(*columns, console=Console(stderr=True), disable=not progress) as bar:
        task = bar.add_task("sft", total=total, completed=step)
        try:
            while step < total and not stop.requested:
                step += 1
                epoch, index = divmod(step - 1, steps_per_epoch)
                epoch_order = torch.randperm(len(train), generator=torch.Generator().manual_seed(run.seed + 1 + epoch))
                chosen = [train[i] for i in epoch_order[index * per_step : (index + 1) * per_step].tolist()]
                tokens = sum(len(ids) - p for ids, p in chosen)
                optimizer.zero_grad(set_to_none=True)
                total_loss = 0.0
                for start in range(0, len(chosen), optim.micro_batch_size):
                    loss, _ = completion_loss(model, collate(chosen[start : start + optim.micro_batch_size], pad))
                    (loss / tokens).backward()
                    total_loss += float(loss.detach())
                params = [p for p in model.parameters() if p.requires_grad]
                norm = torch.nn.utils.clip_grad_norm_(params, optim.grad_clip if optim.grad_clip > 0 else float("inf"))
                optimizer.step()
                scheduler.step()
                metrics = {
                    "sft/loss": total_loss / tokens,
                    "sft/tokens": float(tokens),
                    "sft/grad_norm": float(norm),
                    "sft/lr": optimizer.param_groups[0]["lr"],
                    "sft/epoch": float(epoch),
                    "sft/skipped_too_long": float(skipped),
                }
                if held_out and ((run.eval_every and step % run.eval_every == 0) or step == total):
                    metrics["sft/eval_loss"] = mean_completion_loss(model, held_out, pad, optim.micro_batch_size)
                writer.write(step, metrics)
                history.append(metrics)
                if (run.checkpoint_every and step % run.checkpoint_every == 0) or step == total or stop.requested:
                    state = {"data_position": step * per_step, "epoch": epoch, "config": config.to_dict()}
                    save_checkpoint(out, step, model, tokenizer, optimizer, scheduler, state, run.keep_checkpoints)
                line = f"sft step {step} of {total} loss {metrics['sft/loss']:.3f}"
                bar.update(task, completed=step, description=line)
                log.info(line)  # without a terminal (--no-progress, a log file) the steps show there, as train's
        finally:
            writer.close()
    if history:
        plot_metrics(out)
    if step < total:  # Ctrl-C: the last step finished and its checkpoint is saved
        raise TrainingInterrupted(step, out)
    return history
