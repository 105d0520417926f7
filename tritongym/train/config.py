"""Training configs: dataclasses in sections, every field documented, loadable from TOML with
``--set section.field=value`` overrides, and the two recipe presets (``drkernel``, ``kernel-coder``).

docs/training.md lists every field; keep the two in step.
"""

from __future__ import annotations

import ast
import difflib
import tomllib
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from types import UnionType
from typing import Any, get_args, get_type_hints

from tritongym.errors import ConfigError


@dataclass
class ModelSection:
    """The model that is trained and samples the rollouts."""

    name: str = "tiny"
    """A Hugging Face model path or hub name, or ``tiny`` (a 2-layer random Llama and a BPE tokenizer
    trained on the bundled problems: for tests and CPU demos)."""
    random_init: bool = False
    """Build the model from ``name``'s config with random weights instead of loading its weights."""
    config_overrides: dict[str, Any] = field(default_factory=dict)
    """Keys set on the model config before building it (e.g. ``num_hidden_layers = 2`` for a small
    model from a real architecture); with ``tiny``: ``hidden_size``, ``layers``, ``heads``."""
    tokenizer: str = ""
    """Tokenizer path or hub name; empty: the model's (or the tiny tokenizer for ``tiny``)."""
    dtype: str = "float32"
    """Parameter dtype: float32, bfloat16 or float16."""
    device: str = "auto"
    """Where the model lives: auto (cuda if available), cpu, cuda, cuda:N."""
    lora_rank: int = 0
    """LoRA rank (peft); 0 trains every parameter (full fine-tuning)."""
    lora_alpha: float = 32.0
    """LoRA scaling numerator (the update is scaled by alpha / rank)."""
    lora_dropout: float = 0.0
    """Dropout on the LoRA branch."""
    lora_targets: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    """Module names that get LoRA adapters."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass (saves memory, costs time)."""


@dataclass
class DataSection:
    """Which problems are trained on and evaluated on."""

    problems: str = "bundled"
    """Training problems: ``bundled``, a directory, a .py file, or a KernelBook .jsonl/.parquet table."""
    names: list[str] = field(default_factory=list)
    """Keep only these problem names (empty: all)."""
    eval_problems: str = ""
    """Held-out problems for periodic evaluation, same forms as ``problems`` (empty: none)."""
    eval_names: list[str] = field(default_factory=list)
    """Keep only these held-out problem names (empty: all); names also in the training set are removed
    from it, so a bundled set can be split by name."""
    small: bool | None = None
    """Shrink problems to their CPU sizes (true) or keep their real sizes (false); unset: shrink when
    the evaluation runs on the CPU (Triton's interpreter)."""
    shuffle: bool = True
    """Visit the training problems in a seeded random order, reshuffled every pass."""


@dataclass
class RolloutSection:
    """How episodes are generated."""

    engine: str = "hf"
    """Rollout engine: ``hf`` (the trained model itself, transformers generate)."""
    template: str = "kernelbench"
    """First-turn prompt template (tritongym.agent.prompts): ``kernelbench`` (task, one-shot example,
    architecture, return ModelNew in a python block), ``kernel-coder`` (reasoning in <think>, code in
    <answer>, the assistant turn prefilled with <think>), or a template file."""
    feedback_template: str = "drkernel-feedback"
    """Template of the user message of later turns (the rendered evaluation, then "improve it")."""
    extraction: str = "last"
    """How the program is taken from an answer: ``first``, ``last`` code block, or ``answer`` tags."""
    prompts_per_step: int = 4
    """Problems per step."""
    samples_per_prompt: int = 4
    """Episodes per problem (the group of the advantage baselines)."""
    turns: int = 1
    """Turns per episode: after each answer the evaluation's feedback is the next user message."""
    history: str = "all"
    """What each turn sees: ``all``, ``last:K`` (first prompt + last K exchanges) or ``best:K`` (first
    prompt + the K consecutive exchanges of highest summed reward)."""
    max_prompt_tokens: int = 2048
    """A context longer than this is not generated from: the turn gets an empty answer (finish reason
    ``length``, verdict ``no_code``) and no loss."""
    max_completion_tokens: int = 1024
    """Most tokens per answer."""
    temperature: float = 1.0
    """Sampling temperature (the trainer's log-probs use the same)."""
    top_p: float = 1.0
    """Nucleus sampling; below 1 the behaviour log-probs are of the truncated distribution."""
    overlap: bool = False
    """Collect the next step's rollouts while this step trains: their first turns are sampled before
    this step's update (one step of staleness, which the PPO ratio and MRS/TIS account for), and their
    evaluation overlaps the update. Sampling is then not reproducible across runs."""
    eval_samples: int = 1
    """Episodes per held-out problem at evaluation."""
    eval_temperature: float = 0.0
    """Sampling temperature at evaluation (0: greedy)."""


