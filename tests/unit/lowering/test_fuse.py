"""tdsl-fuse: grouping rules, the rewritten IR, the budget and the report."""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, FileLineColLoc, ModuleOp
from xdsl.dialects.func import Func, FuncOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.passes import PassPipeline

from tdsl.dialects import tensordsl as td
from tdsl.dialects.kernel import FusedOp, Kernel
from tdsl.dialects.structured import IteratorType
from tdsl.errors import TdslBudgetWarning, TdslOptionError
from tdsl.transforms.fuse import FusePass, explain_fusion, fuse, fusion_report
from tdsl.transforms.fusion_analysis import groupable, plan_function

P, R, N = IteratorType.PARALLEL, IteratorType.REDUCTION, IteratorType.NORMALIZE
RHS = "tensordsl.matmul operand 1 must be materialized (it is read whole from memory)"

Array = np.ndarray[Any, Any]


def parse(text: str, name: str = "test.mlir") -> ModuleOp:
    ctx = Context()
    for dialect in (Builtin, Func, td.TensorDSL, Kernel):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text, name).parse_module()
    module.verify()
    return module


def groups(module: ModuleOp) -> list[FusedOp]:
    return [op for op in module.walk() if isinstance(op, FusedOp)]


def group_ops(module: ModuleOp) -> list[list[str]]:
    """The op names inside each fused group, constants left out."""
    return [
        [o.name.removeprefix("tensordsl.") for o in g.body.block.ops][:-1] for g in groups(module)
    ]


def compute_ops(module: ModuleOp) -> list[list[str]]:
    return [[n for n in names if n != "constant"] for names in group_ops(module)]


def run(module: ModuleOp, *arrays: Array) -> tuple[Array, ...]:
    from tdsl.interpreters.run import run_function

    return run_function(module, "main", *arrays)


def randn(rng: np.random.Generator, *shape: int) -> Array:
    return rng.standard_normal(shape).astype(np.float32)


def softmax(x: Array) -> Array:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


DESIGN = parse(
    """
func.func @main(%A: tensor<8x16xf32>, %B: tensor<16x8xf32>, %C: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = tensordsl.relu %B : tensor<16x8xf32> loc("design.tdsl":1:11)
  %1 = tensordsl.matmul %A, %0 : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32> loc("design.tdsl":1:1)
  %2 = tensordsl.softmax %C : tensor<8x8xf32> loc("design.tdsl":1:21)
  %3 = tensordsl.add %1, %2 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> loc("design.tdsl":1:19)
  func.return %3 : tensor<8x8xf32>
}
"""
)


# ---------------------------------------------------------------------------
# The DESIGN.md examples
# ---------------------------------------------------------------------------


def test_design_example_groups_and_values() -> None:
    fused = fuse(DESIGN)
    fused.verify()
    assert compute_ops(fused) == [["relu"], ["matmul", "softmax", "add"]]
    g0, g1 = groups(fused)
    assert (g0.group and g0.group.data, g1.group and g1.group.data) == ("g0", "g1")
    assert g0.budget_value == g1.budget_value == 1_000_000
    assert g1.inputs[1] is g0.outputs[0], "relu(B) is materialized and read by g1"
    rng = np.random.default_rng(0)
    a, b, c = randn(rng, 8, 16), randn(rng, 16, 8), randn(rng, 8, 8)
    (got,) = run(fused, a, b, c)
    np.testing.assert_allclose(got, a @ np.maximum(b, 0) + softmax(c), rtol=1e-5, atol=1e-5)


def test_design_example_report_explains_the_rhs_boundary() -> None:
    report = fusion_report(DESIGN)
    assert [[op.name for op in g.ops] for g in report.groups] == [
        ["tensordsl.relu"],
        ["tensordsl.matmul", "tensordsl.softmax", "tensordsl.add"],
    ]
    (edge,) = report.unfused
    assert edge.producer.name == "tensordsl.relu"
    assert edge.consumer.name == "tensordsl.matmul"
    assert edge.operand == 1
    assert (edge.producer_group, edge.consumer_group) == ("g0", "g1")
    assert edge.reason == RHS
    assert report.materialized == (edge.value,)
    g1 = report.group("g1")
    assert [str(v.type) for v in g1.inputs] == [
        "tensor<8x16xf32>",
        "tensor<16x8xf32>",
        "tensor<8x8xf32>",
    ]
    assert g1.results == (report.groups[1].ops[-1].results[0],)
    # rows, the contraction, and the columns softmax normalizes along (whole)
    assert g1.space.extents == (8, 16, 8) and g1.space.kinds == (P, R, N)


