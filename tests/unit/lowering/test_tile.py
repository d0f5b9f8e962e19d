"""Unit tests of the ``tdsl-tile`` pass: spaces, maps, tile sizes, passes, splitting, errors, scratch."""

from __future__ import annotations

import io
from typing import ClassVar

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.parser import Parser
from xdsl.printer import Printer

from tdsl.defaults import DEFAULT_MEMORY_BUDGET
from tdsl.dialects.kernel import FusedOp, Kernel, TileOp
from tdsl.dialects.kernel_plan import plan_scratch
from tdsl.dialects.structured import IteratorType
from tdsl.dialects.tensordsl import ConstantOp, TensorDSL, tensor_shape
from tdsl.errors import TdslBudgetError, TdslOptionError
from tdsl.interpreters.run import run_function
from tdsl.transforms.tile import TilePass, tile

P, R = IteratorType.PARALLEL, IteratorType.REDUCTION


def context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, TensorDSL, Kernel):
        ctx.load_dialect(dialect)
    return ctx


def parse(text: str) -> ModuleOp:
    module = Parser(context(), text, "test.mlir").parse_module()
    module.verify()
    return module


def show(module: ModuleOp, generic: bool = False) -> str:
    stream = io.StringIO()
    Printer(stream=stream, print_generic_format=generic).print_op(module)
    return stream.getvalue()


def tiles_of(module: ModuleOp) -> list[TileOp]:
    return [op for op in module.walk() if isinstance(op, TileOp)]


def only_tile(module: ModuleOp) -> TileOp:
    (found,) = tiles_of(module)
    return found


def body_names(op: TileOp) -> list[str]:
    return [o.name for o in op.body.block.ops]


def two_way(n: int = 100, m: int = 100, budget: str = "budget 1000", dtype: str = "f32") -> str:
    """``(A + B) * (A - B)`` on n x m: one intermediate row (the other goes to the output)."""
    t = f"tensor<{n}x{m}x{dtype}>"
    return f"""
func.func @main(%a: {t}, %b: {t}) -> {t} {{
  %r = kernel.fused(%a, %b) group "g0" {budget} : ({t}, {t}) -> {t} {{
  ^bb0(%x: {t}, %y: {t}):
    %0 = tensordsl.add %x, %y : ({t}, {t}) -> {t}
    %1 = tensordsl.sub %x, %y : ({t}, {t}) -> {t}
    %2 = tensordsl.mul %0, %1 : ({t}, {t}) -> {t}
    kernel.yield %2 : {t}
  }}
  func.return %r : {t}
}}
"""


def check_numbers(module: ModuleOp, tiled: ModuleOp, seed: int = 0) -> None:
    """The tiled module computes what the fused one computes (both interpreted)."""
    fn = next(op for op in module.walk() if op.name == "func.func")
    rng = np.random.default_rng(seed)
    args = [
        rng.uniform(-2, 2, size=tensor_shape(a)).astype(np.float32)
        for a in fn.regions[0].block.args
    ]
    want = run_function(module, "main", *args)
    got = run_function(tiled, "main", *args)
    # a tile of the contraction adds a dot product in another order: in f32 over
    # k = 128 terms of size up to 4 that moves a result near zero by up to about
    # k * eps * 4 = 6e-5 (2e-5 seen), so the absolute tolerance is 1e-4
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


MLP = """
func.func @main(%x: tensor<512x128xf32>, %w: tensor<128x256xf32>, %b: tensor<256xf32>) -> tensor<512x256xf32> {
  %y = kernel.fused(%x, %w, %b) group "g0" budget 100000 : (tensor<512x128xf32>, tensor<128x256xf32>, tensor<256xf32>) -> tensor<512x256xf32> {
  ^bb0(%x1: tensor<512x128xf32>, %w1: tensor<128x256xf32>, %b1: tensor<256xf32>):
    %0 = tensordsl.matmul %x1, %w1 : (tensor<512x128xf32>, tensor<128x256xf32>) -> tensor<512x256xf32>
    %1 = tensordsl.add %0, %b1 : (tensor<512x256xf32>, tensor<256xf32>) -> tensor<512x256xf32>
    %2 = tensordsl.exp %1 : tensor<512x256xf32>
    %3 = tensordsl.add %2, %0 : (tensor<512x256xf32>, tensor<512x256xf32>) -> tensor<512x256xf32>
    kernel.yield %3 : tensor<512x256xf32>
  }
  func.return %y : tensor<512x256xf32>
}
"""
"""``exp(x @ w + b) + x @ w``: the matmul result lives beside its epilogue (one row each)."""


