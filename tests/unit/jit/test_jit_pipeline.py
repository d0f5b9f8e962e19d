"""What the original tdsl JIT was tested for, through the new pipeline.

Parser, SSA lowering with matmul shape inference, fusion of element-wise chains,
matmul as a boundary for its right operand, the budget controlling splitting,
softmax fusing, tiling of large dims only, valid generated Python, end-to-end
results, empty and 1-D tensors, recompilation for new shapes, subtraction, dtype
promotion.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import re
from typing import Any

import numpy as np
import pytest

from tdsl.frontend import parse
from tdsl.frontend.ast import BinOp, Call, Expression, Name
from tdsl.jit import GroupInfo, JITTensorKernel

ONE_DEFAULT_TARGET = pytest.mark.parametrize("jit_target", ["numpy"], indirect=True)
"""For a test that names its targets itself: the folder's default target
(``jit_target``) takes one value, not both, whose two runs were the same."""


def softmax(x: np.ndarray[Any, Any], axis: int = -1) -> np.ndarray[Any, Any]:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def group_with(groups: tuple[GroupInfo, ...], op: str) -> GroupInfo:
    found = [g for g in groups if f"tensordsl.{op}" in g.ops]
    assert len(found) == 1, f"expected one group with {op}: {[str(g) for g in groups]}"
    return found[0]


def test_parser_builds_the_expression_tree() -> None:
    tree = parse("matmul(A,relu(B))+softmax(C)")
    assert isinstance(tree, Expression)
    body = tree.body
    assert isinstance(body, BinOp) and body.op == "+"
    assert isinstance(body.lhs, Call) and body.lhs.func == "matmul"
    inner = body.lhs.args[1]
    assert isinstance(inner, Call) and inner.func == "relu"
    assert isinstance(inner.args[0], Name) and inner.args[0].id == "B"
    assert isinstance(body.rhs, Call) and body.rhs.func == "softmax"
    # precedence: * binds tighter than +, @ like *
    tree = parse("A + B * C @ D")
    assert isinstance(tree, Expression) and isinstance(tree.body, BinOp)
    assert tree.body.op == "+" and isinstance(tree.body.rhs, BinOp) and tree.body.rhs.op == "@"


def test_ssa_lowering_infers_matmul_shapes() -> None:
    fn = JITTensorKernel().compile(
        "matmul(A, relu(B)) @ C", {"A": (8, 16), "B": (16, 4), "C": (4, 2)}
    )
    text = fn.ir["tensordsl"]
    assert re.search(r"tensordsl\.relu %\w+ : tensor<16x4xf64>", text)
    assert "-> tensor<8x4xf64>" in text and "-> tensor<8x2xf64>" in text
    assert fn.results[0][0] == (8, 2)
    # SSA: every value defined once
    defs = re.findall(r"^\s*(%\w+) = ", text, flags=re.M)
    assert len(defs) == len(set(defs)) >= 3
    vec = JITTensorKernel().compile("v @ M", {"v": (16,), "M": (16, 8)})
    assert vec.results[0][0] == (8,)


def test_elementwise_chain_fuses_into_one_group() -> None:
    fn = JITTensorKernel().compile("relu(A)+B*C-D", dict.fromkeys("ABCD", (64, 64)))
    assert len(fn.groups) == 1
    ops = fn.groups[0].ops
    for op in ("relu", "mul", "add", "sub"):
        assert f"tensordsl.{op}" in ops
    assert fn.groups[0].outputs == ("f64[64, 64]",)


def test_matmul_is_a_boundary_for_its_right_operand() -> None:
    fn = JITTensorKernel().compile(
        "matmul(A,relu(B))+softmax(C)", {"A": (8, 16), "B": (16, 8), "C": (8, 8)}
    )
    relu = group_with(fn.groups, "relu")
    matmul = group_with(fn.groups, "matmul")
    assert relu is not matmul
    # the relu result is materialized and read by the matmul's group
    assert "f64[16, 8]" in relu.outputs and "f64[16, 8]" in matmul.inputs


def test_softmax_fuses_with_its_consumers() -> None:
    fn = JITTensorKernel().compile("softmax(C) + A * 2", {"A": (32, 10), "C": (32, 10)})
    assert len(fn.groups) == 1
    assert {"tensordsl.softmax", "tensordsl.add", "tensordsl.mul"} <= set(fn.groups[0].ops)
    mixed = JITTensorKernel().compile(
        "matmul(A,relu(B))+softmax(C)", {"A": (8, 16), "B": (16, 8), "C": (8, 8)}
    )
    assert group_with(mixed.groups, "softmax") is group_with(mixed.groups, "add")


def test_budget_bounds_scratch_and_controls_splitting() -> None:
    expr = "softmax(A) * B + relu(A)"
    shapes = {"A": (64, 200), "B": (64, 200)}
    counts: dict[int, int] = {}
    tiles: dict[int, int] = {}
    for budget in (250, 2_000, 20_000, 10**6):
        fn = JITTensorKernel(memory_budget=budget).compile(expr, shapes)
        counts[budget] = len(fn.groups)
        tiles[budget] = min(g.tiles[0] for g in fn.groups if g.tiles)
        for g in fn.groups:
            assert g.scratch is not None and g.scratch <= budget, str(g)
    # a smaller budget never gives larger tiles, and never splits the group: rows longer
    # than the budget run in passes over tiles of the row
    budgets = sorted(counts)
    assert all(tiles[a] <= tiles[b] for a, b in itertools.pairwise(budgets))
    assert set(counts.values()) == {1}


def test_rows_longer_than_the_budget_are_computed() -> None:
    def softmax(x: np.ndarray) -> np.ndarray:
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    jit = JITTensorKernel(memory_budget=64)
    # the softmax reads its input whole rows at a time, in place in the output
    one = jit.compile("softmax(A * 2)", {"A": (4, 10_000)})
    (group,) = one.groups
    assert group.scratch == 4  # the row statistics
    # two softmaxes need a row buffer: they run decomposed, in passes over the row
    two = jit.compile("softmax(A * 2) + softmax(A)", {"A": (4, 10_000)})
    (group,) = two.groups
    assert group.scratch is not None and group.scratch <= 64
    assert "tensordsl.softmax" not in group.ops
    a = np.random.default_rng(3).standard_normal((4, 10_000))
    np.testing.assert_allclose(one(A=a), softmax(2 * a), rtol=1e-12)
    np.testing.assert_allclose(two(A=a), softmax(2 * a) + softmax(a), rtol=1e-12)


def test_large_dims_are_tiled_and_small_ones_are_not() -> None:
    big = JITTensorKernel(memory_budget=1_000_000).compile(
        "relu(A)+B", {"A": (4096, 4096), "B": (4096, 4096)}, "f32"
    )
    (group,) = big.groups
    # no intermediate: one tile in the IR, which the target cuts into cache-sized blocks
    assert group.space == (4096, 4096) and group.scratch == 0
    assert "cache blocking: d0 cut to" in big.source
    small = JITTensorKernel(memory_budget=1_000_000).compile(
        "relu(A)+B", {"A": (8, 8), "B": (8, 8)}, "f32"
    )
    (group,) = small.groups
    assert group.tiles == group.space and group.num_tiles == 1


def test_generated_code_is_valid_python() -> None:
    for expr, shapes in [
        ("relu(A)+B*C-D", dict.fromkeys("ABCD", (300, 70))),
        ("matmul(A,relu(B))+softmax(C)", {"A": (8, 16), "B": (16, 8), "C": (8, 8)}),
        ("sum(exp(A)*B, axis=1)", {"A": (50, 30), "B": (50, 30)}),
    ]:
        for threads in (1, 2):
            fn = JITTensorKernel(memory_budget=256, threads=threads).compile(expr, shapes)
            builtins.compile(fn.source, "<tdsl>", "exec")
            tree = ast.parse(fn.source)
            assert any(
                isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body
            )


@pytest.mark.parametrize("budget", [64, 4096, 1_000_000])
def test_end_to_end(budget: int, rng: np.random.Generator, matches: Any) -> None:
    jit = JITTensorKernel(memory_budget=budget)
    A = rng.standard_normal((8, 16))
    B = rng.standard_normal((16, 8))
    C = rng.standard_normal((8, 8))
    matches(jit("relu(A)", A=A), np.maximum(A, 0))
    matches(jit("matmul(A, B)", A=A, B=B), A @ B)
    matches(jit("softmax(C)", C=C), softmax(C))
    matches(jit("matmul(A,relu(B))+softmax(C)", A=A, B=B, C=C), A @ np.maximum(B, 0) + softmax(C))


def test_empty_tensors(matches: Any) -> None:
    jit = JITTensorKernel(memory_budget=64)
    a = np.ones((0, 5))
    b = np.ones((0, 5))
    matches(jit("relu(A)+B", A=a, B=b), np.maximum(a, 0) + b)
    matches(jit("softmax(A)", A=a), softmax(a))
    matches(jit("sum(A, axis=1)", A=a), a.sum(axis=1))
    matches(jit("sum(A, axis=0)", A=a), a.sum(axis=0))
    matches(jit("A @ W", A=a, W=np.ones((5, 3))), a @ np.ones((5, 3)))


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("broadcast_to(x, (0,))", lambda x: np.broadcast_to(x, (0,))),
        ("exp(broadcast_to(x, (0,)))", lambda x: np.exp(np.broadcast_to(x, (0,)))),
        ("sum(broadcast_to(x, (0,)))", lambda x: np.sum(np.broadcast_to(x, (0,)))),
        ("broadcast_to(x, (0, 3)) + 1", lambda x: np.broadcast_to(x, (0, 3)) + 1),
        ("sum(broadcast_to(x, (2, 0)), axis=1)", lambda x: np.broadcast_to(x, (2, 0)).sum(1)),
        (
            "broadcast_to(concatenate((broadcast_to(x, (0,)), y), axis=0), (1,))",
            lambda x: np.concatenate((np.broadcast_to(x, (0,)), 2 * x)),
        ),
    ],
)
def test_a_broadcast_to_zero_elements(expr: str, expected: Any, matches: Any) -> None:
    # an empty constant broadcasts an operand to extent 0: it is a group input (its dims
    # run along the group's), not cloned into the group as a one-element constant is
    x = np.ones(1, np.float32)
    y = 2 * x
    inputs = {"x": x, "y": y} if "y" in expr else {"x": x}
    matches(JITTensorKernel(memory_budget=64)(expr, **inputs), expected(x))


def test_one_dimensional_tensors(rng: np.random.Generator, matches: Any) -> None:
    jit = JITTensorKernel(memory_budget=64)
    a, b = rng.standard_normal(100), rng.standard_normal(100)
    matches(jit("relu(a)+b", a=a, b=b), np.maximum(a, 0) + b)
    # softmax needs its whole (only) axis in one tile
    matches(JITTensorKernel(memory_budget=1000)("softmax(a)", a=a), softmax(a))
    matches(jit("sum(a*b)", a=a, b=b), np.sum(a * b))
    m = rng.standard_normal((100, 7))
    matches(jit("a @ m", a=a, m=m), a @ m)


def test_same_expression_recompiled_for_new_shapes(rng: np.random.Generator, matches: Any) -> None:
    jit = JITTensorKernel()
    for shape in [(4, 4), (7, 3), (1, 9), (4, 4)]:
        a, b = rng.standard_normal(shape), rng.standard_normal(shape)
        matches(jit("relu(A)-B", A=a, B=b), np.maximum(a, 0) - b)
    info = jit.cache_info()
    assert info.misses == 3 and info.currsize == 3 and info.hits == 1


def test_subtraction_is_a_real_sub(rng: np.random.Generator, matches: Any) -> None:
    fn = JITTensorKernel().compile("A - B - C", dict.fromkeys("ABC", (5,)))
    text = fn.ir["tensordsl"]
    assert text.count("tensordsl.sub") == 2 and "tensordsl.neg" not in text
    a, b, c = (rng.standard_normal(5) for _ in range(3))
    matches(fn(A=a, B=b, C=c), a - b - c)  # left-associative


def test_dtype_promotion(rng: np.random.Generator, matches: Any) -> None:
    jit = JITTensorKernel()
    a32 = rng.standard_normal((3, 4)).astype(np.float32)
    b64 = rng.standard_normal((3, 4))
    out = jit("A + B", A=a32, B=b64)
    assert out.dtype == np.float64
    matches(out, a32 + b64)
    out = jit("A * 2 + 1.5", A=a32)
    assert out.dtype == np.float32  # a literal keeps float32
    matches(out, a32 * 2 + 1.5)
    out = jit("relu(A) * B", A=a32.astype(np.float16), B=a32)
    matches(out, np.maximum(a32.astype(np.float16), 0) * a32)


@ONE_DEFAULT_TARGET
def test_auto_keeps_matmuls_that_would_run_as_loops_on_the_numpy_target() -> None:
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    # (an f32 matmul the loops would compute, where the numpy target calls BLAS, runs on
    # the numpy target: test_loops_plan.py's test_a_matmul_taken_from_blas_runs_as_loops)
    # f16 matmuls: loops on both targets (NumPy's float16 matmul calls no BLAS either,
    # and is slower than the native loops), so auto keeps native code and says why
    shapes = {"x": (256, 64), "w": (64, 128), "v": (128, 32), "b": (128,)}
    two = "relu(x @ w + b) @ v"
    auto = JITTensorKernel(target="auto").compile(two, shapes, "f16")
    assert auto.target == "native", auto.target_reason
    assert (
        "BLAS computes 0 of its 2 matmuls; 2 float16 or integer matmuls run as compiled "
        "loops (NumPy has no BLAS for them either); and" in (auto.target_reason or "")
    )
    assert "tdsl_matmul" not in auto.ir["loops"] and "tdsl_gemm" not in auto.ir["loops"]
    # in f32 the second matmul reads relu(x @ w + b), computed in its group: BLAS
    # computes both a tile of rows at a time, and auto runs native code
    chained = JITTensorKernel(target="auto").compile(two, shapes, "f32")
    assert chained.target == "native", chained.target_reason
    assert "BLAS computes 2 of its 2 matmuls, and its loops" in (chained.target_reason or "")
    assert chained.ir["loops"].count("func.call @tdsl_gemm_f32_") == 2
    # one matmul on inputs with an element-wise epilogue: a BLAS call, native code
    del shapes["v"]
    one = JITTensorKernel(target="auto").compile("relu(x @ w + b)", shapes, "f32")
    assert one.target == "native"
    assert re.fullmatch(
        r"auto: native code runs here, the cost model \(tdsl.jit.cost_model\) predicts "
        r"[0-9.]+ [um]s a call natively against [0-9.]+ [um]s on the numpy target, BLAS "
        r"computes 1 of its 1 matmul, and its loops keep the memory budget",
        one.target_reason or "",
    ), one.target_reason
    assert one.ir["loops"].count("func.call @tdsl_matmul_f32_256x64x128") == 1
    # an f32 matmul widened to an f64 result: BLAS a tile at a time, into f32 scratch
    widened = JITTensorKernel(target="auto").compile(
        "s + relu(x @ w + b)", {**shapes, "s": ()}, {"x": "f32", "w": "f32", "b": "f32", "s": "f64"}
    )
    assert widened.target == "native", widened.target_reason
    assert widened.ir["loops"].count("func.call @tdsl_gemm_f32_") == 1


def test_a_pass_that_changes_a_result_type_is_an_internal_error_at_the_return() -> None:
    """The JIT checks after every pass that each function returns what its signature says
    (a whole-module verify would cost as much as some passes)."""
    from xdsl.dialects import func

    from tdsl.errors import TdslIRError
    from tdsl.frontend import to_tensordsl
    from tdsl.jit.stages import check_results

    module = to_tensordsl("reshape(z + 1, (1, 1))", shapes={"z": ()}, dtypes={"z": "f32"})
    check_results(module, "tdsl-fuse")  # as built
    ret = next(op for op in module.walk() if isinstance(op, func.ReturnOp))
    reshape = ret.arguments[0].owner
    ret.operands = [reshape.operands[0]]  # what a wrong rewrite left: the 0-d sum
    with pytest.raises(TdslIRError) as caught:
        check_results(module, "tdsl-fuse")
    assert caught.value.message == (
        "internal error: tdsl-fuse: @main returns (tensor<f32>) where its signature says "
        "(tensor<1x1xf32>)"
    )
    assert caught.value.op is ret  # a driver places it where the return was
