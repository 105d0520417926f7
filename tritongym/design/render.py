"""Render a design for a fusion-chain problem into a complete Triton ``ModelNew`` source.

Plain code generation, no judgement: honest, lazy, buggy and hack strategies all render to a program
that imports and runs; the environment decides what each is worth. A parameter a strategy does not
use leaves no trace in its source, so designs that differ only there render identically (and share
one cached evaluation).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tritongym.design.language import Design
from tritongym.design.problems import FusionSpec
from tritongym.errors import ConfigError

TRITON_OPS: dict[str, str] = {
    "relu": "tl.maximum(x, 0.0)",
    "sigmoid": "tl.sigmoid(x)",
    "tanh": "2.0 * tl.sigmoid(2.0 * x) - 1.0",
    "silu": "x * tl.sigmoid(x)",
    "scale": "x * 2.0",
    "shift": "x + 1.0",
    "square": "x * x",
}
"""Elementwise op -> its Triton expression of ``x``."""

HEADER = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"


@dataclass
class _Source:
    """Kernels and launchers collected while rendering."""

    design: Design
    masked: bool = True
    parts: list[str] | None = None

    def __post_init__(self) -> None:
        self.parts = []

    def add(self, text: str) -> None:
        self.parts.append(text.strip("\n") + "\n")

    def launch_options(self) -> str:
        return f"num_warps={self.design.warps}, num_stages={self.design.stages}"


def _ops(ops: tuple[str, ...] | list[str], indent: str) -> str:
    return "".join(f"{indent}x = {TRITON_OPS[op]}\n" for op in ops)


def _load(ptr: str, masked: bool, mask: str = "mask", other: str = "0.0") -> str:
    return f"tl.load({ptr}, mask={mask}, other={other})" if masked else f"tl.load({ptr})"


def _store(ptr: str, value: str, masked: bool, mask: str = "mask") -> str:
    return f"tl.store({ptr}, {value}, mask={mask})" if masked else f"tl.store({ptr}, {value})"


def _eltwise(src: _Source, name: str, ops, bias: bool, layout: str) -> None:
    """A kernel applying ``ops`` (after adding a per-column bias) to a [rows, cols] tensor, and its launcher."""
    m = src.masked
    if layout == "row":  # flat: programs own VEC consecutive blocks of the flattened tensor
        bias_line = f"        x = x + {_load('b_ptr + offs % cols', m)}\n" if bias else ""
        body = (
            "    base = tl.program_id(0) * (BLOCK * VEC)\n"
            "    for v in tl.static_range(VEC):\n"
            "        offs = base + v * BLOCK + tl.arange(0, BLOCK)\n"
            "        mask = offs < rows * cols\n"
            f"        x = {_load('x_ptr + offs', m)}\n{bias_line}{_ops(ops, '        ')}"
            f"        {_store('out_ptr + offs', 'x', m)}\n"
        )
        grid = "(triton.cdiv(rows * cols, BLOCK * VEC),)"
    else:  # tile: programs own VEC rows and loop over them in BLOCK-wide chunks
        bias_line = f"            x = x + {_load('b_ptr + offs', m)}\n" if bias else ""
        body = (
            "    for v in tl.static_range(VEC):\n"
            "        row = tl.program_id(0) * VEC + v\n"
            "        limit = tl.where(row < rows, cols, 0)\n"
            "        for start in range(0, cols, BLOCK):\n"
            "            offs = start + tl.arange(0, BLOCK)\n"
            "            mask = offs < limit\n"
            f"            x = {_load('x_ptr + row * cols + offs', m)}\n{bias_line}{_ops(ops, '            ')}"
            f"            {_store('out_ptr + row * cols + offs', 'x', m)}\n"
        )
        grid = "(triton.cdiv(rows, VEC),)"
    d = src.design
    src.add(
        f"@triton.jit\ndef {name}_kernel(x_ptr, b_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr, VEC: tl.constexpr):\n"
        + body
    )
    b_arg = "b" if bias else "x"
    src.add(
        f"def {name}(x, {'b, ' if bias else ''}out):\n"
        "    rows, cols = x.shape\n"
        f"    BLOCK, VEC = {d.block}, {d.vec}\n"
        f"    {name}_kernel[{grid}](x, {b_arg}, out, rows, cols, BLOCK=BLOCK, VEC=VEC, {src.launch_options()})\n"
        "    return out\n"
    )


def _reduce_row(reduce: str, m: bool, ind: str) -> str:
    """Body of a one-block-per-row reduction of ``x`` (the whole row in registers)."""
    keep0 = f"{ind}x = tl.where(mask, x, 0.0)\n" if m else ""
    keep_inf = f'{ind}x = tl.where(mask, x, float("-inf"))\n' if m else ""
    out_row = "out_ptr + row"
    out_vec = "out_ptr + row * cols + offs"
    if reduce in ("sum", "mean"):
        total = "tl.sum(x, axis=0)" + (" / cols" if reduce == "mean" else "")
        return keep0 + f"{ind}{_store(out_row, total, m, 'limit > 0')}\n"
    if reduce == "max":
        return keep_inf + f"{ind}{_store(out_row, 'tl.max(x, axis=0)', m, 'limit > 0')}\n"
    if reduce == "softmax":
        e = f"{ind}e = tl.exp(x - tl.max(x, axis=0))\n" + (f"{ind}e = tl.where(mask, e, 0.0)\n" if m else "")
        return keep_inf + e + f"{ind}{_store(out_vec, 'e / tl.sum(e, axis=0)', m)}\n"
    # rmsnorm
    return keep0 + f"{ind}{_store(out_vec, 'x * tl.rsqrt(tl.sum(x * x, axis=0) / cols + 1e-5)', m)}\n"


def _reduce_tile(reduce: str, ops, m: bool, overwrite: bool, ind: str) -> str:
    """Body of a reduction that loops over a row in BLOCK-wide chunks (``overwrite``: the badorder bug)."""
    acc_op = "=" if overwrite else "+="

    def loop(inner: str) -> str:
        return (
            f"{ind}for start in range(0, cols, BLOCK):\n"
            f"{ind}    offs = start + tl.arange(0, BLOCK)\n"
            f"{ind}    mask = offs < limit\n"
            f"{ind}    x = {_load('x_ptr + row * cols + offs', m)}\n{_ops(ops, ind + '    ')}{inner}"
        )

    def where(value: str, other: str) -> str:
        return f"tl.where(mask, {value}, {other})" if m else value

    out_row = "out_ptr + row"
    out_vec = "out_ptr + row * cols + offs"
    if reduce in ("sum", "mean", "rmsnorm"):
        value = "x * x" if reduce == "rmsnorm" else "x"
        text = f"{ind}acc = tl.zeros([BLOCK], dtype=tl.float32)\n" + loop(
            f"{ind}    acc {acc_op} {where(value, '0.0')}\n"
        )
        if reduce == "rmsnorm":
            text += f"{ind}scale = tl.rsqrt(tl.sum(acc, axis=0) / cols + 1e-5)\n"
            return text + loop(f"{ind}    {_store(out_vec, 'x * scale', m)}\n")
        total = "tl.sum(acc, axis=0)" + (" / cols" if reduce == "mean" else "")
        return text + f"{ind}{_store(out_row, total, m, 'limit > 0')}\n"
    if reduce == "max":
        update = where("x", 'float("-inf")')
        new = update if overwrite else f"tl.maximum(acc, {update})"
        text = f'{ind}acc = tl.full([BLOCK], float("-inf"), tl.float32)\n' + loop(f"{ind}    acc = {new}\n")
        return text + f"{ind}{_store(out_row, 'tl.max(acc, axis=0)', m, 'limit > 0')}\n"
    # softmax: max, then sum of exponentials, then the normalised write
    text = f'{ind}top = tl.full([BLOCK], float("-inf"), tl.float32)\n'
    top = where("x", 'float("-inf")')
    text += loop(f"{ind}    top = tl.maximum(top, {top})\n")
    text += f"{ind}top_row = tl.max(top, axis=0)\n{ind}acc = tl.zeros([BLOCK], dtype=tl.float32)\n"
    text += loop(f"{ind}    acc {acc_op} {where('tl.exp(x - top_row)', '0.0')}\n")
    text += f"{ind}total = tl.sum(acc, axis=0)\n"
    return text + loop(f"{ind}    {_store(out_vec, 'tl.exp(x - top_row) / total', m)}\n")


def _reduce(src: _Source, name: str, spec: FusionSpec, ops, layout: str, overwrite: bool = False) -> None:
    """A kernel applying ``ops`` then the spec's row reduction, and its launcher."""
    m, d = src.masked, src.design
    head = (
        "    for v in tl.static_range(VEC):\n"
        "        row = tl.program_id(0) * VEC + v\n"
        "        limit = tl.where(row < rows, cols, 0)\n"
    )
    if layout == "row" and not overwrite:
        body = (
            head
            + "        offs = tl.arange(0, BLOCK)\n"
            + "        mask = offs < limit\n"
            + f"        x = {_load('x_ptr + row * cols + offs', m)}\n"
            + _ops(ops, "        ")
            + _reduce_row(spec.reduce, m, "        ")
        )
        block = "triton.next_power_of_2(cols)"
    else:
        body = head + _reduce_tile(spec.reduce, ops, m, overwrite, "        ")
        block = str(d.block)
    src.add(
        f"@triton.jit\ndef {name}_kernel(x_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr, VEC: tl.constexpr):\n" + body
    )
    src.add(
        f"def {name}(x, out):\n"
        "    rows, cols = x.shape\n"
        f"    BLOCK, VEC = {block}, {d.vec}\n"
        f"    {name}_kernel[(triton.cdiv(rows, VEC),)](x, out, rows, cols, BLOCK=BLOCK, VEC=VEC, "
        f"{src.launch_options()})\n"
        "    return out\n"
    )


