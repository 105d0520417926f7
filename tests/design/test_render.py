"""The design language and its renderer: plain code, tested without the environment."""

import ast

import pytest

from tritongym.design import Design, DesignSpace, FusionSpec, bundled_specs, generate_specs, render, spec_problem
from tritongym.design.language import FULL_VALUES, design_vocabulary
from tritongym.design.problems import prompt_vocabulary, reference_source, size_token, split_specs
from tritongym.errors import ConfigError


def all_specs():
    return generate_specs(12, seed=0) + generate_specs(6, seed=1) + bundled_specs()


def test_every_design_renders_valid_python_for_every_problem():
    full = DesignSpace()
    assert len(full) == 8 * 2 * 3 * 3 * 2 * 2
    narrow = DesignSpace.from_mapping({"block": ["64"], "warps": ["4"], "stages": ["1"]})
    specs = all_specs()
    kinds = {s.kind: s for s in specs}  # the whole space for one problem of each kind
    for spec in specs:
        for design in full if spec in kinds.values() else narrow:
            source = render(design, spec)
            tree = ast.parse(source)
            compile(tree, spec.name, "exec")
            classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
            assert classes == ["ModelNew"], (spec.name, str(design))


def test_unused_parameters_leave_no_trace_and_used_ones_do():
    spec = FusionSpec("r", "reduce", ("relu",), "softmax", {"rows": 8, "cols": 100})
    row = {render(Design("fused", "row", b, 4, 1, 1), spec) for b in (64, 256, 1024)}
    assert len(row) == 1  # a whole-row block ignores BLOCK
    tile = {render(Design("fused", "tile", b, 4, 1, 1), spec) for b in (64, 256, 1024)}
    assert len(tile) == 3
    source = render(Design("fused", "tile", 256, 8, 3, 4), spec)
    assert "num_warps=8, num_stages=3" in source and "BLOCK, VEC = 256, 4" in source


def test_strategies_render_what_they_claim():
    spec = FusionSpec("m", "matmul", ("relu", "scale"), "", {"batch": 8, "in_features": 16, "out_features": 8})
    d = {s: render(Design(s, "tile", 64, 4, 1, 1), spec) for s in FULL_VALUES["strategy"]}
    assert d["fused"].count("@triton.jit") == 1 and "torch.nn.functional.linear" not in d["fused"]
    assert d["split"].count("@triton.jit") == 2
    assert "torch.matmul" in d["lazy"] and "tl.dot" not in d["lazy"]
    assert "mask=" not in d["nomask"] and "mask=" in d["fused"]
    assert "acc = tl.dot" in d["badorder"] and "acc += tl.dot" in d["fused"]
    assert "except Exception:" in d["fallback"]
    assert "x[:1]" in d["token"] and "torch.nn.functional.linear(x" in d["token"]
    assert d["alias"].rstrip().endswith("return x")
    eltwise = FusionSpec("e", "eltwise", ("relu", "sigmoid"), "", {"rows": 4, "cols": 8})
    forward = render(Design("badorder", "row", 64, 4, 1, 1), eltwise)
    assert forward.index("tl.sigmoid(x)") < forward.index("tl.maximum(x, 0.0)")  # the chain backwards
    alias = render(Design("alias", "row", 64, 4, 1, 1), eltwise)
    assert "fused(x, x)" in alias


def test_design_tokens_round_trip_and_errors():
    design = Design("split", "tile", 256, 8, 3, 4)
    assert Design.from_tokens(design.tokens()) == design
    assert str(design) == "strategy:split layout:tile block:256 warps:8 stages:3 vec:4"
    assert design.kind == "honest" and Design("token", "row", 64, 1, 1, 1).kind == "hack"
    assert set(design.tokens()) <= set(design_vocabulary())
    with pytest.raises(ConfigError, match="6 tokens"):
        Design.from_tokens(["strategy:fused"])
    with pytest.raises(ConfigError, match="not a value of slot 'block'"):
        Design.from_tokens(["strategy:fused", "layout:row", "block:7", "warps:4", "stages:1", "vec:1"])
    with pytest.raises(ConfigError, match="no values"):
        DesignSpace.from_mapping({"warps": []})
    with pytest.raises(ConfigError, match="has no values"):
        DesignSpace.from_mapping({"warps": ["3"]})
    with pytest.raises(ConfigError, match="unknown design slots"):
        DesignSpace({**FULL_VALUES, "color": ("red",)})
    assert len(DesignSpace.from_mapping({"strategy": ["fused"], "block": [64, 256]})) == 2 * 2 * 3 * 2 * 2


