"""Unit tests of the ``tdsl-tile`` pass: spaces, maps, tile sizes, splitting, errors, scratch."""

from __future__ import annotations

import io
import math

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, Float32Type, Float64Type, ModuleOp
from xdsl.dialects.func import Func
from xdsl.parser import Parser
from xdsl.printer import Printer

from tdsl.dialects.kernel import FusedOp, Kernel, TileOp
from tdsl.dialects.tensordsl import ConstantOp, TensorDSL, tensor_shape
from tdsl.errors import TdslBudgetError, TdslOptionError
from tdsl.lowering.tile import DEFAULT_MEMORY_BUDGET, TilePass, scratch_plan, tile
from tdsl.lowering.tiling_analysis import analyze_group, body_ops


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


def elementwise3(n: int = 100, m: int = 100, budget: str = "budget 1000") -> str:
    """``(A + B) + C`` on n x m f32, one fused group."""
    t = f"tensor<{n}x{m}xf32>"
    return f"""
func.func @main(%a: {t}, %b: {t}, %c: {t}) -> {t} {{
  %r = kernel.fused(%a, %b, %c) group "g0" {budget} : ({t}, {t}, {t}) -> {t} {{
  ^bb0(%x: {t}, %y: {t}, %z: {t}):
    %0 = tensordsl.add %x, %y : ({t}, {t}) -> {t}
    %1 = tensordsl.add %0, %z : ({t}, {t}) -> {t}
    kernel.yield %1 : {t}
  }}
  func.return %r : {t}
}}
"""


def softmax_of_sum(rows: int, cols: int, budget: int) -> str:
    t = f"tensor<{rows}x{cols}xf32>"
    return f"""
func.func @main(%a: {t}, %b: {t}) -> {t} {{
  %r = kernel.fused(%a, %b) group "g" budget {budget} : ({t}, {t}) -> {t} {{
  ^bb0(%x: {t}, %y: {t}):
    %0 = tensordsl.add %x, %y : ({t}, {t}) -> {t}
    %1 = tensordsl.softmax %0 : {t} loc("model.tdsl":3:7)
    kernel.yield %1 : {t}
  }}
  func.return %r : {t}
}}
"""


MLP = """
func.func @main(%x: tensor<512x128xf32>, %w: tensor<128x256xf32>, %b: tensor<256xf32>) -> tensor<512x256xf32> {
  %y = kernel.fused(%x, %w, %b) group "g0" budget 100000 : (tensor<512x128xf32>, tensor<128x256xf32>, tensor<256xf32>) -> tensor<512x256xf32> {
  ^bb0(%x1: tensor<512x128xf32>, %w1: tensor<128x256xf32>, %b1: tensor<256xf32>):
    %0 = tensordsl.matmul %x1, %w1 : (tensor<512x128xf32>, tensor<128x256xf32>) -> tensor<512x256xf32>
    %1 = tensordsl.add %0, %b1 : (tensor<512x256xf32>, tensor<256xf32>) -> tensor<512x256xf32>
    %2 = tensordsl.relu %1 : tensor<512x256xf32>
    kernel.yield %2 : tensor<512x256xf32>
  }
  func.return %y : tensor<512x256xf32>
}
"""


# ---------------------------------------------------------------------------
# Tile sizes from the budget, the cap and explicit sizes
# ---------------------------------------------------------------------------


def test_budget_picks_whole_rows_that_fit() -> None:
    t = only_tile(tile(parse(elementwise3())))
    # One intermediate (x + y) of 100 elements per row: 1000 // 100 rows.
    assert t.space_value == (100, 100)
    assert t.tiles_value == (10, 100)
    assert t.scratch_value == 1000
    assert t.group is not None and t.group.data == "g0"


def test_large_budget_gives_one_tile() -> None:
    t = only_tile(tile(parse(elementwise3(budget="budget 1000000"))))
    assert t.tiles_value == (100, 100)
    assert t.scratch_value == 100 * 100


def test_pass_budget_overrides_the_recorded_one() -> None:
    t = only_tile(tile(parse(elementwise3()), memory_budget=5000))
    assert t.tiles_value == (50, 100)


def test_default_budget_without_any() -> None:
    t = only_tile(tile(parse(elementwise3(200, 10000, budget=""))))
    assert DEFAULT_MEMORY_BUDGET == 1_000_000
    # 100 rows of 10000 fit 1e6; the tile is evened out to two tiles of 100.
    assert t.tiles_value == (100, 10000)
    assert t.scratch_value <= DEFAULT_MEMORY_BUDGET