def test_mlp_epilogue_is_one_group() -> None:
    module = parse(
        """
func.func @main(%x: tensor<6x5xf32>, %w: tensor<5x7xf32>, %b: tensor<7xf32>) -> tensor<6x7xf32> {
  %0 = tensordsl.matmul %x, %w : (tensor<6x5xf32>, tensor<5x7xf32>) -> tensor<6x7xf32>
  %1 = tensordsl.add %0, %b : (tensor<6x7xf32>, tensor<7xf32>) -> tensor<6x7xf32>
  %2 = tensordsl.relu %1 : tensor<6x7xf32>
  func.return %2 : tensor<6x7xf32>
}
"""
    )
    fused = fuse(module)
    assert compute_ops(fused) == [["matmul", "add", "relu"]]
    rng = np.random.default_rng(1)
    x, w, b = randn(rng, 6, 5), randn(rng, 5, 7), randn(rng, 7)
    (got,) = run(fused, x, w, b)
    np.testing.assert_allclose(got, np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)


def test_row_reduction_is_one_group() -> None:
    module = parse(
        """
func.func @main(%A: tensor<4x8xf32>, %B: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = tensordsl.exp %A : tensor<4x8xf32>
  %1 = tensordsl.mul %0, %B : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = tensordsl.sum %1 axis = 1 : tensor<4x8xf32> -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
"""
    )
    fused = fuse(module)
    assert compute_ops(fused) == [["exp", "mul", "sum"]]
    report = fusion_report(module)
    assert report.groups[0].space.extents == (4, 8)
    assert report.groups[0].space.kinds == (P, R), "rows parallel, the summed dim a reduction"
    rng = np.random.default_rng(2)
    a, b = randn(rng, 4, 8), randn(rng, 4, 8)
    (got,) = run(fused, a, b)
    np.testing.assert_allclose(got, (np.exp(a) * b).sum(axis=1), rtol=1e-5)


def test_silu_clones_the_literal_into_the_group() -> None:
    module = parse(
        """
func.func @main(%A: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.neg %A : tensor<4x8xf32>
  %1 = tensordsl.exp %0 : tensor<4x8xf32>
  %c = tensordsl.constant dense<1.0> : tensor<f32>
  %2 = tensordsl.add %c, %1 : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = tensordsl.div %A, %2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %3 : tensor<4x8xf32>
}
"""
    )
    fused = fuse(module)
    assert group_ops(fused) == [["constant", "neg", "exp", "add", "div"]]
    (g,) = groups(fused)
    assert len(g.inputs) == 1, "the literal is cloned, not passed in"
    main = fused.body.block.first_op
    assert isinstance(main, FuncOp)
    assert [op.name for op in main.body.block.ops] == ["kernel.fused", "func.return"]
    a = randn(np.random.default_rng(3), 4, 8)
    (got,) = run(fused, a)
    np.testing.assert_allclose(got, a / (1 + np.exp(-a)), rtol=1e-6)


# ---------------------------------------------------------------------------
# Reductions, transposes and softmax along any axis fuse
# ---------------------------------------------------------------------------

ANY_AXIS = parse(
    """
func.func @main(%A: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<8x4xf32>, tensor<f32>, tensor<4x8xf32>) {
  %0 = tensordsl.exp %A : tensor<4x8xf32>
  %1 = tensordsl.sum %0 axis = 0 : tensor<4x8xf32> -> tensor<8xf32>
  %2 = tensordsl.relu %1 : tensor<8xf32>
  %3 = tensordsl.transpose %0 : tensor<4x8xf32> -> tensor<8x4xf32>
  %4 = tensordsl.tanh %3 : tensor<8x4xf32>
  %5 = tensordsl.max %0 : tensor<4x8xf32> -> tensor<f32>
  %6 = tensordsl.softmax %0 axis = 0 : tensor<4x8xf32>
  func.return %2, %4, %5, %6 : tensor<8xf32>, tensor<8x4xf32>, tensor<f32>, tensor<4x8xf32>
}
"""
)