def softmax_of(rows: int, cols: int, budget: int) -> str:
    """``softmax(x + y) + softmax(x - y)``: one softmax is computed in the output, the other
    needs a row buffer."""
    t = f"tensor<{rows}x{cols}xf32>"
    return f"""
func.func @main(%a: {t}, %b: {t}) -> {t} {{
  %r = kernel.fused(%a, %b) group "g" budget {budget} : ({t}, {t}) -> {t} {{
  ^bb0(%x: {t}, %y: {t}):
    %0 = tensordsl.add %x, %y : ({t}, {t}) -> {t}
    %1 = tensordsl.softmax %0 : {t}
    %2 = tensordsl.sub %x, %y : ({t}, {t}) -> {t}
    %3 = tensordsl.softmax %2 : {t}
    %4 = tensordsl.add %1, %3 : ({t}, {t}) -> {t}
    kernel.yield %4 : {t}
  }}
  func.return %r : {t}
}}
"""


# ---------------------------------------------------------------------------
# Tile sizes from the budget, the cap and explicit sizes
# ---------------------------------------------------------------------------


def test_budget_picks_whole_rows_that_fit() -> None:
    t = only_tile(tile(parse(two_way())))
    # One intermediate (x - y) of 100 elements per row: 1000 // 100 rows.
    assert t.space_value == (100, 100)
    assert t.iterator_types == (P, P)
    assert t.tiles_value == (10, 100)
    assert t.scratch_value == 1000
    assert t.group is not None and t.group.data == "g0"


def test_large_budget_gives_one_tile() -> None:
    t = only_tile(tile(parse(two_way(budget="budget 1000000"))))
    assert t.tiles_value == (100, 100)
    assert t.scratch_value == 100 * 100


def test_groups_without_intermediates_need_no_scratch() -> None:
    # (x + y) + z: the whole chain is computed in the output, whatever the budget
    t = "tensor<100x100xf32>"
    text = f"""
func.func @main(%a: {t}, %b: {t}, %c: {t}) -> {t} {{
  %r = kernel.fused(%a, %b, %c) budget 16 : ({t}, {t}, {t}) -> {t} {{
  ^bb0(%x: {t}, %y: {t}, %z: {t}):
    %0 = tensordsl.add %x, %y : ({t}, {t}) -> {t}
    %1 = tensordsl.add %0, %z : ({t}, {t}) -> {t}
    kernel.yield %1 : {t}
  }}
  func.return %r : {t}
}}
"""
    op = only_tile(tile(parse(text)))
    assert op.tiles_value == (100, 100) and op.scratch_value == 0


def test_pass_budget_overrides_the_recorded_one() -> None:
    t = only_tile(tile(parse(two_way()), memory_budget=5000))
    assert t.tiles_value == (50, 100)


def test_default_budget_without_any() -> None:
    t = only_tile(tile(parse(two_way(200, 10000, budget=""))))
    assert DEFAULT_MEMORY_BUDGET == 1_000_000
    # 100 rows of 10000 fit 1e6: two tiles of 100.
    assert t.tiles_value == (100, 10000)
    assert t.scratch_value <= DEFAULT_MEMORY_BUDGET


def test_tiles_are_evened_out() -> None:
    # 333 rows would fit, making 4 tiles, the last of 1 row: 4 tiles of 250 instead.
    t = only_tile(tile(parse(two_way(1000, 3)), memory_budget=999))
    assert t.tiles_value == (250, 3)
    assert t.scratch_value == 750
    t = only_tile(tile(parse(two_way(1000, 3)), memory_budget=1500))
    assert t.tiles_value == (500, 3)