def test_tiles_are_evened_out() -> None:
    # 333 rows would fit, making 4 tiles, the last of 1 row: 4 tiles of 250 instead.
    t = only_tile(tile(parse(elementwise3(1000, 3)), memory_budget=999))
    assert t.tiles_value == (250, 3)
    assert t.scratch_value == 750
    t = only_tile(tile(parse(elementwise3(1000, 3)), memory_budget=1500))
    assert t.tiles_value == (500, 3)
    t2 = only_tile(tile(parse(elementwise3(100, 1)), memory_budget=60))
    assert t2.tiles_value == (50,)


def test_tile_size_caps_every_tileable_dim() -> None:
    t = only_tile(tile(parse(elementwise3(budget="budget 1000000")), tile_size=32))
    assert t.tiles_value == (32, 32)
    assert t.scratch_value == 32 * 32
    # The budget still wins when it is tighter than the cap.
    t = only_tile(tile(parse(elementwise3()), tile_size=64))
    assert t.tiles_value == (15, 64)  # 16 rows of 64 fit 1000; 7 tiles of <= 15 rows
    assert t.scratch_value <= 1000


def test_explicit_tile_sizes() -> None:
    t = only_tile(tile(parse(elementwise3(budget="budget 1000000")), tile_sizes=(10, 500)))
    assert t.tiles_value == (10, 100)  # clamped to the extent
    assert t.scratch_value == 1000


@pytest.mark.parametrize(
    ("sizes", "message"),
    [((10,), "gives 1 size"), ((10, 0), "must all be positive"), ((-1, 4), "must all be positive")],
)
def test_explicit_tile_sizes_are_validated(sizes: tuple[int, ...], message: str) -> None:
    with pytest.raises(TdslOptionError, match=message):
        tile(parse(elementwise3()), tile_sizes=sizes)


def test_explicit_size_on_an_untileable_dim() -> None:
    with pytest.raises(TdslOptionError, match=r"d1 \(extent 50\) cannot be tiled: softmax"):
        tile(parse(softmax_of_sum(10, 50, 10**6)), tile_sizes=(2, 10))


def test_explicit_sizes_over_budget() -> None:
    with pytest.raises(TdslBudgetError, match="need 2000 elements of scratch, more than"):
        tile(parse(elementwise3()), tile_sizes=(20, 100))


@pytest.mark.parametrize(
    "kwargs",
    [{"memory_budget": 0}, {"memory_budget": -5}, {"tile_size": 0}, {"tile_sizes": (0,)}],
)
def test_bad_options(kwargs: dict[str, object]) -> None:
    with pytest.raises(TdslOptionError):
        tile(parse(elementwise3()), **kwargs)  # pyright: ignore[reportArgumentType]
    with pytest.raises(TdslOptionError):
        TilePass(**kwargs).apply(context(), parse(elementwise3()))  # pyright: ignore[reportArgumentType]


def test_tile_works_on_a_clone() -> None:
    module = parse(elementwise3())
    before = show(module)
    tiled = tile(module)
    assert show(module) == before
    assert tiles_of(tiled) and not tiles_of(module)
    assert not [op for op in tiled.walk() if isinstance(op, FusedOp)]


# ---------------------------------------------------------------------------
# Maps of matmul, reductions, broadcasting, transposes, constants
# ---------------------------------------------------------------------------


def test_matmul_epilogue_maps_and_rows() -> None:
    t = only_tile(tile(parse(MLP)))
    assert t.space_value == (512, 256)
    assert t.input_dims == ((0, None), (None, 1), (1,))
    assert t.output_dims == ((0, 1),)
    # The matmul result is the one intermediate (add and relu run in place).
    assert t.tiles_value == (256, 256)
    assert t.scratch_value == 256 * 256


