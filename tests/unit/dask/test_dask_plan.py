"""The plan of a fusion group over chunks, without Dask: which steps and reductions run.

``tdsl.dask.plan`` reads only the fusion report and the structured-op
interface; these tests look at its plans for groups whose chunks cut rows,
columns, reductions and contractions.
"""

from __future__ import annotations

import pytest

from tdsl.dask.plan import Chunks, GroupPlan, Reduction, Step, plan_group
from tdsl.frontend import to_tensordsl
from tdsl.transforms.fuse import fusion_report


def plan(expr: str, shapes: dict[str, tuple[int, ...]], chunks: dict[str, Chunks]) -> GroupPlan:
    """The plan of the one group of ``expr`` over inputs chunked as ``chunks`` says."""
    module = to_tensordsl(expr, shapes=shapes, dtypes="f32")
    (block_plan,) = fusion_report(module).plans
    (group,) = block_plan.groups
    names = {arg.name_hint: arg for arg in block_plan.block.args}

    def chunks_of(value: object) -> Chunks | None:
        for name, arg in names.items():
            if arg is value and name is not None:
                return chunks.get(name)
        return None

    return plan_group(
        group.name, [*group.constants, *group.ops], group.inputs, group.results, chunks_of
    )


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