def test_tile_size_caps_every_parallel_dim() -> None:
    t = only_tile(tile(parse(two_way(budget="budget 1000000")), tile_size=32))
    assert t.tiles_value == (32, 32)
    assert t.scratch_value == 32 * 32
    # The budget still wins when it is tighter than the cap.
    t = only_tile(tile(parse(two_way()), tile_size=64))
    assert t.tiles_value == (15, 64)  # 15 rows of 64 fit 1000; 7 tiles of <= 15 rows
    assert t.scratch_value <= 1000


def test_explicit_tile_sizes() -> None:
    t = only_tile(tile(parse(two_way(budget="budget 1000000")), tile_sizes=(10, 500)))
    assert t.tiles_value == (10, 100)  # clamped to the extent
    assert t.scratch_value == 1000


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ((10,), "gives 1 size"),
        ((10, 0), "must all be positive"),
        ((-1, 4), "must all be positive"),
        # (as tile-size and the JIT's tile_sizes; it was clamped: found by fuzzing)
        ((10**23, 4), r"tile-sizes must be at most 2\*\*62, not 100000000000000000000000"),
    ],
)
def test_explicit_tile_sizes_are_validated(sizes: tuple[int, ...], message: str) -> None:
    with pytest.raises(TdslOptionError, match=message):
        tile(parse(two_way()), tile_sizes=sizes)


def test_explicit_sizes_that_cut_rows_run_decomposed() -> None:
    module = parse(softmax_of(10, 50, 10**6))
    t = only_tile(tile(module, tile_sizes=(2, 10)))
    assert t.tiles_value == (2, 10)
    assert "tensordsl.softmax" not in body_names(t)
    assert len(t.schedule().passes) == 3
    check_numbers(module, tile(module, tile_sizes=(2, 10)))
    # sizes that keep the rows whole keep softmax whole
    assert "tensordsl.softmax" in body_names(only_tile(tile(module, tile_sizes=(2, 50))))


def test_explicit_sizes_over_budget() -> None:
    with pytest.raises(TdslBudgetError, match="need 2000 elements of scratch, more than"):
        tile(parse(two_way()), tile_sizes=(20, 100))
    # sizes beyond the extents are named as given, then as they came to
    with pytest.raises(TdslBudgetError, match=r"tile sizes \[20, 10000\] \(within the extents, "):
        tile(parse(two_way()), tile_sizes=(20, 10_000))


@pytest.mark.parametrize(
    "kwargs",
    [{"memory_budget": 0}, {"memory_budget": -5}, {"tile_size": 0}, {"tile_sizes": (0,)}],
)
def test_bad_options(kwargs: dict[str, object]) -> None:
    with pytest.raises(TdslOptionError):
        tile(parse(two_way()), **kwargs)  # pyright: ignore[reportArgumentType]
    with pytest.raises(TdslOptionError):
        TilePass(**kwargs).apply(context(), parse(two_way()))  # pyright: ignore[reportArgumentType]


def test_tile_works_on_a_clone() -> None:
    module = parse(two_way())
    before = show(module)
    tiled = tile(module)
    assert show(module) == before
    assert tiles_of(tiled) and not tiles_of(module)
    assert not [op for op in tiled.walk() if isinstance(op, FusedOp)]


# ---------------------------------------------------------------------------
# Maps of matmul, reductions, broadcasting, transposes, constants
# ---------------------------------------------------------------------------


def test_matmul_space_has_its_contraction_last() -> None:
    module = parse(MLP)
    t = only_tile(tile(module))
    assert t.space_value == (512, 256, 128)
    assert t.iterator_types == (P, P, R)
    assert t.input_dims == ((0, 2), (2, 1), (1,))
    assert t.output_dims == ((0, 1),)
    # the epilogue runs in the output; x @ w, needed again at the end, takes a row
    # buffer: 390 rows would fit, evened out to 2 tiles of 256; the contraction stays whole
    assert t.tiles_value == (256, 256, 128)
    assert t.scratch_value == 256 * 256
    check_numbers(module, tile(module, memory_budget=2000))


