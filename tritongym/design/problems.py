"""Fusion-chain problems: a spec (ops, reduction, sizes), its KernelBench-style reference source,
its description in prompt tokens, and a seeded generator with a held-out split.

Kinds: ``eltwise`` (a chain of elementwise ops on a [rows, cols] input), ``reduce`` (elementwise ops,
then a row reduction, softmax or RMS norm), ``matmul`` (``nn.Linear`` followed by an elementwise
epilogue). Sizes are module-level constants, so ``Problem.small()``/``with_sizes`` shrink them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from tritongym.errors import ConfigError
from tritongym.problems import Problem, find_problem

ELTWISE_OPS: dict[str, str] = {
    "relu": "torch.relu(x)",
    "sigmoid": "torch.sigmoid(x)",
    "tanh": "torch.tanh(x)",
    "silu": "torch.nn.functional.silu(x)",
    "scale": "x * 2.0",
    "shift": "x + 1.0",
    "square": "x * x",
}
"""Elementwise op -> its PyTorch expression of ``x``."""

REDUCTIONS: dict[str, str] = {
    "sum": "torch.sum(x, dim=1)",
    "mean": "torch.mean(x, dim=1)",
    "max": "torch.amax(x, dim=1)",
    "softmax": "torch.softmax(x, dim=1)",
    "rmsnorm": "x * torch.rsqrt(torch.mean(x * x, dim=1, keepdim=True) + 1e-5)",
}
"""Row reduction -> its PyTorch expression of ``x`` (sum/mean/max give [rows], the others [rows, cols])."""

ROW_OUTPUT = ("sum", "mean", "max")
KINDS = ("eltwise", "reduce", "matmul")


@dataclass(frozen=True)
class FusionSpec:
    """One fusion-chain problem."""

    name: str
    """Problem name (unique in a set)."""
    kind: str
    """eltwise, reduce or matmul."""
    ops: tuple[str, ...]
    """Elementwise ops in order (before the reduction; after the matmul)."""
    reduce: str = ""
    """The reduction of a ``reduce`` problem (a key of REDUCTIONS)."""
    sizes: dict[str, int] = field(default_factory=dict, compare=False, hash=False)
    """rows/cols (eltwise, reduce) or batch/in_features/out_features (matmul): the real sizes."""
    small_sizes: dict[str, int] = field(default_factory=dict, compare=False, hash=False)
    """CPU-interpreter sizes of the same constants."""
    bundled: str = ""
    """Name of the bundled problem this spec describes ('' for generated ones)."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"unknown problem kind {self.kind!r}; kinds: {', '.join(KINDS)}")
        bad = [op for op in self.ops if op not in ELTWISE_OPS]
        if bad:
            raise ConfigError(f"unknown elementwise ops {bad}; ops: {', '.join(ELTWISE_OPS)}")
        if (self.kind == "reduce") != bool(self.reduce) or (self.reduce and self.reduce not in REDUCTIONS):
            raise ConfigError(f"{self.name}: a reduce problem needs one of {', '.join(REDUCTIONS)}, others none")
        if self.kind != "reduce" and not self.ops:
            raise ConfigError(f"{self.name}: an {self.kind} problem needs at least one elementwise op")

    @property
    def row_output(self) -> bool:
        """Whether the output is one value per row."""
        return self.reduce in ROW_OUTPUT

    def torch_lines(self, indent: str = "        ") -> list[str]:
        """The forward's body in PyTorch, from ``x`` (after the linear layer for matmul) to ``x``."""
        lines = [f"{indent}x = {ELTWISE_OPS[op]}" for op in self.ops]
        if self.reduce:
            lines.append(f"{indent}x = {REDUCTIONS[self.reduce]}")
        return lines

    def prompt_tokens(self, small: bool = False, ops: bool = True) -> list[str]:
        """The problem described in tokens: kind, ops (unless ``ops`` is false), reduction, and a shape
        bucket per dimension."""
        sizes = self.small_sizes if small else self.sizes
        tokens = [f"kind:{self.kind}", *(f"op:{op}" for op in self.ops if ops)]
        if self.reduce:
            tokens.append(f"reduce:{self.reduce}")
        if self.kind == "matmul":
            dims = (("m", "batch"), ("k", "in_features"), ("n", "out_features"))
        else:
            dims = (("rows", "rows"), ("cols", "cols"))
        return tokens + [size_token(name, sizes[key]) for name, key in dims]