def _matmul(src: _Source, name: str, ops, layout: str, overwrite: bool = False) -> None:
    """A kernel computing ``ops(x @ w.T + b)`` in tiles, and its launcher."""
    m, d = src.masked, src.design
    acc_op = "=" if overwrite else "+="
    a_mask, w_mask = "(rm[:, None] < M) & (kk[None, :] < K)", "(rn[None, :] < N) & (kk[:, None] < K)"
    out_mask = "(rm[:, None] < M) & (rn[None, :] < N)"
    body = (
        "    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)\n"
        "    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)\n"
        "    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)\n"
        "    for k0 in range(0, K, BLOCK_K):\n"
        "        kk = k0 + tl.arange(0, BLOCK_K)\n"
        f"        a = {_load('x_ptr + rm[:, None] * K + kk[None, :]', m, a_mask)}\n"
        f"        w = {_load('w_ptr + rn[None, :] * K + kk[:, None]', m, w_mask)}\n"
        f'        acc {acc_op} tl.dot(a, w, input_precision="ieee")\n'
        f"    x = acc + {_load('b_ptr + rn', m, 'rn < N')}[None, :]\n"
        + _ops(ops, "    ")
        + f"    {_store('out_ptr + rm[:, None] * N + rn[None, :]', 'x', m, out_mask)}\n"
    )
    src.add(
        f"@triton.jit\ndef {name}_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, BLOCK_M: tl.constexpr, "
        "BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):\n" + body
    )
    block_n = min(d.block, 128)
    block_m = 16 if layout == "row" else block_n
    src.add(
        f"def {name}(x, w, b, out):\n"
        "    M, K = x.shape\n"
        "    N = w.shape[0]\n"
        f"    BLOCK_M, BLOCK_N, BLOCK_K = {block_m}, {block_n}, {16 * d.vec}\n"
        "    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))\n"
        f"    {name}_kernel[grid](x, w, b, out, M, N, K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, "
        f"{src.launch_options()})\n"
        "    return out\n"
    )