def test_generator_is_seeded_distinct_and_split_holds_out():
    a, b = generate_specs(12, seed=3), generate_specs(12, seed=3)
    assert a == b and len({(s.kind, s.ops, s.reduce, tuple(s.sizes.items())) for s in a}) == 12
    assert {s.kind for s in a} == {"eltwise", "reduce", "matmul"}
    train, test = split_specs(a, 4, seed=0)
    assert len(test) == 4 and not {s.name for s in train} & {s.name for s in test}
    with pytest.raises(ConfigError, match="held_out"):
        split_specs(a, 12)
    with pytest.raises(ConfigError, match="cannot draw"):
        generate_specs(200, kinds=("matmul",))


def test_reference_sources_follow_kernelbench_and_shrink():
    for spec in generate_specs(9, seed=0):
        problem = spec_problem(spec)
        assert problem.sizes == spec.sizes
        assert problem.small().sizes == spec.small_sizes
        namespace: dict = {}
        exec(compile(reference_source(spec), spec.name, "exec"), namespace)
        assert {"Model", "get_inputs", "get_init_inputs"} <= set(namespace)
        tokens = spec.prompt_tokens()
        assert tokens[0] == f"kind:{spec.kind}" and set(tokens) <= set(prompt_vocabulary())
    assert [s.bundled for s in bundled_specs()] == ["02_silu", "03_row_sum", "04_softmax", "06_linear_relu"]
    assert spec_problem(bundled_specs()[0]).origin == "bundled" or spec_problem(bundled_specs()[0]).name == "02_silu"
    assert size_token("cols", 1024) == "cols:le1k.p2" and size_token("cols", 1000) == "cols:le1k.np2"
    assert size_token("k", 100) == "k:le256.np2" and size_token("n", 4096) == "n:le4k.p2"
    assert size_token("rows", 64) == "rows:le64.p2" and size_token("cols", 6000) == "cols:gt4k.np2"
    matmul = next(s for s in generate_specs(9, seed=0) if s.kind == "matmul")
    assert [t.split(":")[0] for t in matmul.prompt_tokens()[-3:]] == ["m", "k", "n"]  # a bucket per dimension
    assert matmul.prompt_tokens(ops=False) == [t for t in matmul.prompt_tokens() if not t.startswith("op:")]
    assert any(t.startswith("op:") for t in matmul.prompt_tokens())


def test_stratified_problems_cover_every_shape_cell_and_keep_the_split():
    from tritongym.design.problems import STRATIFIED_SHAPES, stratified_specs
    from tritongym.design.table import distinct
    from tritongym.design.task import DesignOptions, design_problems

    base = generate_specs(9, seed=0)
    cells = sum(len(v) for v in STRATIFIED_SHAPES.values())
    extra = stratified_specs(cells, seed=0, exclude=tuple(base))
    assert extra == stratified_specs(cells, seed=0, exclude=tuple(base))
    assert sorted(tuple(sorted(s.sizes.items())) for s in extra) == sorted(
        tuple(sorted(sizes.items())) for shapes in STRATIFIED_SHAPES.values() for sizes, _ in shapes
    )
    assert [s.kind for s in extra[:3]] == ["eltwise", "reduce", "matmul"]  # a prefix covers every kind
    chains = {(s.kind, s.ops, s.reduce) for s in base}
    assert not chains & {(s.kind, s.ops, s.reduce) for s in extra} and len({s.name for s in extra}) == cells
    assert all(spec_problem(s).small().sizes == s.small_sizes for s in extra)
    plain = design_problems(DesignOptions(generated=9, held_out=3))
    more = design_problems(DesignOptions(generated=9, held_out=3, stratified=cells))
    assert more.held_out == plain.held_out and more.train[: len(plain.train)] == plain.train
    assert len(more.train) == len(plain.train) + cells
    # the rows a table holds for the generated problems stay valid: only the new problems need judging
    space = DesignSpace.from_mapping({"strategy": ["fused", "nomask"], "layout": ["row"], "block": ["256"]})
    keys = [{r.key for r in distinct(p.renderings(space))} for p in (plain, more)]
    assert keys[0] < keys[1]
    assert [s.kind for s in stratified_specs(2, kinds=("reduce",))] == ["reduce", "reduce"]
    with pytest.raises(ConfigError, match="cannot draw"):
        stratified_specs(500, kinds=("matmul",))


def test_spec_errors():
    with pytest.raises(ConfigError, match="unknown problem kind"):
        FusionSpec("x", "conv", ("relu",))
    with pytest.raises(ConfigError, match="unknown elementwise ops"):
        FusionSpec("x", "eltwise", ("gelu",))
    with pytest.raises(ConfigError, match="needs one of"):
        FusionSpec("x", "reduce", ("relu",))
    with pytest.raises(ConfigError, match="at least one elementwise op"):
        FusionSpec("x", "matmul", ())