def test_matmul_columns_then_contraction_are_tiled_only_when_rows_do_not_fit() -> None:
    text = """
func.func @main(%a: tensor<4x8xf32>, %w: tensor<8x5000xf32>) -> tensor<4x5000xf32> {
  %r = kernel.fused(%a, %w) budget 1000 : (tensor<4x8xf32>, tensor<8x5000xf32>) -> tensor<4x5000xf32> {
  ^bb0(%x: tensor<4x8xf32>, %y: tensor<8x5000xf32>):
    %0 = tensordsl.matmul %x, %y : (tensor<4x8xf32>, tensor<8x5000xf32>) -> tensor<4x5000xf32>
    %1 = tensordsl.relu %0 : tensor<4x5000xf32>
    %2 = tensordsl.mul %1, %0 : (tensor<4x5000xf32>, tensor<4x5000xf32>) -> tensor<4x5000xf32>
    kernel.yield %2 : tensor<4x5000xf32>
  }
  func.return %r : tensor<4x5000xf32>
}
"""
    module = parse(text)
    t = only_tile(tile(module))
    # the right operand is the largest value: its columns come first
    assert t.space_value == (5000, 4, 8)
    assert t.tiles_value == (1000, 1, 8)
    assert t.input_dims == ((1, 2), (2, 0))
    # tile-size does not cap the columns of a matmul.
    t = only_tile(tile(module, memory_budget=10**6, tile_size=2))
    assert t.tiles_value == (5000, 2, 8)
    check_numbers(module, tile(module))


def test_contraction_is_tiled_when_a_computed_left_operand_row_does_not_fit() -> None:
    text = """
func.func @main(%a: tensor<4x5000xf32>, %w: tensor<5000x8xf32>) -> tensor<4x8xf32> {
  %r = kernel.fused(%a, %w) budget 100 : (tensor<4x5000xf32>, tensor<5000x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%x: tensor<4x5000xf32>, %y: tensor<5000x8xf32>):
    %0 = tensordsl.relu %x : tensor<4x5000xf32>
    %1 = tensordsl.matmul %0, %y : (tensor<4x5000xf32>, tensor<5000x8xf32>) -> tensor<4x8xf32>
    kernel.yield %1 : tensor<4x8xf32>
  }
  func.return %r : tensor<4x8xf32>
}
"""
    module = parse(text)
    t = only_tile(tile(module))
    assert t.space_value == (8, 4, 5000) and t.iterator_types == (P, P, R)
    # a row of relu(x) (5000) is over the budget: the matmul accumulates over tiles of k
    assert t.tiles_value[2] < 5000 and t.scratch_value <= 100
    assert t.schedule().describe() == "1 pass over d2"
    check_numbers(module, tile(module))


def test_row_reduction_and_broadcasts() -> None:
    text = """
func.func @main(%a: tensor<64x30xf32>, %v: tensor<1x30xf32>, %s: tensor<64x1xf32>) -> (tensor<64x30xf32>, tensor<64x1xf32>) {
  %r:2 = kernel.fused(%a, %v, %s) group "g" budget 300 : (tensor<64x30xf32>, tensor<1x30xf32>, tensor<64x1xf32>) -> (tensor<64x30xf32>, tensor<64x1xf32>) {
  ^bb0(%x: tensor<64x30xf32>, %y: tensor<1x30xf32>, %z: tensor<64x1xf32>):
    %0 = tensordsl.add %x, %y : (tensor<64x30xf32>, tensor<1x30xf32>) -> tensor<64x30xf32>
    %1 = tensordsl.mul %0, %z : (tensor<64x30xf32>, tensor<64x1xf32>) -> tensor<64x30xf32>
    %2 = tensordsl.max %1 axis = 1 keepdims : tensor<64x30xf32> -> tensor<64x1xf32>
    kernel.yield %1, %2 : tensor<64x30xf32>, tensor<64x1xf32>
  }
  func.return %r#0, %r#1 : tensor<64x30xf32>, tensor<64x1xf32>
}
"""
    t = only_tile(tile(parse(text)))
    # The reduced dim is a reduction dim of the space; size-1 dims map to 0.
    assert t.space_value == (64, 30)
    assert t.iterator_types == (P, R)
    assert t.input_dims == ((0, 1), (None, 1), (0, None))
    assert t.output_dims == ((0, 1), (0, None))
    # nothing needs scratch (both results are computed in place in the outputs)
    assert t.tiles_value == (64, 30) and t.scratch_value == 0