def test_reductions_transposes_and_softmax_along_any_axis_fuse() -> None:
    fused = fuse(ANY_AXIS)
    fused.verify()
    assert compute_ops(fused) == [["exp", "sum", "relu", "transpose", "tanh", "max", "softmax"]]
    (g,) = groups(fused)
    assert len(g.outputs) == 4
    report = fusion_report(ANY_AXIS)
    assert report.unfused == () and report.materialized == ()
    assert report.groups[0].space.kinds == (R, R)  # every dim is reduced by some op
    a = randn(np.random.default_rng(4), 4, 8)
    e = np.exp(a)
    s0 = np.exp(e - e.max(axis=0)) / np.exp(e - e.max(axis=0)).sum(axis=0)
    want = (np.maximum(e.sum(axis=0), 0), np.tanh(e.T), e.max(), s0)
    for got, ref in zip(run(fused, a), want, strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-5)


def test_only_structured_ops_are_grouped() -> None:
    ops = [op for op in ANY_AXIS.walk() if op.name.startswith(("tensordsl.", "func."))]
    assert [groupable(op) for op in ops] == [False] + [True] * 7 + [False]


def test_row_local_result_broadcast_along_the_tiled_dim_is_not_fused() -> None:
    module = parse(
        """
func.func @main(%A: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = tensordsl.exp %A : tensor<8x8xf32>
  %1 = tensordsl.sum %0 axis = 1 : tensor<8x8xf32> -> tensor<8xf32>
  %2 = tensordsl.add %0, %1 : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  func.return %2 : tensor<8x8xf32>
}
"""
    )
    fused = fuse(module)
    assert compute_ops(fused) == [["exp", "sum"], ["add"]]
    assert len(groups(fused)[0].outputs) == 2, "exp and sum are both results"
    report = fusion_report(module)
    assert len(report.unfused) == 2
    assert all(
        e.reason.startswith("inconsistent iteration space: two dimensions of a 8x8 value")
        for e in report.unfused
    )
    a = randn(np.random.default_rng(5), 8, 8)
    (got,) = run(fused, a)
    np.testing.assert_allclose(got, np.exp(a) + np.exp(a).sum(axis=1), rtol=1e-5)


def test_keepdims_row_statistics_fuse() -> None:
    module = parse(
        """
func.func @main(%A: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = tensordsl.max %A axis = 1 keepdims : tensor<8x8xf32> -> tensor<8x1xf32>
  %1 = tensordsl.sub %A, %0 : (tensor<8x8xf32>, tensor<8x1xf32>) -> tensor<8x8xf32>
  %2 = tensordsl.exp %1 : tensor<8x8xf32>
  %3 = tensordsl.sum %2 axis = 1 keepdims : tensor<8x8xf32> -> tensor<8x1xf32>
  %4 = tensordsl.div %2, %3 : (tensor<8x8xf32>, tensor<8x1xf32>) -> tensor<8x8xf32>
  func.return %4 : tensor<8x8xf32>
}
"""
    )
    fused = fuse(module)
    assert compute_ops(fused) == [["max", "sub", "exp", "sum", "div"]]
    a = randn(np.random.default_rng(6), 8, 8)
    (got,) = run(fused, a)
    np.testing.assert_allclose(got, softmax(a), rtol=1e-5)


def test_a_broadcast_producer_joins_its_consumer() -> None:
    # exp(v) runs along the columns only: every tile of rows computes it again
    module = parse(
        """
func.func @main(%v: tensor<8xf32>, %M: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %0 = tensordsl.exp %v : tensor<8xf32>
  %1 = tensordsl.add %0, %M : (tensor<8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  func.return %1 : tensor<16x8xf32>
}
"""
    )
    fused = fuse(module)
    assert compute_ops(fused) == [["exp", "add"]]
    assert fusion_report(module).unfused == ()
    rng = np.random.default_rng(6)
    v, m = randn(rng, 8), randn(rng, 16, 8)
    (got,) = run(fused, v, m)
    np.testing.assert_allclose(got, np.exp(v) + m, rtol=1e-6)