def test_matmul_columns_are_tiled_only_when_a_row_does_not_fit() -> None:
    text = """
func.func @main(%a: tensor<4x8xf32>, %w: tensor<8x5000xf32>) -> tensor<4x5000xf32> {
  %r = kernel.fused(%a, %w) budget 1000 : (tensor<4x8xf32>, tensor<8x5000xf32>) -> tensor<4x5000xf32> {
  ^bb0(%x: tensor<4x8xf32>, %y: tensor<8x5000xf32>):
    %0 = tensordsl.matmul %x, %y : (tensor<4x8xf32>, tensor<8x5000xf32>) -> tensor<4x5000xf32>
    %1 = tensordsl.relu %0 : tensor<4x5000xf32>
    kernel.yield %1 : tensor<4x5000xf32>
  }
  func.return %r : tensor<4x5000xf32>
}
"""
    t = only_tile(tile(parse(text)))
    assert t.tiles_value == (1, 1000)
    assert t.input_dims == ((0, None), (None, 1))
    # tile-size does not cap the columns of a matmul.
    t = only_tile(tile(parse(text), memory_budget=10**6, tile_size=2))
    assert t.tiles_value == (2, 5000)


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
    # The kept size-1 dim is not an iteration dim; d1 is missing from result #1.
    assert t.space_value == (64, 30)
    assert t.input_dims == ((0, 1), (None, 1), (0, None))
    assert t.output_dims == ((0, 1), (0, None))
    assert t.tiles_value == (10, 30)
    fused = next(o for o in parse(text).walk() if isinstance(o, FusedOp))
    space = analyze_group(*body_ops(fused))
    assert not space.dims[1].tileable
    assert space.dims[1].reason is not None and "max reduces along it" in space.dims[1].reason


def test_full_reduction_is_split_from_its_producer() -> None:
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
    first, second = tiles_of(tile(parse(text)))
    assert [t.group.data for t in (first, second) if t.group is not None] == ["g.0", "g.1"]
    assert first.tiles_value == (10, 100)
    assert first.scratch_value == 0
    assert second.space_value == () and second.tiles_value == ()
    assert second.inputs[0] is first.outputs[0]
    # With room for the whole intermediate, it stays one (untiled) group.
    t = only_tile(tile(parse(text), memory_budget=10_000))
    assert t.space_value == () and t.scratch_value == 10_000


def test_transpose_maps_reversed_dims() -> None:
    text = """
func.func @main(%a: tensor<6x4xf32>, %b: tensor<4x6xf32>) -> tensor<6x4xf32> {
  %r = kernel.fused(%a, %b) budget 8 : (tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<6x4xf32> {
  ^bb0(%x: tensor<6x4xf32>, %y: tensor<4x6xf32>):
    %0 = tensordsl.transpose %y : tensor<4x6xf32> -> tensor<6x4xf32>
    %1 = tensordsl.add %x, %0 : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
    kernel.yield %1 : tensor<6x4xf32>
  }
  func.return %r : tensor<6x4xf32>
}
"""
    t = only_tile(tile(parse(text)))
    assert t.input_dims == ((0, 1), (1, 0))
    assert t.tiles_value == (2, 4)


def test_square_transpose_of_itself_is_not_tiled() -> None:
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
    t = only_tile(tile(parse(text)))
    assert t.space_value == (6,) and t.tiles_value == (6,)
    assert t.input_dims == ((0, 0),)


def test_constants_hoisted_or_kept() -> None:
    text = """
func.func @main(%a: tensor<8x6xf32>) -> tensor<8x6xf32> {
  %r = kernel.fused(%a) budget 12 : (tensor<8x6xf32>) -> tensor<8x6xf32> {
  ^bb0(%x: tensor<8x6xf32>):
    %c = tensordsl.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
    %s = tensordsl.constant dense<2.0> : tensor<1x1xf32>
    %0 = tensordsl.mul %x, %s : (tensor<8x6xf32>, tensor<1x1xf32>) -> tensor<8x6xf32>
    %1 = tensordsl.sub %0, %c : (tensor<8x6xf32>, tensor<6xf32>) -> tensor<8x6xf32>
    kernel.yield %1 : tensor<8x6xf32>
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
    t = only_tile(module)
    # The dead relu is dropped; %x and the constant are forwarded.
    assert [op.name for op in t.body.block.ops] == ["tensordsl.exp", "kernel.yield"]
    ret = next(op for op in module.walk() if op.name == "func.return")
    func_arg = t.inputs[0]
    assert ret.operands[0] is func_arg
    assert ret.operands[1] is t.outputs[0]
    assert isinstance(ret.operands[2].owner, ConstantOp)


# ---------------------------------------------------------------------------
# Splitting and the budget error
# ---------------------------------------------------------------------------


def test_split_where_liveness_peaks() -> None:
    # One row: x + y (5000 elements) plus the softmax row max: 5001 > 5000.
    module = tile(parse(softmax_of_sum(10, 5000, 5000)))
    first, second = tiles_of(module)
    assert [op.name for op in first.body.block.ops] == ["tensordsl.add", "kernel.yield"]
    assert [op.name for op in second.body.block.ops] == ["tensordsl.softmax", "kernel.yield"]
    assert second.inputs == first.outputs
    assert first.tiles_value == (1, 5000) and second.tiles_value == (1, 5000)
    assert first.scratch_value == 0 and second.scratch_value == 1
    # With one more element it fits unsplit.
    t = only_tile(tile(parse(softmax_of_sum(10, 5000, 5001))))
    assert t.tiles_value == (1, 5000) and t.scratch_value == 5001


def test_split_keeps_everything_needed_later() -> None:
    text = """