def test_full_reduction_fuses_with_its_producer_and_accumulates() -> None:
    text = """
func.func @main(%a: tensor<100x100xf32>) -> tensor<f32> {
  %r = kernel.fused(%a) group "g" budget 1000 : (tensor<100x100xf32>) -> tensor<f32> {
  ^bb0(%x: tensor<100x100xf32>):
    %0 = tensordsl.exp %x : tensor<100x100xf32>
    %1 = tensordsl.sum %0 : tensor<100x100xf32> -> tensor<f32>
    kernel.yield %1 : tensor<f32>
  }
  func.return %r : tensor<f32>
}
"""
    module = parse(text)
    t = only_tile(tile(module))
    assert t.iterator_types == (R, R)
    # exp of 9 rows, and the one-element partial sum of a tile; the sum accumulates
    # straight in the output
    assert t.tiles_value == (9, 100)
    assert t.scratch_value == 9 * 100 + 1
    assert t.schedule().describe() == "1 pass over d0"
    check_numbers(module, tile(module))
    # with room for the whole intermediate, it is one tile
    whole = only_tile(tile(module, memory_budget=10_000))
    assert whole.tiles_value == (100, 100) and whole.scratch_value == 10_000


def test_second_pass_recomputes_element_wise_producers() -> None:
    text = """
func.func @main(%a: tensor<64x30xf32>) -> tensor<30xf32> {
  %r = kernel.fused(%a) budget 100 : (tensor<64x30xf32>) -> tensor<30xf32> {
  ^bb0(%x: tensor<64x30xf32>):
    %0 = tensordsl.exp %x : tensor<64x30xf32>
    %1 = tensordsl.mean %0 axis = 0 keepdims : tensor<64x30xf32> -> tensor<1x30xf32>
    %2 = tensordsl.sub %0, %1 : (tensor<64x30xf32>, tensor<1x30xf32>) -> tensor<64x30xf32>
    %3 = tensordsl.mul %2, %2 : (tensor<64x30xf32>, tensor<64x30xf32>) -> tensor<64x30xf32>
    %4 = tensordsl.mean %3 axis = 0 : tensor<64x30xf32> -> tensor<30xf32>
    kernel.yield %4 : tensor<30xf32>
  }
  func.return %r : tensor<30xf32>
}
"""
    module = parse(text)
    t = only_tile(tile(module))
    assert t.iterator_types == (R, P)
    sched = t.schedule()
    assert [s.index for s in sched.passes] == [1, 3]
    assert sched.describe() == "2 passes over d0 (recomputing tensordsl.exp)"
    assert t.scratch_value <= 100
    check_numbers(module, tile(module))


def test_rows_longer_than_the_budget_run_decomposed() -> None:
    module = parse(softmax_of(10, 200, 64))
    t = only_tile(tile(module))
    assert "tensordsl.softmax" not in body_names(t)
    assert body_names(t)[:4] == ["tensordsl.add", "tensordsl.max", "tensordsl.sub", "tensordsl.exp"]
    assert t.iterator_types == (P, R)
    assert t.tiles_value[1] < 200 and t.scratch_value <= 64
    assert len(t.schedule().passes) == 3  # the maxima, the sums, the quotients
    check_numbers(module, tile(module))
    # with room for a row, softmax stays whole
    whole = only_tile(tile(module, memory_budget=1000))
    assert "tensordsl.softmax" in body_names(whole)