def test_a_matmul_is_never_computed_again_by_every_tile() -> None:
    from tdsl.dialects.kernel import TileOp
    from tdsl.transforms.tile import tile

    module = parse(
        """
func.func @main(%v: tensor<8xf32>, %W: tensor<8x6xf32>, %M: tensor<16x6xf32>) -> tensor<16x6xf32> {
  %0 = tensordsl.matmul %v, %W : (tensor<8xf32>, tensor<8x6xf32>) -> tensor<6xf32>
  %1 = tensordsl.add %0, %M : (tensor<6xf32>, tensor<16x6xf32>) -> tensor<16x6xf32>
  %2 = tensordsl.mul %1, %M : (tensor<16x6xf32>, tensor<16x6xf32>) -> tensor<16x6xf32>
  func.return %2 : tensor<16x6xf32>
}
"""
    )
    fused = fuse(module)
    assert compute_ops(fused) == [["matmul", "add", "mul"]]
    # the matmul does not run along the rows of M: they are never tiled
    (t,) = [op for op in tile(fused, memory_budget=8).walk() if isinstance(op, TileOp)]
    assert t.space_value == (16, 6, 8) and t.tiles_value[0] == 16
    with pytest.raises(TdslOptionError, match=r"'tensordsl\.matmul' does not run along d0"):
        tile(fused, tile_sizes=(4, 6, 8))


def test_reducing_rows_fuses_with_the_matmul_reading_them() -> None:
    module = parse(
        """
func.func @main(%A: tensor<8x4xf32>, %W: tensor<8x3xf32>) -> tensor<3xf32> {
  %0 = tensordsl.exp %A : tensor<8x4xf32>
  %1 = tensordsl.sum %0 axis = 1 : tensor<8x4xf32> -> tensor<8xf32>
  %2 = tensordsl.matmul %1, %W : (tensor<8xf32>, tensor<8x3xf32>) -> tensor<3xf32>
  func.return %2 : tensor<3xf32>
}
"""
    )
    fused = fuse(module)
    assert compute_ops(fused) == [["exp", "sum", "matmul"]]
    assert fusion_report(module).unfused == ()
    rng = np.random.default_rng(7)
    a, w = randn(rng, 8, 4), randn(rng, 8, 3)
    (got,) = run(fused, a, w)
    np.testing.assert_allclose(got, np.exp(a).sum(axis=1) @ w, rtol=1e-5)


def test_matmul_row_local_prologue_and_chain_fuse() -> None:
    module = parse(
        """
func.func @main(%x: tensor<4x6xf32>, %w1: tensor<6x5xf32>, %w2: tensor<5x3xf32>) -> tensor<4x3xf32> {
  %0 = tensordsl.softmax %x : tensor<4x6xf32>
  %1 = tensordsl.matmul %0, %w1 : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %2 = tensordsl.tanh %1 : tensor<4x5xf32>
  %3 = tensordsl.matmul %2, %w2 : (tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
  func.return %3 : tensor<4x3xf32>
}
"""
    )
    fused = fuse(module)
    assert compute_ops(fused) == [["softmax", "matmul", "tanh", "matmul"]]
    rng = np.random.default_rng(8)
    x, w1, w2 = randn(rng, 4, 6), randn(rng, 6, 5), randn(rng, 5, 3)
    (got,) = run(fused, x, w1, w2)
    np.testing.assert_allclose(got, np.tanh(softmax(x) @ w1) @ w2, rtol=1e-5, atol=1e-6)


def test_computed_right_operand_stays_materialized_when_merging_groups() -> None:
    # add(matmul(A, relu(B)), relu(B)) must not pull relu(B) into the matmul's group; the add
    # joins the matmul, reading relu(B) (an input of that group) along a second map.
    module = parse(
        """
func.func @main(%A: tensor<4x4xf32>, %B: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = tensordsl.relu %B : tensor<4x4xf32>
  %1 = tensordsl.matmul %A, %0 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = tensordsl.add %1, %0 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %2 : tensor<4x4xf32>
}
"""
    )
    fused = fuse(module)
    assert compute_ops(fused) == [["relu"], ["matmul", "add"]]
    reasons = [e.reason for e in fusion_report(module).unfused]
    assert reasons[0] == RHS
    assert reasons[1].startswith("inconsistent iteration space: two dimensions of a 4x4 value")
    rng = np.random.default_rng(10)
    a, b = randn(rng, 4, 4), randn(rng, 4, 4)
    (got,) = run(fused, a, b)
    np.testing.assert_allclose(got, a @ np.maximum(b, 0) + np.maximum(b, 0), rtol=1e-5)