SIZE_BUCKETS = ((64, "le64"), (256, "le256"), (1024, "le1k"), (4096, "le4k"), (float("inf"), "gt4k"))
"""Upper bound -> magnitude bucket of a dimension: the language's block sizes (a row fits one tile of
64, 256 or 1024 elements, or not), then long rows (up to 4096) and longer ones."""


def size_token(name: str, value: int) -> str:
    """A dimension's bucket: its magnitude (:data:`SIZE_BUCKETS`) and whether it is a power of two
    (``p2``; ``np2`` when not: bounds masks and tile counts matter)."""
    magnitude = next(label for bound, label in SIZE_BUCKETS if value <= bound)
    return f"{name}:{magnitude}.{'p2' if value & (value - 1) == 0 else 'np2'}"


def prompt_vocabulary() -> list[str]:
    """Every token a problem description can use."""
    tokens = [f"kind:{k}" for k in KINDS] + [f"op:{op}" for op in ELTWISE_OPS] + [f"reduce:{r}" for r in REDUCTIONS]
    for name in ("rows", "cols", "m", "k", "n"):
        tokens += [f"{name}:{label}.{p}" for _, label in SIZE_BUCKETS for p in ("p2", "np2")]
    return tokens


def reference_source(spec: FusionSpec) -> str:
    """The KernelBench-style reference module of ``spec``."""
    chain = " -> ".join(
        [*(["linear"] if spec.kind == "matmul" else []), *spec.ops, *([spec.reduce] if spec.reduce else [])]
    )
    head = ["import torch", "import torch.nn as nn", "", "", "class Model(nn.Module):", f'    """{chain}"""', ""]
    if spec.kind == "matmul":
        body = [
            "    def __init__(self, in_features: int, out_features: int):",
            "        super().__init__()",
            "        self.linear = nn.Linear(in_features, out_features)",
            "",
            "    def forward(self, x: torch.Tensor) -> torch.Tensor:",
            "        x = self.linear(x)",
            *spec.torch_lines(),
            "        return x",
        ]
        tail = [
            f"batch = {spec.sizes['batch']}",
            f"in_features = {spec.sizes['in_features']}",
            f"out_features = {spec.sizes['out_features']}",
            "",
            "",
            "def get_inputs():",
            "    return [torch.randn(batch, in_features)]",
            "",
            "",
            "def get_init_inputs():",
            "    return [in_features, out_features]",
        ]
    else:
        body = [
            "    def __init__(self):",
            "        super().__init__()",
            "",
            "    def forward(self, x: torch.Tensor) -> torch.Tensor:",
            *spec.torch_lines(),
            "        return x",
        ]
        tail = [
            f"rows = {spec.sizes['rows']}",
            f"cols = {spec.sizes['cols']}",
            "",
            "",
            "def get_inputs():",
            "    return [torch.randn(rows, cols)]",
            "",
            "",
            "def get_init_inputs():",
            "    return []",
        ]
    return "\n".join([*head, *body, "", "", *tail, ""])


def spec_problem(spec: FusionSpec) -> Problem:
    """The Problem of ``spec``: the bundled one it describes, or one built from its reference source."""
    if spec.bundled:
        return find_problem(spec.bundled)
    return Problem(
        name=spec.name,
        source=reference_source(spec),
        tags=("fusion", spec.kind),
        origin="tritongym.design",
        small_sizes=dict(spec.small_sizes),
    )