def test_transpose_maps_reversed_dims() -> None:
    text = """
func.func @main(%a: tensor<6x4xf32>, %b: tensor<4x6xf32>) -> tensor<6x4xf32> {
  %r = kernel.fused(%a, %b) budget 8 : (tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<6x4xf32> {
  ^bb0(%x: tensor<6x4xf32>, %y: tensor<4x6xf32>):
    %0 = tensordsl.transpose %y : tensor<4x6xf32> -> tensor<6x4xf32>
    %1 = tensordsl.exp %0 : tensor<6x4xf32>
    %2 = tensordsl.add %x, %1 : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
    %3 = tensordsl.mul %2, %1 : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
    kernel.yield %3 : tensor<6x4xf32>
  }
  func.return %r : tensor<6x4xf32>
}
"""
    module = parse(text)
    t = only_tile(tile(module))
    assert t.input_dims == ((1, 0), (0, 1))  # y (read first, by the transpose), then x
    assert t.tiles_value == (2, 4)
    check_numbers(module, tile(module))


def test_an_input_read_along_two_maps_is_two_operands() -> None:
    text = """
func.func @main(%a: tensor<6x6xf32>) -> tensor<6x6xf32> {
  %r = kernel.fused(%a) budget 100 : (tensor<6x6xf32>) -> tensor<6x6xf32> {
  ^bb0(%x: tensor<6x6xf32>):
    %0 = tensordsl.transpose %x : tensor<6x6xf32> -> tensor<6x6xf32>
    %1 = tensordsl.add %x, %0 : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
    kernel.yield %1 : tensor<6x6xf32>
  }
  func.return %r : tensor<6x6xf32>
}
"""
    module = parse(text)
    t = only_tile(tile(module, memory_budget=1))
    assert t.space_value == (6, 6)
    assert t.inputs[0] is t.inputs[1]
    assert t.input_dims == ((1, 0), (0, 1))
    check_numbers(module, tile(module, tile_sizes=(2, 3)))


def test_constants_hoisted_or_kept() -> None:
    text = """
func.func @main(%a: tensor<8x6xf32>) -> tensor<8x6xf32> {
  %r = kernel.fused(%a) budget 12 : (tensor<8x6xf32>) -> tensor<8x6xf32> {
  ^bb0(%x: tensor<8x6xf32>):
    %c = tensordsl.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
    %s = tensordsl.constant dense<2.0> : tensor<1x1xf32>
    %0 = tensordsl.mul %x, %s : (tensor<8x6xf32>, tensor<1x1xf32>) -> tensor<8x6xf32>
    %1 = tensordsl.exp %x : tensor<8x6xf32>
    %2 = tensordsl.sub %0, %c : (tensor<8x6xf32>, tensor<6xf32>) -> tensor<8x6xf32>
    %3 = tensordsl.mul %2, %1 : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<8x6xf32>
    kernel.yield %3 : tensor<8x6xf32>
  }
  func.return %r : tensor<8x6xf32>
}
"""
    module = tile(parse(text))
    t = only_tile(module)
    hoisted = t.inputs[1].owner
    assert isinstance(hoisted, ConstantOp) and hoisted.parent_block() is t.parent_block()
    assert t.input_dims == ((0, 1), (1,))
    inside = [op for op in t.body.block.ops if isinstance(op, ConstantOp)]
    assert [tensor_shape(op.result) for op in inside] == [(1, 1)]
    assert t.tiles_value == (2, 6)


def test_values_the_group_does_not_compute_are_forwarded() -> None:
    text = """
func.func @main(%a: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) {
  %r:3 = kernel.fused(%a) budget 100 : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) {
  ^bb0(%x: tensor<4x4xf32>):
    %c = tensordsl.constant dense<1.5> : tensor<f32>
    %0 = tensordsl.exp %x : tensor<4x4xf32>
    %1 = tensordsl.relu %x : tensor<4x4xf32>
    kernel.yield %x, %0, %c : tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>
  }
  func.return %r#0, %r#1, %r#2 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>
}
"""
    module = tile(parse(text))
    tiles = tiles_of(module)
    # The dead relu is dropped; %x is forwarded.
    assert all("tensordsl.relu" not in body_names(t) for t in tiles)
    ret = next(op for op in module.walk() if op.name == "func.return")
    assert (
        ret.operands[0]
        is next(op for op in module.walk() if op.name == "func.func").regions[0].block.args[0]
    )
    assert isinstance(ret.operands[1].owner, TileOp)
    check_numbers(parse(text), module)


# ---------------------------------------------------------------------------
# Splitting and the budget error
# ---------------------------------------------------------------------------