@dataclass
class RewardSection:
    """How a turn is scored."""

    name: str = "verifiable"
    """``verifiable`` (correctness + speedup + coverage, PR), ``tiered``, ``kernel-coder`` (format +
    first-block similarity, no evaluation), or an importable ``module:attr`` callable
    ``f(problem, text, result) -> float | None`` (attribute ``needs_env = False`` to skip evaluation)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of the reward class (e.g. ``w_coverage``, ``hack_penalty``)."""
    no_code: float | None = None
    """Reward of an answer with no extractable solution (nothing is evaluated); None: what the reward pays
    it (a ``failed`` outcome: ``verifiable`` its ``failure``, ``tiered`` its ``not_correct``)."""


@dataclass
class AdvantageSection:
    """Advantage estimation (tritongym.rl.advantages)."""

    estimator: str = "grpo"
    """Registry name: grpo, rloo, trloo, discounted, reinforce."""
    options: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of the estimator (``gamma``, ``meaningful_turns``, ``normalize_std`` ...)."""
    rejected_in_baseline: bool = True
    """Samples rejected by MRS/PRS still count as peers in their group's baseline."""


@dataclass
class FilterSection:
    """Which samples and tokens train (tritongym.rl.filters)."""

    mrs: str = "off"
    """Mismatch rejection between behaviour and trainer log-probs: off, token, sequence, geometric."""
    mrs_lower: float = 0.999
    """Lowest accepted ratio statistic."""
    mrs_upper: float = 1.001
    """Highest accepted ratio statistic."""
    mrs_veto: float | None = 1e-4
    """Reject a sample with any token ratio below this (None: no veto)."""
    tis: str = "off"
    """Truncated importance sampling weights: off, token, sequence."""
    tis_cap: float = 2.0
    """Upper bound of the TIS weight."""
    prs: bool = False
    """Profiling-based rejection: keep a correct sample with probability clip((coverage - threshold) / band)."""
    prs_threshold: float = 0.3
    """Coverage at or below which a correct sample is never kept (and counts as lazy)."""
    prs_band: float = 0.1
    """Coverage band over which the keep probability rises from 0 to 1."""
    prs_keep_if_speedup: float | None = None
    """Keep a correct sample at least this fast whatever its coverage (None: off)."""
    dynamic_sampling: bool = False
    """Drop groups whose episodes all have the same return (no learning signal)."""


@dataclass
class LossSection:
    """The PPO surrogate (tritongym.rl.losses.PolicyLossConfig)."""

    clip_low: float = 0.2
    """Ratio lower clip 1 - clip_low."""
    clip_high: float = 0.28
    """Ratio upper clip 1 + clip_high (clip-higher)."""
    dual_clip: float | None = 3.0
    """Cap of the loss of negative advantages at dual_clip * |A| (None: off)."""
    aggregation: str = "token-mean"
    """token-mean, seq-mean-token-sum, seq-mean-token-mean, constant-normalizer."""
    normalizer: float | None = None
    """Constant of the constant-normalizer aggregation."""
    kl_coef: float = 0.0
    """Weight of the KL penalty to the initial model (the adapter switched off, or a frozen copy)."""
    kl_estimator: str = "k3"
    """k1 or k3."""
    entropy_coef: float = 0.0
    """Weight of the entropy bonus."""


@dataclass
class OptimSection:
    """Optimizer, schedule and the shape of the update."""

    lr: float = 1e-6
    """Peak learning rate (AdamW)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])
    """AdamW betas."""
    eps: float = 1e-8
    """AdamW epsilon."""
    schedule: str = "constant"
    """Learning-rate schedule after warmup: constant, linear (to 0 at the last step) or cosine."""
    warmup_steps: int = 0
    """Optimizer steps of linear warmup from 0."""
    ppo_epochs: int = 1
    """Passes over each step's rows."""
    micro_batch_size: int = 4
    """Rows per forward/backward."""
    grad_accumulation: int = 0
    """Micro-batches per optimizer step; 0: every micro-batch of an epoch (one optimizer step per epoch)."""
    grad_clip: float = 1.0
    """Maximum global gradient norm (0: no clipping)."""