def test_second_passes_over_a_reduction_fuse() -> None:
    module = parse(
        """
func.func @main(%X: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.exp %X : tensor<4x8xf32>
  %1 = tensordsl.sum %0 axis = 0 : tensor<4x8xf32> -> tensor<8xf32>
  %2 = tensordsl.add %0, %1 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %2 : tensor<4x8xf32>
}
"""
    )
    fused = fuse(module)
    fused.verify()
    assert compute_ops(fused) == [["exp", "sum", "add"]]
    x = randn(np.random.default_rng(11), 4, 8)
    (got,) = run(fused, x)
    np.testing.assert_allclose(got, np.exp(x) + np.exp(x).sum(axis=0), rtol=1e-5)


def test_merging_that_would_make_a_cycle_is_refused() -> None:
    # exp and add cannot be one group: the path exp -> call -> add leaves and comes back
    module = parse(
        """
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
func.func @main(%X: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tensordsl.exp %X : tensor<4xf32>
  %1 = func.call @f(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = tensordsl.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
"""
    )
    fused = fuse(module)
    fused.verify()
    assert compute_ops(fused) == [["exp"], ["add"]]
    (edge,) = fusion_report(module).unfused
    assert edge.reason == (
        "fusing would create a cycle between groups: a path leaves the group through "
        "func.call and comes back"
    )


CALL = "%1 = func.call @f(%0) : (tensor<4x4xf32>) -> tensor<4x4xf32>"
MATMUL = "%2 = tensordsl.matmul %W, %0 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>"


@pytest.mark.parametrize(
    ("first", "second", "exit_op"),
    [(CALL, MATMUL, "func.call"), (MATMUL, CALL, "tensordsl.matmul")],
)
def test_a_cycle_is_named_by_its_first_exit(first: str, second: str, exit_op: str) -> None:
    # two paths leave exp's group and come back to the last add: the reason names
    # the exit that comes first in the program
    module = parse(
        f"""
func.func @f(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {{
  func.return %a : tensor<4x4xf32>
}}
func.func @main(%X: tensor<4x4xf32>, %W: tensor<4x4xf32>) -> tensor<4x4xf32> {{
  %0 = tensordsl.exp %X : tensor<4x4xf32>
  {first}
  {second}
  %3 = tensordsl.add %1, %2 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %4 = tensordsl.add %0, %3 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %4 : tensor<4x4xf32>
}}
"""
    )
    reasons = {(e.consumer.name, e.operand): e.reason for e in fusion_report(module).unfused}
    assert reasons[("tensordsl.matmul", 1)] == RHS
    assert reasons[("tensordsl.add", 0)] == (
        f"fusing would create a cycle between groups: a path leaves the group through "
        f"{exit_op} and comes back"
    )


# ---------------------------------------------------------------------------
# The rewritten IR
# ---------------------------------------------------------------------------


def test_fuse_leaves_its_input_untouched_and_keeps_locations() -> None:
    before = str(DESIGN)
    fused = fuse(DESIGN)
    assert str(DESIGN) == before
    original = {op.name: op.location for op in DESIGN.walk() if op.name.startswith("tensordsl.")}
    moved = {op.name: op.location for op in fused.walk() if op.name.startswith("tensordsl.")}
    assert moved == original
    assert all(isinstance(loc, FileLineColLoc) for loc in moved.values())


def test_fusing_twice_changes_nothing() -> None:
    once = fuse(DESIGN)
    assert str(fuse(once)) == str(once)


def test_dead_ops_are_erased() -> None:
    module = parse(
        """
func.func @main(%A: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tensordsl.exp %A : tensor<4xf32>
  %1 = tensordsl.tanh %0 : tensor<4xf32>
  %2 = tensordsl.relu %A : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
"""
    )
    fused = fuse(module)
    assert compute_ops(fused) == [["relu"]]
    assert "erased: nothing uses the result of tensordsl.exp" in explain_fusion(module)