SHAPES: dict[str, list[dict[str, int]]] = {
    "eltwise": [{"rows": 4096, "cols": 4096}, {"rows": 8192, "cols": 1000}, {"rows": 1000, "cols": 8192}],
    "reduce": [{"rows": 4096, "cols": 1024}, {"rows": 4096, "cols": 1000}, {"rows": 1024, "cols": 8192},
               {"rows": 2048, "cols": 3000}],
    "matmul": [{"batch": 2048, "in_features": 1024, "out_features": 1024},
               {"batch": 1024, "in_features": 1000, "out_features": 2048}],
}  # fmt: skip
"""Real sizes per kind: powers of two and not, rows shorter and longer than a block."""

SMALL_SHAPES: dict[str, list[dict[str, int]]] = {
    "eltwise": [{"rows": 4, "cols": 64}, {"rows": 3, "cols": 50}],
    "reduce": [{"rows": 4, "cols": 64}, {"rows": 3, "cols": 50}, {"rows": 2, "cols": 300}],
    "matmul": [{"batch": 16, "in_features": 32, "out_features": 16},
               {"batch": 10, "in_features": 40, "out_features": 24}],
}  # fmt: skip
"""Interpreter sizes, in the same buckets' spirit: divisible and not, one tile and several."""


def generate_specs(count: int, seed: int = 0, kinds: tuple[str, ...] = KINDS) -> list[FusionSpec]:
    """``count`` distinct fusion-chain problems drawn with ``seed`` (kinds round-robin)."""
    rng = random.Random(seed)
    specs: list[FusionSpec] = []
    seen: set[tuple] = set()
    attempts = 0
    while len(specs) < count:
        attempts += 1
        if attempts > 100 * count:
            raise ConfigError(f"cannot draw {count} distinct problems of kinds {kinds}")
        kind = kinds[len(specs) % len(kinds)]
        ops_pool = list(ELTWISE_OPS)
        if kind == "eltwise":
            ops = tuple(rng.sample(ops_pool, rng.randint(2, 3)))
            reduce = ""
        elif kind == "reduce":
            ops = tuple(rng.sample(ops_pool, rng.randint(0, 2)))
            reduce = rng.choice(list(REDUCTIONS))
        else:
            ops = tuple(rng.sample(ops_pool, rng.randint(1, 2)))
            reduce = ""
        shape = rng.randrange(len(SHAPES[kind]))
        key = (kind, ops, reduce, shape)
        if key in seen:
            continue
        seen.add(key)
        small = SMALL_SHAPES[kind][shape % len(SMALL_SHAPES[kind])]
        name = f"{len(specs):02d}_{kind}_{'_'.join([*ops, *([reduce] if reduce else [])])}"
        specs.append(FusionSpec(name, kind, ops, reduce, dict(SHAPES[kind][shape]), dict(small)))
    return specs


STRATIFIED_SHAPES: dict[str, list[tuple[dict[str, int], dict[str, int]]]] = {
    "reduce": [({"rows": 16384, "cols": 200}, {"rows": 4, "cols": 20}),
               ({"rows": 4096, "cols": 2500}, {"rows": 2, "cols": 250}),
               ({"rows": 8192, "cols": 768}, {"rows": 4, "cols": 48}),
               ({"rows": 1024, "cols": 6000}, {"rows": 2, "cols": 600}),
               ({"rows": 8192, "cols": 1000}, {"rows": 3, "cols": 50}),
               ({"rows": 4096, "cols": 2048}, {"rows": 2, "cols": 128})],
    "eltwise": [({"rows": 3000, "cols": 3000}, {"rows": 3, "cols": 30}),
                ({"rows": 8192, "cols": 768}, {"rows": 8, "cols": 48}),
                ({"rows": 1500, "cols": 3000}, {"rows": 3, "cols": 100})],
    "matmul": [({"batch": 4096, "in_features": 512, "out_features": 512},
                {"batch": 32, "in_features": 32, "out_features": 32}),
               ({"batch": 1000, "in_features": 768, "out_features": 3000},
                {"batch": 10, "in_features": 48, "out_features": 30})],
}  # fmt: skip
"""(real, small) sizes of the stratified training problems, per kind: rows that fit one tile and rows
that span several, powers of two and not, in every size bucket the generated problems use."""