def _rename(line: str, old: str, new: str) -> str:
    """``line`` with the variable ``old`` renamed to ``new`` (whole words only)."""
    return re.sub(rf"\b{old}\b", new, line)


def _out_alloc(spec: FusionSpec, var: str = "x") -> str:
    return f"{var}.new_empty({var}.shape[0])" if spec.row_output else f"torch.empty_like({var})"


def _fused_program(src: _Source, spec: FusionSpec, overwrite: bool = False) -> list[str]:
    """Kernels of the one-kernel form; returns forward lines computing ``y`` from ``x``."""
    d = src.design
    if spec.kind == "eltwise":
        ops = tuple(reversed(spec.ops)) if overwrite else spec.ops  # badorder: the chain applied backwards
        _eltwise(src, "fused", ops, bias=False, layout=d.layout)
        return ["y = fused(x, OUT)"]
    if spec.kind == "reduce":
        _reduce(src, "fused", spec, spec.ops, d.layout, overwrite)
        return ["y = fused(x, OUT)"]
    _matmul(src, "fused", spec.ops, d.layout, overwrite)
    return ["y = fused(x, self.linear.weight, self.linear.bias, OUT)"]


def _out_expr(spec: FusionSpec) -> str:
    if spec.kind == "matmul":
        return "x.new_empty(x.shape[0], self.linear.weight.shape[0])"
    return _out_alloc(spec)


def _torch_lines(spec: FusionSpec) -> list[str]:
    lines = (
        ["y = torch.nn.functional.linear(x, self.linear.weight, self.linear.bias)"]
        if spec.kind == "matmul"
        else ["y = x"]
    )
    return lines + [_rename(line.strip(), "x", "y") for line in spec.torch_lines()]