def test_split_when_the_group_cannot_fit_even_in_passes() -> None:
    # budget 2: the decomposed softmaxes still need more than two elements at once
    module = parse(softmax_of(4, 50, 2))
    parts = tiles_of(tile(module))
    assert len(parts) >= 2
    assert all(p.scratch_value <= 2 for p in parts)
    check_numbers(module, tile(module))


def test_error_when_one_op_cannot_fit() -> None:
    from xdsl.builder import ImplicitBuilder
    from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr, TensorType, f32
    from xdsl.dialects.func import FuncOp, ReturnOp
    from xdsl.ir import Block, Region
    from xdsl.irdl import irdl_op_definition

    from tdsl.dialects.kernel import YieldOp
    from tdsl.dialects.structured import UnaryOp

    @irdl_op_definition
    class Hungry(UnaryOp):
        """exp, with two result-sized workspaces (an op of a test dialect).

        ```mlir
        %1 = test.hungry %0 : tensor<4x8xf32>
        ```
        """

        name = "test.hungry"
        NUMPY_UFUNC: ClassVar[str] = "exp"

        def numpy_workspace(self, operand_shapes, result_shapes, constant_operands):  # type: ignore[no-untyped-def]
            return ((result_shapes[0], np.dtype(np.float32)),) * 2

    t = TensorType(f32, [4, 8])
    body = Block(arg_types=[t])
    with ImplicitBuilder(body) as (x,):
        op = Hungry(x)
        op.location = FileLineColLoc(StringAttr("model.tdsl"), IntAttr(3), IntAttr(7))
        YieldOp(op)
    fn = FuncOp("main", ([t], [t]))
    with ImplicitBuilder(fn.body) as (a,):
        fused = FusedOp([a], [t], Region(body), budget=1)
        ReturnOp(fused)
    module = ModuleOp([fn])
    with pytest.raises(TdslBudgetError) as info:
        tile(module)
    err = info.value
    assert err.location is not None
    assert (err.location.file, err.location.line, err.location.column) == ("model.tdsl", 3, 7)
    assert err.location.source_line is None  # passes never read files; drivers add the line
    assert err.message == (
        "'test.hungry' needs 2 elements of scratch at its smallest tile (iteration space "
        "4x8), more than the memory budget of 1 element"
    )
    assert err.note == "raise the memory budget to at least 2"
    assert str(err).startswith("model.tdsl:3:7: error: ")
    assert isinstance(err.op, Hungry)  # the op of the clone tile() works on


def test_a_group_over_the_scratch_its_fused_op_records_says_so() -> None:
    """Found by fuzzing: ``budget 1 scratch 0`` was "more than the memory budget of 0"."""
    text = (
        "func.func @main(%a: tensor<8xf32>) -> tensor<8xf32> {\n"
        '  %0 = kernel.fused(%a) group "g0" budget 1 scratch 0 : (tensor<8xf32>) -> tensor<8xf32> {\n'
        "  ^bb0(%a1: tensor<8xf32>):\n"
        "    %1 = tensordsl.sigmoid %a1 : tensor<8xf32>\n"
        "    kernel.yield %1 : tensor<8xf32>\n"
        "  }\n"
        "  func.return %0 : tensor<8xf32>\n"
        "}\n"
    )
    with pytest.raises(TdslBudgetError) as info:
        tile(parse(text))
    assert info.value.message.endswith(
        "more than the scratch of 0 elements its kernel.fused records"
    )
    assert info.value.note == "raise the group's scratch to at least 1"


# ---------------------------------------------------------------------------
# Scratch plans
# ---------------------------------------------------------------------------


def test_recorded_scratch_is_the_plan_of_the_tiled_body() -> None:
    for text, budget in ((MLP, None), (two_way(), None), (softmax_of(10, 500, 4000), None)):
        for t in tiles_of(tile(parse(text), memory_budget=budget)):
            plan = plan_scratch(t.schedule())
            assert t.scratch_buffers == plan.buffers
            for (value, _), slot in plan.slots.items():
                if slot.kind == "buffer":
                    elements = 1
                    for n in tensor_shape(value):
                        elements *= n
                    assert elements <= plan.buffers[slot.index].elements