def stratified_specs(
    count: int, seed: int = 0, kinds: tuple[str, ...] = KINDS, exclude: tuple[FusionSpec, ...] = ()
) -> list[FusionSpec]:
    """``count`` training problems, one per (kind, shape) cell of :data:`STRATIFIED_SHAPES` in turn (the
    kinds interleaved, so a prefix covers every kind), elementwise ops and reduction drawn with
    ``seed``; none has the op chain of a problem in ``exclude`` (the held-out ones included), so they
    cover the held-out problems' features without being them."""
    cells = []
    for i in range(max(len(v) for v in STRATIFIED_SHAPES.values())):
        cells += [
            (kind, STRATIFIED_SHAPES[kind][i]) for kind in KINDS if kind in kinds and i < len(STRATIFIED_SHAPES[kind])
        ]
    if not cells:
        raise ConfigError(f"no stratified shapes for kinds {kinds}")
    rng = random.Random(f"stratified-{seed}")
    seen = {(s.kind, s.ops, s.reduce) for s in exclude}
    specs: list[FusionSpec] = []
    attempts = 0
    while len(specs) < count:
        attempts += 1
        if attempts > 100 * count:
            raise ConfigError(f"cannot draw {count} distinct stratified problems of kinds {kinds}")
        kind, (sizes, small) = cells[len(specs) % len(cells)]
        ops_pool = list(ELTWISE_OPS)
        if kind == "eltwise":
            ops, reduce = tuple(rng.sample(ops_pool, rng.randint(2, 3))), ""
        elif kind == "reduce":
            ops, reduce = tuple(rng.sample(ops_pool, rng.randint(0, 2))), rng.choice(list(REDUCTIONS))
        else:
            ops, reduce = tuple(rng.sample(ops_pool, rng.randint(1, 2))), ""
        if (kind, ops, reduce) in seen:
            continue
        seen.add((kind, ops, reduce))
        name = f"s{len(specs):02d}_{kind}_{'_'.join([*ops, *([reduce] if reduce else [])])}"
        specs.append(FusionSpec(name, kind, ops, reduce, dict(sizes), dict(small)))
    return specs


def split_specs(specs: list[FusionSpec], held_out: int, seed: int = 0) -> tuple[list[FusionSpec], list[FusionSpec]]:
    """(train, held_out): ``held_out`` problems set aside by ``seed``, never trained on."""
    if not 0 < held_out < len(specs):
        raise ConfigError(f"held_out must be between 1 and {len(specs) - 1}, not {held_out}")
    order = list(range(len(specs)))
    random.Random(seed).shuffle(order)
    test = set(order[:held_out])
    return [s for i, s in enumerate(specs) if i not in test], [s for i, s in enumerate(specs) if i in test]


def bundled_specs() -> list[FusionSpec]:
    """The bundled problems the language can express (their sizes are the bundled ones)."""
    out = []
    for name, kind, ops, reduce in (
        ("02_silu", "eltwise", ("silu",), ""),
        ("03_row_sum", "reduce", (), "sum"),
        ("04_softmax", "reduce", (), "softmax"),
        ("06_linear_relu", "matmul", ("relu",), ""),
    ):
        problem = find_problem(name)
        sizes, small = problem.sizes, problem.small_sizes
        if kind == "matmul":
            renamed = {"batch": sizes["batch_size"], "in_features": sizes["in_features"],
                       "out_features": sizes["out_features"]}  # fmt: skip
            small_renamed = {"batch": small["batch_size"], "in_features": small["in_features"],
                             "out_features": small["out_features"]}  # fmt: skip
        else:
            renamed = {"rows": sizes["batch_size"], "cols": sizes["dim"]}
            small_renamed = {"rows": small["batch_size"], "cols": small["dim"]}
        out.append(FusionSpec(name, kind, ops, reduce, renamed, small_renamed, bundled=name))
    return out