def test_large_constants_are_group_inputs() -> None:
    module = parse(
        """
func.func @main(%A: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %c = tensordsl.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %0 = tensordsl.mul %A, %c : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}
"""
    )
    fused = fuse(module)
    (g,) = groups(fused)
    assert len(g.inputs) == 2 and isinstance(g.inputs[1].owner, td.ConstantOp)
    a = randn(np.random.default_rng(9), 2, 2)
    (got,) = run(fused, a)
    np.testing.assert_allclose(got, a * np.array([[1, 2], [3, 4]], np.float32))


def test_group_order_follows_dependencies() -> None:
    # %2 joins exp's group, but tanh (%1) uses exp and sits between them:
    # the fused function must still define every value before its use.
    module = parse(
        """
func.func @main(%A: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %0 = tensordsl.exp %A : tensor<4x4xf32>
  %1 = tensordsl.transpose %0 : tensor<4x4xf32> -> tensor<4x4xf32>
  %2 = tensordsl.relu %0 : tensor<4x4xf32>
  %3 = tensordsl.add %1, %2 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %3, %2 : tensor<4x4xf32>, tensor<4x4xf32>
}
"""
    )
    fused = fuse(module)
    fused.verify()
    # exp(A) is needed both by rows and transposed by one group: add starts another
    assert compute_ops(fused) == [["exp", "transpose", "relu"], ["add"]]
    names = [g.group.data for g in groups(fused) if g.group is not None]
    assert names == ["g0", "g1"]


# ---------------------------------------------------------------------------
# The memory budget
# ---------------------------------------------------------------------------

PROLOGUE = parse(
    """
func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %0 = tensordsl.softmax %x : tensor<8x16xf32>
  %1 = tensordsl.matmul %0, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %2 = tensordsl.tanh %1 : tensor<8x32xf32>
  func.return %2 : tensor<8x32xf32>
}
"""
)


def test_budget_is_recorded_and_bounds_fusion() -> None:
    big = fuse(PROLOGUE, memory_budget=4096)
    assert compute_ops(big) == [["softmax", "matmul", "tanh"]]
    assert [g.budget_value for g in groups(big)] == [4096]
    # its smallest tile with whole softmax rows: a row of 16 (the matmul's left operand)
    # and the row maximum
    assert fusion_report(PROLOGUE, memory_budget=4096).groups[0].min_scratch == 17
    # under a budget that a row does not fit, the softmax runs decomposed over tiles of
    # its rows, and the matmul accumulates over tiles of its contraction
    assert fusion_report(PROLOGUE, memory_budget=8).groups[0].min_scratch == 5
    # at budget 4 the greedy plan cuts after the matmul, holding its 8x8 result whole:
    # 64 elements materialized, more than the one group's 5 of scratch.  No plan fits
    # 4, so the plan of least memory runs (the one group), with a warning
    (main,) = [op for op in PROLOGUE.walk() if isinstance(op, FuncOp)]
    (greedy,) = plan_function(main, 4)
    assert [[op.name for op in g.ops] for g in greedy.groups] == [
        ["tensordsl.softmax", "tensordsl.matmul"],
        ["tensordsl.tanh"],
    ]
    (edge,) = greedy.unfused
    assert edge.reason == (
        "the fused group would need 5 elements of scratch at its smallest tile, over the "
        "memory budget of 4"
    )
    with pytest.warns(TdslBudgetWarning, match=r"fits the memory budget of 4 elements.*needs 5"):
        small = fuse(PROLOGUE, memory_budget=4)
    assert compute_ops(small) == [["softmax", "matmul", "tanh"]]
    assert [(g.budget_value, g.scratch_value) for g in groups(small)] == [(4, 5)]
    report = fusion_report(PROLOGUE, memory_budget=4)
    assert not report.fits
    memory = report.function_memory("main")
    assert memory is not None
    assert (memory.need, memory.scratch, memory.materialized) == (5, 5, 0)
    assert "no plan fits the memory budget of 4: the plan of least memory runs" in str(report)


def test_pass_option_from_a_pipeline_spec() -> None:
    module = PROLOGUE.clone()
    pipeline = PassPipeline.parse_spec(
        {"tdsl-fuse": lambda: FusePass}, "tdsl-fuse{memory-budget=64}"
    )
    pipeline.apply(Context(), module)
    assert [g.budget_value for g in groups(module)] == [64]