@dataclass
class RunSection:
    """Length, outputs and bookkeeping of a run."""

    steps: int = 100
    """Training steps."""
    seed: int = 0
    """Seed of the data order, sampling, PRS draws and model initialisation."""
    out: str = "runs/train"
    """Run directory: metrics.jsonl, trajectories.jsonl, checkpoints/, plots."""
    eval_every: int = 0
    """Evaluate on the held-out problems every this many steps (0: never)."""
    checkpoint_every: int = 0
    """Save a checkpoint every this many steps (0: only at the end)."""
    keep_checkpoints: int = 2
    """Most recent checkpoints kept on disk."""
    save_trajectories: bool = True
    """Append every turn's record to trajectories.jsonl."""
    env_devices: str = "auto"
    """Devices of the evaluation pool (PoolConfig.devices)."""
    env_workers: int | None = None
    """Sandboxes of the evaluation pool (PoolConfig.sandboxes_per_device)."""
    eval_trials: int = 2
    """Correctness trials per evaluation."""
    eval_timing: bool = False
    """Time candidates (GPU only): needed for speedup rewards and fast@p."""
    eval_profile: bool = False
    """Profile candidates (GPU only): the measured coverage PR and PRS use (unprofiled, they take a correct
    result's coverage from its findings: 0 with ``torch_compute``/``host_read``, 1 without)."""
    tensorboard: bool = True
    """Also write TensorBoard scalars when tensorboard is installed."""
    plot: bool = True
    """Draw training_curves.png from metrics.jsonl at the end of the run."""


@dataclass
class TaskSection:
    """A task plug-in: builds the parts of a run that the other sections cannot name."""

    name: str = ""
    """Empty: the default task (problems from ``data``, the model from ``model``, chat prompts, the
    ``hf`` rollout engine, a local environment). Else an importable ``module:attr`` callable
    ``f(config, **options) -> tritongym.train.task.TaskParts``; every part it returns replaces the
    default one (e.g. ``tritongym.design.task:build``, the design-language policy of docs/learning.md)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of the task callable."""


@dataclass
class TrainConfig:
    """Everything `tritongym train` needs (sections mirror the TOML tables)."""

    task: TaskSection = field(default_factory=TaskSection)
    model: ModelSection = field(default_factory=ModelSection)
    data: DataSection = field(default_factory=DataSection)
    rollout: RolloutSection = field(default_factory=RolloutSection)
    reward: RewardSection = field(default_factory=RewardSection)
    advantage: AdvantageSection = field(default_factory=AdvantageSection)
    filters: FilterSection = field(default_factory=FilterSection)
    loss: LossSection = field(default_factory=LossSection)
    optim: OptimSection = field(default_factory=OptimSection)
    run: RunSection = field(default_factory=RunSection)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SFTDataSection:
    """Where supervised pairs come from."""

    path: str = ""
    """A dataset written by `tritongym export-sft` (.jsonl of {"messages", "completion"}), or a
    KernelBook .jsonl/.parquet table (reference PyTorch -> Triton code in its ``triton_code`` column)."""
    template: str = "kernelbench"
    """Prompt template for KernelBook rows (see RolloutSection.template)."""
    max_tokens: int = 4096
    """Pairs longer than this (prompt + completion tokens) are skipped and counted."""
    eval_fraction: float = 0.0
    """Share of the pairs held out to measure the completion loss."""


@dataclass
class SFTRunSection:
    """Length and outputs of an SFT run."""

    epochs: int = 1
    """Passes over the data."""
    max_steps: int = 0
    """Stop after this many optimizer steps (0: run all epochs)."""
    seed: int = 0
    """Seed of the data order and initialisation."""
    out: str = "runs/sft"
    """Run directory: config.json, metrics.jsonl, checkpoints/, training_curves.png."""
    eval_every: int = 0
    """Measure the held-out completion loss every this many steps (0: at the end only)."""
    checkpoint_every: int = 0
    """Save a checkpoint every this many steps (0: only at the end)."""
    keep_checkpoints: int = 2
    """Most recent checkpoints kept on disk."""
    tensorboard: bool = True
    """Also write TensorBoard scalars when tensorboard is installed."""