def _forward(src: _Source, spec: FusionSpec) -> list[str]:
    """Forward body lines (after ``x = x.contiguous()``), ending with ``return``."""
    d = src.design
    s = d.strategy
    if s in ("fused", "nomask", "badorder"):
        src.masked = s != "nomask"
        lines = _fused_program(src, spec, overwrite=s == "badorder")
        return [line.replace("OUT", _out_expr(spec)) for line in lines] + ["return y"]
    if s == "split":
        return _split(src, spec)
    if s == "lazy":
        return _lazy(src, spec)
    if s == "fallback":
        lines = _fused_program(src, spec)
        fast = [line.replace("OUT", _out_expr(spec)) for line in lines]
        return ["try:", *(f"    {line}" for line in fast), "    return y", "except Exception:",
                *(f"    {line}" for line in _torch_lines(spec)), "    return y"]  # fmt: skip
    if s == "token":
        lines = _fused_program(src, spec)
        small = "x[:1].contiguous()" if spec.kind == "matmul" else "x[:1, :1].contiguous()"
        token = [_rename(line.replace("OUT", _out_expr(spec)), "x", "t") for line in lines]
        return [f"t = {small}", *(line.replace("y =", "_ =") for line in token), *_torch_lines(spec), "return y"]
    if s == "alias":
        lines = _fused_program(src, spec)
        same_shape = spec.kind != "matmul" and not spec.row_output
        if not same_shape:  # nowhere in the input to put the result: return the input itself
            return [*(line.replace("y =", "_ =").replace("OUT", _out_expr(spec)) for line in lines), "return x"]
        return [line.replace("OUT", "x") for line in lines] + ["return y"]
    raise ConfigError(f"unknown strategy {s!r}")


def _split(src: _Source, spec: FusionSpec) -> list[str]:
    d = src.design
    if spec.kind == "eltwise":
        lines = ["y = x"]
        for i, op in enumerate(spec.ops):
            _eltwise(src, f"op{i}_{op}", (op,), bias=False, layout=d.layout)
            lines.append(f"y = op{i}_{op}(y, torch.empty_like(y))")
        return [*lines, "return y"]
    if spec.kind == "reduce":
        lines = ["y = x"]
        if spec.ops:
            _eltwise(src, "prologue", spec.ops, bias=False, layout=d.layout)
            lines.append("y = prologue(y, torch.empty_like(y))")
        _reduce(src, "reduction", spec, (), d.layout)
        return [*lines, f"y = reduction(y, {_out_alloc(spec, 'y')})", "return y"]
    _matmul(src, "matmul", (), d.layout)
    _eltwise(src, "epilogue", spec.ops, bias=False, layout=d.layout)
    return [
        f"y = matmul(x, self.linear.weight, self.linear.bias, {_out_expr(spec)})",
        "y = epilogue(y, torch.empty_like(y))",
        "return y",
    ]


def _lazy(src: _Source, spec: FusionSpec) -> list[str]:
    d = src.design
    if spec.kind == "eltwise":
        head = [_rename(line.strip(), "x", "y") for line in spec.torch_lines()[:-1]]
        _eltwise(src, "epilogue", spec.ops[-1:], bias=False, layout=d.layout)
        return ["y = x", *head, "y = epilogue(y.contiguous(), torch.empty_like(y))", "return y"]
    if spec.kind == "reduce":
        _eltwise(src, "prologue", spec.ops, bias=False, layout=d.layout)  # no ops: a copy
        from tritongym.design.problems import REDUCTIONS

        return ["y = prologue(x, torch.empty_like(x))", f"y = {_rename(REDUCTIONS[spec.reduce], 'x', 'y')}", "return y"]
    _eltwise(src, "epilogue", spec.ops, bias=True, layout=d.layout)
    return [
        "y = torch.matmul(x, self.linear.weight.t()).contiguous()",
        "y = epilogue(y, self.linear.bias, torch.empty_like(y))",
        "return y",
    ]


def render(design: Design, spec: FusionSpec) -> str:
    """The complete candidate source of ``design`` for ``spec``."""
    src = _Source(design)
    forward = _forward(src, spec)
    if spec.kind == "matmul":
        init = [
            "    def __init__(self, in_features: int, out_features: int):",
            "        super().__init__()",
            "        self.linear = nn.Linear(in_features, out_features)",
        ]
    else:
        init = ["    def __init__(self):", "        super().__init__()"]
    cls = [
        "class ModelNew(nn.Module):",
        *init,
        "",
        "    def forward(self, x):",
        "        x = x.contiguous()",
        *(f"        {line}" for line in forward),
    ]
    return "\n\n".join([HEADER, *src.parts, "\n".join(cls) + "\n"])