@pytest.mark.parametrize("budget", [0, -5])
def test_nonpositive_budget_is_an_option_error(budget: int) -> None:
    with pytest.raises(TdslOptionError, match="memory-budget must be a positive"):
        fuse(PROLOGUE, memory_budget=budget)


# ---------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------


def test_explain_fusion_uses_source_locations() -> None:
    text = explain_fusion(DESIGN)
    lines = text.splitlines()
    assert lines[0].startswith("design.tdsl:1:11: remark: group g0 in @main: 1 op (tensordsl.relu)")
    assert lines[1].startswith(
        "design.tdsl:1:19: remark: group g1 in @main: 3 ops "
        "(tensordsl.matmul, tensordsl.softmax, tensordsl.add)"
    )
    assert lines[1].endswith(
        "over 8x16x8 (d0 parallel, d1 reduction, d2 normalize); inputs: %A, %0, %C; results: %3; "
        "smallest tile scratch: 9 elements; tiles [8, 16, 8] with 72 elements of scratch"
    )
    assert lines[2] == (
        "design.tdsl:1:1: remark: not fused: %0 (tensordsl.relu, group g0) -> operand 1 of "
        f"tensordsl.matmul (group g1): {RHS}"
    )
    assert lines[3] == (
        "remark: @main: 2 fusion groups; materialized between groups: "
        f"%0 (tensor<16x8xf32>, 128 elements): {RHS}"
    )


def test_explain_fusion_without_locations_names_ssa_values() -> None:
    text = explain_fusion(PROLOGUE, memory_budget=4)
    # (no plan fits 4 elements: the one group of least memory runs, and the report says so)
    assert "%2 = tensordsl.tanh: remark: group g0 in @main" in text
    assert "remark: @main: 1 fusion group; nothing materialized between groups; no plan " in text
    assert "fits the memory budget of 4: the plan of least memory runs, and it needs 5" in text


def test_explain_fusion_takes_a_locator() -> None:
    def locate(op: Operation) -> Any:
        from tdsl.errors import SourceLocation

        return SourceLocation("in.mlir", 7, 3, 4, "  abcdefg")

    text = explain_fusion(PROLOGUE, locate=locate)
    assert text.startswith("in.mlir:7:3: remark: group g0")
    assert "\n  abcdefg\n  ^^^^\n" in text


def test_report_on_fused_ir_matches_the_plan() -> None:
    for module, budget in ((DESIGN, None), (ANY_AXIS, None), (PROLOGUE, 4)):
        direct = fusion_report(module, memory_budget=budget)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TdslBudgetWarning)  # (budget 4: no plan fits)
            fused = fuse(module, memory_budget=budget or 1_000_000)
        again = fusion_report(fused)
        assert again.memory_budget == direct.memory_budget
        assert [[o.name for o in g.ops] for g in again.groups] == [
            [o.name for o in g.ops] for g in direct.groups
        ]
        assert [e.reason for e in again.unfused] == [e.reason for e in direct.unfused]
        assert explain_fusion(fused) == explain_fusion(module, memory_budget=budget)


def test_report_does_not_change_the_module() -> None:
    before = str(DESIGN)
    fusion_report(DESIGN)
    explain_fusion(DESIGN)
    assert str(DESIGN) == before


def test_the_space_of_the_design_group() -> None:
    from tdsl.transforms.iteration_space import analyze

    main = DESIGN.body.block.first_op
    assert isinstance(main, FuncOp)
    ops = [op for op in main.body.block.ops if op.name != "func.return"]
    body = analyze(ops[1:], [ops[-1].results[0]])
    assert not isinstance(body, str) and hasattr(body, "extents")
    assert body.extents == (8, 16, 8)  # type: ignore[union-attr]
    assert body.kinds == (P, R, N)  # type: ignore[union-attr]
    assert body.dims[ops[1].results[0]] == (0, 2)  # type: ignore[union-attr]


def test_values_used_in_another_block_are_group_results() -> None:
    from xdsl.dialects.cf import Cf

    ctx = Context()
    for dialect in (Builtin, Func, Cf, td.TensorDSL, Kernel):
        ctx.load_dialect(dialect)
    module = Parser(
        ctx,
        """
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tensordsl.exp %a : tensor<4xf32>
  cf.br ^bb1
^bb1:
  %1 = tensordsl.relu %0 : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
""",
    ).parse_module()
    fused = fuse(module)
    fused.verify()
    first, second = groups(fused)
    assert (first.group and first.group.data, second.group and second.group.data) == ("g0", "g1")
    assert len(first.outputs) == 1
    assert second.inputs[0] is first.outputs[0]