@dataclass
class SFTConfig:
    """Everything `tritongym sft` needs (same model and optimizer sections as TrainConfig)."""

    model: ModelSection = field(default_factory=ModelSection)
    data: SFTDataSection = field(default_factory=SFTDataSection)
    optim: OptimSection = field(default_factory=lambda: OptimSection(lr=1e-5, micro_batch_size=4, grad_accumulation=1))
    run: SFTRunSection = field(default_factory=SFTRunSection)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


PRESETS: dict[str, dict[str, Any]] = {
    "drkernel": {
        "rollout": {"template": "kernelbench", "turns": 3, "history": "all", "samples_per_prompt": 4},
        "reward": {"name": "verifiable"},
        "advantage": {"estimator": "trloo", "options": {"gamma": 1.0, "meaningful_turns": True}},
        "filters": {"mrs": "geometric", "mrs_lower": 0.999, "mrs_upper": 1.001, "prs": True},
        "loss": {"clip_low": 0.2, "clip_high": 0.28, "dual_clip": 3.0, "aggregation": "token-mean"},
        "run": {"eval_timing": True, "eval_profile": True},
    },
    "kernel-coder": {
        "rollout": {"template": "kernel-coder", "extraction": "answer", "turns": 1, "samples_per_prompt": 8},
        "reward": {"name": "kernel-coder"},
        "advantage": {"estimator": "grpo"},
        "filters": {"mrs": "off", "prs": False},
        "loss": {"clip_low": 0.2, "clip_high": 0.2, "dual_clip": None, "aggregation": "token-mean"},
    },
}
"""The two recipes as overrides of the defaults; docs/training.md explains each choice."""


def _check_keys(cls: type, data: dict[str, Any], where: str) -> None:
    """Refuse keys the config does not have, each with the nearest known name (``run.stpes``: did you
    mean run.steps?), then every known one: a typo never passes silently as a setting with no effect."""
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        what = f"field(s) of [{where.rstrip('.')}]" if where else "section(s)"
        guesses = []
        for key in unknown:
            near = difflib.get_close_matches(key, names, n=1)
            guesses.append(f"{where}{key}" + (f" (did you mean {where}{near[0]}?)" if near else ""))
        raise ConfigError(f"unknown {what}: {', '.join(guesses)}; known: {', '.join(sorted(names))}")


_SCALARS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def _check_scalar(value: Any, kind: Any, name: str) -> Any:
    """``value`` for a field typed as a scalar (``int``, ``float | None``...), else ConfigError naming
    the field; an integer is a float, a bool is not an integer. Other types are not checked here."""
    allowed = set(get_args(kind)) if isinstance(kind, UnionType) else {kind}
    scalars = allowed - {type(None)}
    if not scalars or not scalars <= set(_SCALARS):
        return value
    if value is None and type(None) in allowed:
        return value
    if type(value) in scalars or (float in scalars and type(value) is int):
        return value
    wanted = " or ".join(_SCALARS[k] for k in _SCALARS if k in scalars) + (" or none" if type(None) in allowed else "")
    raise ConfigError(f"{name} must be {wanted}, not {value!r}")


def _build(cls: type, data: dict[str, Any], where: str):
    _check_keys(cls, data, where)
    hints = get_type_hints(cls)
    values = {}
    for f in fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        kind = hints[f.name]
        if is_dataclass(kind):
            if not isinstance(value, dict):
                raise ConfigError(f"{where}{f.name} must be a table")
            value = _build(kind, value, f"{where}{f.name}.")
        else:
            value = _check_scalar(value, kind, f"{where}{f.name}")
        values[f.name] = value
    return cls(**values)


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key not in ("options", "config_overrides"):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _set_leaf(data: dict[str, Any], keys: list[str], value: Any) -> dict[str, Any]:
    out = dict(data)
    if len(keys) == 1:
        out[keys[0]] = value
    else:
        inner = out.get(keys[0])
        out[keys[0]] = _set_leaf(inner if isinstance(inner, dict) else {}, keys[1:], value)
    return out