func.func @main(%a: tensor<10x400xf32>) -> (tensor<10x400xf32>, tensor<10x400xf32>) {
  %r:2 = kernel.fused(%a) group "g" budget 700 : (tensor<10x400xf32>) -> (tensor<10x400xf32>, tensor<10x400xf32>) {
  ^bb0(%x: tensor<10x400xf32>):
    %0 = tensordsl.exp %x : tensor<10x400xf32>
    %1 = tensordsl.tanh %x : tensor<10x400xf32>
    %2 = tensordsl.add %0, %1 : (tensor<10x400xf32>, tensor<10x400xf32>) -> tensor<10x400xf32>
    %3 = tensordsl.softmax %2 : tensor<10x400xf32>
    %4 = tensordsl.mul %3, %0 : (tensor<10x400xf32>, tensor<10x400xf32>) -> tensor<10x400xf32>
    kernel.yield %4, %2 : tensor<10x400xf32>, tensor<10x400xf32>
  }
  func.return %r#0, %r#1 : tensor<10x400xf32>, tensor<10x400xf32>
}
"""
    module = tile(parse(text))
    parts = tiles_of(module)
    assert len(parts) >= 2
    for part in parts:
        assert part.scratch_value <= 700
    ret = next(op for op in module.walk() if op.name == "func.return")
    assert all(isinstance(v.owner, TileOp) for v in ret.operands)


def test_error_when_one_op_cannot_fit() -> None:
    with pytest.raises(TdslBudgetError) as info:
        tile(parse(softmax_of_sum(10, 5000, 1000)))
    err = info.value
    assert err.location is not None
    assert (err.location.file, err.location.line, err.location.column) == ("model.tdsl", 3, 7)
    assert "'tensordsl.softmax' needs 5000 elements" in err.message
    assert "memory budget of 1000 elements" in err.message
    assert err.note is not None
    assert "d1 (extent 5000) cannot be tiled: softmax normalizes along it" in err.note
    assert str(err).startswith("model.tdsl:3:7: error: ")


def test_error_without_location_names_the_op() -> None:
    text = softmax_of_sum(4, 300, 64).replace(' loc("model.tdsl":3:7)', "")
    with pytest.raises(TdslBudgetError, match=r"^error: 'tensordsl.softmax' needs 300 elements"):
        tile(parse(text))


# ---------------------------------------------------------------------------
# Scratch plans
# ---------------------------------------------------------------------------


def test_scratch_plan_reuses_dead_buffers_and_computes_in_place() -> None:
    text = """