def test_scratch_plan_keeps_element_types_apart() -> None:
    text = """
func.func @main(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = kernel.fused(%a) budget 1000 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%x: tensor<4x8xf32>):
    %0 = tensordsl.exp %x : tensor<4x8xf32>
    %1 = tensordsl.cast %0 : tensor<4x8xf32> -> tensor<4x8xf64>
    %2 = tensordsl.tanh %1 : tensor<4x8xf64>
    %3 = tensordsl.cast %2 : tensor<4x8xf64> -> tensor<4x8xf32>
    %4 = tensordsl.relu %3 : tensor<4x8xf32>
    kernel.yield %4 : tensor<4x8xf32>
  }
  func.return %r : tensor<4x8xf32>
}
"""
    t = only_tile(tile(parse(text)))
    types = sorted(b.dtype.name for b in t.scratch_buffers)
    assert types == ["float32", "float64"]


# ---------------------------------------------------------------------------
# Printing, parsing and the pass pipeline
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", [MLP, two_way(), softmax_of(10, 500, 64)])
def test_tiled_ir_round_trips(text: str) -> None:
    tiled = tile(parse(text))
    tiled.verify()
    custom = show(tiled)
    assert show(parse(custom)) == custom
    assert show(parse(show(tiled, generic=True))) == custom


def test_pass_options_parse_from_a_pipeline() -> None:
    from xdsl.passes import PassPipeline

    pipeline = PassPipeline.parse_spec(
        {"tdsl-tile": lambda: TilePass}, "tdsl-tile{memory-budget=5000 tile-sizes=25,100}"
    )
    (pass_,) = pipeline.passes
    assert pass_ == TilePass(memory_budget=5000, tile_sizes=(25, 100))
    module = parse(two_way())
    pipeline.apply(context(), module)
    assert only_tile(module).tiles_value == (25, 100)


def test_f64_groups_count_elements() -> None:
    t = only_tile(tile(parse(two_way(dtype="f64"))))
    assert t.tiles_value == (10, 100)
    assert {b.dtype.name for b in t.scratch_buffers} == {"float64"}


def test_batched_and_vector_matmul_maps() -> None:
    text = """
func.func @main(%a: tensor<3x8x16xf32>, %w: tensor<16x4xf32>, %v: tensor<16xf32>) -> (tensor<3x8x4xf32>, tensor<3x8xf32>) {
  %r:2 = kernel.fused(%a, %w, %v) budget 40 : (tensor<3x8x16xf32>, tensor<16x4xf32>, tensor<16xf32>) -> (tensor<3x8x4xf32>, tensor<3x8xf32>) {
  ^bb0(%x: tensor<3x8x16xf32>, %y: tensor<16x4xf32>, %u: tensor<16xf32>):
    %0 = tensordsl.matmul %x, %y : (tensor<3x8x16xf32>, tensor<16x4xf32>) -> tensor<3x8x4xf32>
    %1 = tensordsl.matmul %x, %u : (tensor<3x8x16xf32>, tensor<16xf32>) -> tensor<3x8xf32>
    %2 = tensordsl.tanh %0 : tensor<3x8x4xf32>
    kernel.yield %2, %1 : tensor<3x8x4xf32>, tensor<3x8xf32>
  }
  func.return %r#0, %r#1 : tensor<3x8x4xf32>, tensor<3x8xf32>
}
"""
    module = parse(text)
    t = only_tile(tile(module))
    # batch, rows, columns, contraction (last: a matmul keeps it whole while it can)
    assert t.space_value == (3, 8, 4, 16)
    assert t.iterator_types == (P, P, P, R)
    assert t.input_dims == ((0, 1, 3), (3, 2), (3,))
    assert t.output_dims == ((0, 1, 2), (0, 1))
    check_numbers(module, tile(module))


def test_unnamed_group_parts_stay_unnamed() -> None:
    text = softmax_of(4, 50, 2).replace(' group "g"', "")
    parts = tiles_of(tile(parse(text)))
    assert len(parts) >= 2 and all(p.group is None for p in parts)