def parse_override(item: str) -> tuple[list[str], Any]:
    """``section.field=value`` -> (path, value); the value is a Python/TOML literal, else a string."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set expects section.field=value, got {item!r}")
    raw = raw.strip()
    lowered = {"true": True, "false": False, "none": None, "null": None}
    if raw.lower() in lowered:
        return key.strip().split("."), lowered[raw.lower()]
    try:
        return key.strip().split("."), ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return key.strip().split("."), raw


def load_config(
    cls: type = TrainConfig,
    path: str | Path | None = None,
    preset: str | None = None,
    overrides: list[str] = (),
    data: dict[str, Any] | None = None,
):
    """Defaults, then a preset, then a TOML file, then ``data`` (tables as in the TOML), then
    ``--set`` overrides, each setting one field or one key of an ``options`` table (later wins)."""
    layers: dict[str, Any] = {}
    if preset:
        if cls is not TrainConfig:
            raise ConfigError("presets are training recipes; `sft` has none")
        if preset not in PRESETS:
            raise ConfigError(f"unknown preset {preset!r}; choose one of: {', '.join(PRESETS)}")
        layers = _merge(layers, PRESETS[preset])
    if path:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"{path}: no such config file")
        try:
            layers = _merge(layers, tomllib.loads(path.read_text(encoding="utf-8")))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
    if data:
        layers = _merge(layers, data)
    for item in overrides:  # each sets one leaf: other keys of a table (e.g. task.options) stay
        keys, value = parse_override(item)
        layers = _set_leaf(layers, keys, value)
    config = _build(cls, layers, "")
    validate(config)
    return config


def validate(config) -> None:
    """Reject values that cannot work, with the field's name."""
    model = config.model
    if model.dtype not in ("float32", "bfloat16", "float16"):
        raise ConfigError(f"model.dtype must be float32, bfloat16 or float16, not {model.dtype!r}")
    if model.lora_rank < 0:
        raise ConfigError("model.lora_rank must be >= 0")
    optim = config.optim
    if optim.schedule not in ("constant", "linear", "cosine"):
        raise ConfigError(f"optim.schedule must be constant, linear or cosine, not {optim.schedule!r}")
    if optim.micro_batch_size < 1 or optim.grad_accumulation < 0 or optim.ppo_epochs < 1:
        raise ConfigError("need optim.micro_batch_size >= 1, optim.grad_accumulation >= 0, optim.ppo_epochs >= 1")
    least = {"keep_checkpoints": 1, "checkpoint_every": 0, "eval_every": 0}  # 0: off
    least |= {"steps": 1} if isinstance(config, TrainConfig) else {"epochs": 1, "max_steps": 0}
    for name, minimum in least.items():
        if getattr(config.run, name) < minimum:
            raise ConfigError(f"run.{name} must be at least {minimum}, not {getattr(config.run, name)}")
    if not isinstance(config, TrainConfig):
        return
    rollout = config.rollout
    if rollout.engine != "hf":
        raise ConfigError(f"rollout.engine {rollout.engine!r} is not available; the engine today is 'hf'")
    from tritongym.agent.episodes import EpisodeConfig
    from tritongym.agent.prompts import Prompts

    EpisodeConfig(history=rollout.history, extraction=rollout.extraction)
    Prompts(rollout.template, rollout.feedback_template)
    if rollout.prompts_per_step < 1 or rollout.samples_per_prompt < 1 or rollout.turns < 1:
        raise ConfigError("need rollout.prompts_per_step, samples_per_prompt and turns >= 1")
    if config.filters.mrs not in ("off", "token", "sequence", "geometric"):
        raise ConfigError(f"filters.mrs must be off, token, sequence or geometric, not {config.filters.mrs!r}")
    if config.filters.tis not in ("off", "token", "sequence"):
        raise ConfigError(f"filters.tis must be off, token or sequence, not {config.filters.tis!r}")
    from tritongym.rl import ADVANTAGES

    ADVANTAGES.get(config.advantage.estimator)
    loss_config(config)


def loss_config(config: TrainConfig):
    """The PolicyLossConfig of a TrainConfig."""
    from tritongym.rl import PolicyLossConfig

    loss = config.loss
    return PolicyLossConfig(
        clip_low=loss.clip_low,
        clip_high=loss.clip_high,
        dual_clip=loss.dual_clip,
        aggregation=loss.aggregation,
        normalizer=loss.normalizer,
        kl_coef=loss.kl_coef,
        kl_estimator=loss.kl_estimator,
        entropy_coef=loss.entropy_coef,
    )


def with_section(config, section: str, **values):
    """A copy of ``config`` with fields of one section replaced."""
    return replace(config, **{section: replace(getattr(config, section), **values)})