func.func @main(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = kernel.fused(%a) budget 1000 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%x: tensor<4x8xf32>):
    %0 = tensordsl.exp %x : tensor<4x8xf32>
    %1 = tensordsl.relu %x : tensor<4x8xf32>
    %2 = tensordsl.add %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %3 = tensordsl.sum %2 axis = 1 keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    %4 = tensordsl.tanh %3 : tensor<4x1xf32>
    %5 = tensordsl.sub %2, %4 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    %6 = tensordsl.softmax %5 : tensor<4x8xf32>
    kernel.yield %6 : tensor<4x8xf32>
  }
  func.return %r : tensor<4x8xf32>
}
"""
    fused = next(op for op in parse(text).walk() if isinstance(op, FusedOp))
    ops, _ = body_ops(fused)
    v = [op.results[0] for op in ops]
    plan = scratch_plan(fused)
    # exp and relu are live together; add runs in place in exp's buffer and frees
    # relu's, which the row sums then reuse (tanh in place); sub runs in place in
    # add's buffer, and softmax's row statistics take the freed small buffer.
    assert plan.buffer_of(v[0]) != plan.buffer_of(v[1])
    assert plan.buffer_of(v[2]) == plan.buffer_of(v[0])
    assert plan.buffer_of(v[3]) == plan.buffer_of(v[1])
    assert plan.buffer_of(v[4]) == plan.buffer_of(v[3])
    assert plan.buffer_of(v[5]) == plan.buffer_of(v[2])
    assert plan.buffer_of(v[6]) is None  # the result: written into the output
    assert plan.workspaces == {ops[6]: plan.buffer_of(v[1])}
    assert [b.elements for b in plan.buffers] == [32, 32]
    assert plan.total == 64
    assert all(b.element_type == Float32Type() for b in plan.buffers)


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
    fused = next(op for op in parse(text).walk() if isinstance(op, FusedOp))
    plan = scratch_plan(fused)
    types = sorted(str(b.element_type) for b in plan.buffers)
    assert types == ["f32", "f64"]
    assert plan.total == 64


def test_recorded_scratch_is_the_plan_of_the_tiled_body() -> None:
    for text, budget in (
        (MLP, None),
        (elementwise3(), None),
        (softmax_of_sum(10, 500, 4000), None),
    ):
        for t in tiles_of(tile(parse(text), memory_budget=budget)):
            plan = scratch_plan(t)
            assert t.scratch_value == plan.total
            for value, buf in plan.values.items():
                assert math.prod(tensor_shape(value)) <= plan.buffers[buf].elements


# ---------------------------------------------------------------------------
# Printing, parsing and the pass pipeline
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", [MLP, elementwise3(), softmax_of_sum(10, 5000, 5000)])
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
    module = parse(elementwise3())
    pipeline.apply(context(), module)
    assert only_tile(module).tiles_value == (25, 100)


def test_f64_groups_count_elements() -> None:
    text = elementwise3().replace("f32", "f64")
    t = only_tile(tile(parse(text)))
    assert t.tiles_value == (10, 100)
    assert {b.element_type for b in scratch_plan(t).buffers} == {Float64Type()}


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
    t = only_tile(tile(parse(text)))
    assert t.space_value == (3, 8, 4)
    # The batch dim is tiled first; K is taken whole; the columns (d2) are not
    # named by the matrix-vector result, so they are not tiled.
    assert t.input_dims == ((0, 1, None), (None, 2), (None,))
    assert t.output_dims == ((0, 1, 2), (0, 1))
    assert t.tiles_value == (1, 8, 4)
    assert t.scratch_value == 32


def test_live_profile_peaks_where_intermediates_overlap() -> None:
    text = """
func.func @main(%a: tensor<2x10xf32>) -> tensor<2x10xf32> {
  %r = kernel.fused(%a) budget 1000 : (tensor<2x10xf32>) -> tensor<2x10xf32> {
  ^bb0(%x: tensor<2x10xf32>):
    %0 = tensordsl.exp %x : tensor<2x10xf32>
    %1 = tensordsl.tanh %x : tensor<2x10xf32>
    %2 = tensordsl.add %0, %1 : (tensor<2x10xf32>, tensor<2x10xf32>) -> tensor<2x10xf32>
    %3 = tensordsl.max %2 axis = 1 keepdims : tensor<2x10xf32> -> tensor<2x1xf32>
    %4 = tensordsl.sub %2, %3 : (tensor<2x10xf32>, tensor<2x1xf32>) -> tensor<2x10xf32>
    kernel.yield %4 : tensor<2x10xf32>
  }
  func.return %r : tensor<2x10xf32>
}
"""
    fused = next(o for o in parse(text).walk() if isinstance(o, FusedOp))
    space = analyze_group(*body_ops(fused))
    assert space.min_tiles() == (1, 10)
    assert space.live_profile(space.min_tiles()) == [10, 20, 30, 11, 11]
    # exp + tanh; add runs in place, and the row max reuses the freed tanh buffer.
    assert space.plan(space.min_tiles()).total == 20


def test_split_parts_of_an_unnamed_group_stay_unnamed() -> None:
    text = softmax_of_sum(10, 5000, 5000).replace(' group "g"', "")
    parts = tiles_of(tile(parse(text)))
    assert len(parts) == 2 and all(p.group is None for p in parts)
