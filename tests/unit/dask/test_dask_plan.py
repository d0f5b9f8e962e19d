"""The plan of a fusion group over chunks, without Dask: which steps and reductions run.

``tdsl.dask.plan`` reads the tiled IR (each ``kernel.tile`` and the plan it
records) and the structured-op interface; these tests look at its plans for
groups whose chunks cut rows, columns, reductions and contractions, and for
plans edited by hand in tiled IR.
"""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from tdsl.dask.items import Chunks, GroupPlan, Reduction, Step
from tdsl.dask.plan import plan_tile
from tdsl.dialects.kernel import TileOp
from tdsl.frontend import to_tensordsl
from tdsl.transforms.fuse import fuse
from tdsl.transforms.tile import tile


def plan_of(module: ModuleOp, chunks: dict[str, Chunks]) -> GroupPlan:
    """The plan of the one ``kernel.tile`` of ``module`` over inputs chunked as
    ``chunks`` says (by argument name; the others are in memory)."""
    (func_op,) = [op for op in module.ops if isinstance(op, FuncOp)]
    (tile_op,) = [op for op in func_op.body.block.ops if isinstance(op, TileOp)]
    names = {arg: arg.name_hint for arg in func_op.args}

    def chunks_of(value: object) -> Chunks | None:
        name = names.get(value)  # pyright: ignore[reportCallIssue, reportArgumentType]
        return None if name is None else chunks.get(name)

    return plan_tile(tile_op, chunks_of)


def plan(
    expr: str,
    shapes: dict[str, tuple[int, ...]],
    chunks: dict[str, Chunks],
    memory_budget: int = 1_000_000,
) -> GroupPlan:
    """The plan of the one group of ``expr`` over inputs chunked as ``chunks`` says."""
    module = to_tensordsl(expr, shapes=shapes, dtypes="f32")
    return plan_of(tile(fuse(module, memory_budget), memory_budget), chunks)


def summary(p: GroupPlan) -> list[str]:
    out: list[str] = []
    for item in p.items:
        if isinstance(item, Step):
            grid = "x".join(str(n) for _, n in item.grid) or "1"
            out.append(f"{item.name} {grid}")
        else:
            assert isinstance(item, Reduction)
            out.append(f"{item.name} over axes {list(item.axes)}")
    return out


def test_chunks_along_rows_only_make_one_blockwise_step() -> None:
    p = plan("softmax(x) * 2", {"x": (8, 6)}, {"x": ((4, 4), (6,))})
    assert summary(p) == ["g0 2"]
    assert not p.decomposed


def test_a_softmax_over_cut_rows_runs_its_decomposition_in_passes() -> None:
    p = plan("softmax(x)", {"x": (8, 6)}, {"x": ((4, 4), (3, 3))})
    assert p.decomposed
    assert summary(p) == [
        "g0_pass1 2x2",
        "g0_pass1_max over axes [1]",
        "g0_pass3 2x2",
        "g0_pass3_sum over axes [1]",
        "g0_pass5 2x2",
    ]
    step = p.items[-1]
    assert isinstance(step, Step)
    # the normalizing map reads x and both row statistics, one block per row chunk
    assert [r.dims for r in step.reads] == [(0, 1), (0, None), (0, None)]
    assert "tensordsl.exp" in step.source and "tensordsl.div" in step.source


def test_a_column_reduction_is_a_tree_reduction_then_a_map() -> None:
    p = plan("x - mean(x, axis=0)", {"x": (8, 6)}, {"x": ((2, 2, 2, 2), (6,))})
    assert summary(p) == ["g0_pass1 4", "g0_pass1_mean over axes [0]", "g0_pass3 4"]
    (reduction,) = [i for i in p.items if isinstance(i, Reduction)]
    # partials are sums in the accumulator dtype; the last combination divides
    assert "tensordsl.sum" in reduction.combine and "tensordsl.div" not in reduction.combine
    assert "tensordsl.div" in reduction.aggregate and "8.0" in reduction.aggregate


@pytest.mark.parametrize(
    ("w_chunks", "expected"),
    [(((3, 3), (4,)), ((4,),)), (((6,), (2, 2)), ((2, 2),))],
)
def test_a_contraction_is_whole_and_columns_follow_the_right_operand(
    w_chunks: Chunks, expected: Chunks
) -> None:
    p = plan("relu(x @ w)", {"x": (8, 6), "w": (6, 4)}, {"x": ((4, 4), (3, 3)), "w": w_chunks})
    (step,) = p.items
    assert isinstance(step, Step)
    x_read, w_read = step.reads
    assert x_read.chunks == ((4, 4), (6,))  # rows cut, the contraction whole
    assert w_read.chunks == ((6,), *expected)


def test_a_matmul_needed_by_later_passes_is_a_part_of_its_own() -> None:
    p = plan("softmax(x @ w)", {"x": (8, 6), "w": (6, 4)}, {"x": ((8,), (6,)), "w": ((6,), (2, 2))})
    assert p.parts == 2 and p.decomposed
    assert summary(p) == [
        "g0.0_pass1 2",  # the matmul and the row maxima's partials
        "g0.0_pass1_max over axes [1]",
        "g0.1_pass1 2",
        "g0.1_pass1_sum over axes [1]",
        "g0.1_pass3 2",
    ]


def test_the_recorded_plan_is_followed_where_the_chunks_fit_it() -> None:
    # the default plan keeps the rows whole: row chunks run it as recorded
    p = plan("x - max(x, axis=1, keepdims=True)", {"x": (8, 6)}, {"x": ((4, 4), (6,))})
    assert p.recorded and summary(p) == ["g0 2"]


def test_chunks_finer_than_the_plan_schedule_their_blocks_by_the_same_rules() -> None:
    # the plan keeps the rows whole; chunks that cut them are a level above its tiles
    p = plan("x - max(x, axis=1, keepdims=True)", {"x": (8, 6)}, {"x": ((4, 4), (3, 3))})
    assert not p.recorded
    assert summary(p) == ["g0_pass1 2x2", "g0_pass1_max over axes [1]", "g0_pass3 2x2"]


def test_a_plan_that_cuts_the_rows_cuts_them_at_its_tiles() -> None:
    # under a budget of 4 elements the plan cuts the rows of 6 into tiles of 2 (sweeps
    # [3, 1, 1, 3]: exp and max in pass 1, exp again and sub in pass 3); x has one
    # chunk along them, so the blocks are the plan's tiles
    expr = "exp(x) - max(exp(x), axis=1, keepdims=True)"
    p = plan(expr, {"x": (8, 6)}, {"x": ((4, 4), (6,))}, 4)
    assert p.recorded
    assert summary(p) == ["g0_pass1 2x3", "g0_pass1_max over axes [1]", "g0_pass3 2x3"]
    step = p.items[0]
    assert isinstance(step, Step) and step.reads[0].chunks == ((4, 4), (2, 2, 2))