def test_zero_size_and_scalar_tensors_fuse() -> None:
    module = parse(
        """
func.func @main(%z: tensor<0x3xf32>, %s: tensor<f32>) -> (tensor<0x3xf32>, tensor<f32>) {
  %0 = tensordsl.exp %z : tensor<0x3xf32>
  %1 = tensordsl.mul %0, %s : (tensor<0x3xf32>, tensor<f32>) -> tensor<0x3xf32>
  %2 = tensordsl.neg %s : tensor<f32>
  %3 = tensordsl.exp %2 : tensor<f32>
  func.return %1, %3 : tensor<0x3xf32>, tensor<f32>
}
"""
    )
    fused = fuse(module)
    fused.verify()
    assert compute_ops(fused) == [["exp", "mul"], ["neg", "exp"]]
    z, s = np.zeros((0, 3), np.float32), np.array(0.5, np.float32)
    got = run(fused, z, s)
    assert got[0].shape == (0, 3)
    np.testing.assert_allclose(got[1], np.exp(-s))


def test_analysis_rejects_what_the_planner_rejects() -> None:
    from tdsl.transforms.iteration_space import Inconsistent, analyze

    module = parse(
        """
func.func @main(%A: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = tensordsl.exp %A : tensor<8x8xf32>
  %1 = tensordsl.sum %0 axis = 1 : tensor<8x8xf32> -> tensor<8xf32>
  %2 = tensordsl.add %0, %1 : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  func.return %2 : tensor<8x8xf32>
}
"""
    )
    main = module.body.block.first_op
    assert isinstance(main, FuncOp)
    exp, total, add, _ = main.body.block.ops
    found = analyze([exp, total, add], [add.results[0]])
    assert isinstance(found, Inconsistent)
    assert found.reason.startswith("inconsistent iteration space: two dimensions of a 8x8 value")


PLANNED = {
    "softmax-matmul": ("tanh(softmax(A) @ B)", {"A": (40, 300), "B": (300, 30)}),
    "attention": (
        "softmax(q @ transpose(k) * 0.125 + m) @ v",
        {"q": (64, 16), "k": (64, 16), "m": (64, 64), "v": (64, 16)},
    ),
    "mlp": (
        "x + tanh(layernorm(x) @ w1 + b1) @ w2",
        {"x": (32, 48), "w1": (48, 192), "b1": (192,), "w2": (192, 48)},
    ),
    "chain": ("(A @ B) @ C", {"A": (30, 40), "B": (40, 50), "C": (50, 20)}),
}
"""Programs whose plans the budget shapes at small budgets (reductions, scans and
element-wise chains tile down to a few elements: no budget refuses their merges)."""


@pytest.mark.parametrize("name", sorted(PLANNED))
def test_a_plan_the_budget_did_not_shape_is_the_plan_of_every_larger_budget(name: str) -> None:
    """The search for the plan of least memory (``choose_plans``) stops at the first
    budget whose plan the budget refused no merge of (``BlockPlan.budget_refused``): every
    larger budget plans the same groups.  The flag is set exactly when an unfused edge
    says the budget refused it."""
    from tdsl.frontend import to_tensordsl

    source, shapes = PLANNED[name]
    (main,) = [op for op in to_tensordsl(source, shapes).walk() if isinstance(op, FuncOp)]

    def partition(budget: int) -> tuple[list[list[int]], bool]:
        plans = plan_function(main, budget)
        refused = any(p.budget_refused for p in plans)
        said = any("over the memory budget" in e.reason for p in plans for e in p.unfused)
        assert refused == said
        return [[id(op) for op in g.ops] for p in plans for g in p.groups], refused

    budgets = [4**k for k in range(1, 12)]
    plans = [partition(b) for b in budgets]
    assert plans[0][1], "the smallest budget shapes the plan"
    assert not plans[-1][1], "the largest does not"
    for (groups, refused), later in itertools.pairwise(plans):
        if not refused:
            assert later == (groups, False)
