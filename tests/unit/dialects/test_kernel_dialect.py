"""The kernel dialect from Python: building, accessors, tile geometry and verifier errors."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import test as test_dialect
from xdsl.dialects.builtin import AffineMapAttr, Float32Type, ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects import tensordsl as td
from tdsl.dialects.kernel import FusedOp, Kernel, TileOp, YieldOp, dim_map, map_dims
from tdsl.dialects.kernel_plan import Buffer
from tdsl.dialects.structured import IteratorType

F32 = Float32Type()


def t(*shape: int) -> TensorType[Attribute]:
    return TensorType(F32, shape)


def values(*types: Attribute) -> list[SSAValue]:
    return list(test_dialect.TestOp(result_types=types).results)


def identity_body(arg_types: Sequence[Attribute], yield_count: int | None = None) -> Region:
    """A body that yields its first ``yield_count`` arguments (default: all)."""
    block = Block(arg_types=arg_types)
    with ImplicitBuilder(block) as args:
        YieldOp(*args[: len(args) if yield_count is None else yield_count])
    return Region(block)


def tile_op(
    input_types: Sequence[Attribute],
    result_types: Sequence[Attribute],
    body_types: Sequence[Attribute],
    *,
    space: Sequence[int],
    tiles: Sequence[int],
    ins: Sequence[Sequence[int | None]],
    outs: Sequence[Sequence[int | None]],
    scratch: Sequence[Buffer] = (),
    iterators: Sequence[IteratorType] | None = None,
    yield_count: int | None = None,
) -> TileOp:
    n = len(space)
    return TileOp(
        values(*input_types),
        result_types,
        identity_body(body_types, yield_count),
        space=space,
        iterators=[IteratorType.PARALLEL] * n if iterators is None else iterators,
        tiles=tiles,
        scratch=scratch,
        in_maps=[dim_map(n, d) for d in ins],
        out_maps=[dim_map(n, d) for d in outs],
    )


# -- kernel.fused -------------------------------------------------------------------


def test_fused_build_and_accessors() -> None:
    x, b = values(t(4, 8), t(8))
    block = Block(arg_types=[t(4, 8), t(8)])
    with ImplicitBuilder(block) as (x1, b1):
        s = td.AddOp(x1, b1)
        YieldOp(s, td.SumOp(s, 1))
    op = FusedOp([x, b], [t(4, 8), t(4)], Region(block), group="g0", budget=512)
    op.verify()
    assert list(op.inputs) == [x, b]
    assert [r.type for r in op.outputs] == [t(4, 8), t(4)]
    assert op.group is not None and op.group.data == "g0"
    assert op.budget_value == 512
    plain = FusedOp([x], [t(4, 8)], identity_body([t(4, 8)]))
    plain.verify()
    assert plain.group is None and plain.budget_value is None


@pytest.mark.parametrize(
    "make,message",
    [
        (
            lambda: FusedOp(values(t(4)), [t(4)], identity_body([t(4)]), budget=-5),
            "'kernel.fused' op memory budget -5 must be positive",
        ),
        (
            # (found by fuzzing: it verified, then the native plan refused it as an option)
            lambda: FusedOp(values(t(4)), [t(4)], identity_body([t(4)]), budget=2**62 + 1),
            "'kernel.fused' op memory budget 4611686018427387905 must be at most 2**62",
        ),
        (
            lambda: FusedOp(values(t(4)), [t(4)], identity_body([t(5)])),
            "'kernel.fused' op body arguments (tensor<5xf32>) do not match the operands "
            "(tensor<4xf32>)",
        ),
        (
            lambda: FusedOp(values(t(4)), [t(4), t(4)], identity_body([t(4)])),
            "'kernel.fused' op body yields (tensor<4xf32>) but the op expects "
            "(tensor<4xf32>, tensor<4xf32>)",
        ),
    ],
    ids=["budget", "huge budget", "arguments", "yields"],
)
def test_fused_verify_errors(make: Any, message: str) -> None:
    with pytest.raises(VerifyException, match=re.escape(message)):
        make().verify()


def test_yield_outside_a_kernel_op() -> None:
    source = test_dialect.TestOp(result_types=[t(4)])
    module = ModuleOp([source, YieldOp(source)])
    with pytest.raises(
        VerifyException,
        match=re.escape("expects parent op to be one of 'kernel.fused', 'kernel.tile'"),
    ):
        module.verify()


# -- maps -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "num_dims,dims,text",
    [
        (2, [0, None], "(d0, d1) -> (d0, 0)"),
        (2, [None, 1], "(d0, d1) -> (0, d1)"),
        (2, [1], "(d0, d1) -> (d1)"),
        (1, [], "(d0) -> ()"),
        (0, [], "() -> ()"),
        (3, [2, 0, None], "(d0, d1, d2) -> (d2, d0, 0)"),
    ],
)
def test_dim_map_and_map_dims(num_dims: int, dims: list[int | None], text: str) -> None:
    attr = dim_map(num_dims, dims)
    assert str(attr.data) == text
    assert map_dims(attr) == tuple(dims)


@pytest.mark.parametrize(
    "result", [AffineExpr.dimension(0) + 1, AffineExpr.constant(1), AffineExpr.dimension(0) * 2]
)
def test_map_dims_rejects_other_maps(result: AffineExpr) -> None:
    with pytest.raises(ValueError, match="unsupported tile map result"):
        map_dims(AffineMapAttr(AffineMap(1, 0, (result,))))


# -- kernel.tile geometry ---------------------------------------------------------------


def test_tile_accessors_and_geometry() -> None:
    op = tile_op(
        [t(10, 6), t(6, 5), t(5)],
        [t(10, 5)],
        [t(4, 6), t(6, 5), t(5)],
        space=[10, 5, 6],
        tiles=[4, 5, 6],
        ins=[(0, 2), (2, 1), (1,)],
        outs=[(0, 1)],
        scratch=[Buffer(np.dtype(np.float32), 20)],
        iterators=[IteratorType.PARALLEL, IteratorType.PARALLEL, IteratorType.REDUCTION],
        yield_count=0,
    )
    assert op.space_value == (10, 5, 6) and op.tiles_value == (4, 5, 6)
    assert op.scratch_value == 20
    assert op.scratch_buffers == (Buffer(np.dtype(np.float32), 20),)
    assert op.iterator_types == (
        IteratorType.PARALLEL,
        IteratorType.PARALLEL,
        IteratorType.REDUCTION,
    )
    assert op.input_dims == ((0, 2), (2, 1), (1,))
    assert op.output_dims == ((0, 1),)
    assert list(op.tile_starts()) == [(0, 0, 0), (4, 0, 0), (8, 0, 0)]
    assert op.tile_slice((0, 2), (8, 0, 0)) == (slice(8, 10), slice(0, 6))
    assert op.tile_slice((2, 1), (4, 0, 0)) == (slice(0, 6), slice(0, 5))
    assert op.full_tile_type(t(10, 6), (0, 2)) == t(4, 6)
    assert op.full_tile_type(t(5), (1,)) == t(5)


def test_tile_starts_are_row_major_with_remainders() -> None:
    op = tile_op(
        [t(5, 3)],
        [t(5, 3)],
        [t(2, 2)],
        space=[5, 3],
        tiles=[2, 2],
        ins=[(0, 1)],
        outs=[(0, 1)],
    )
    op.verify()
    starts = list(op.tile_starts())
    assert starts == [(0, 0), (0, 2), (2, 0), (2, 2), (4, 0), (4, 2)]
    assert op.tile_slice((0, 1), (4, 2)) == (slice(4, 5), slice(2, 3))
    # Tiles cover the space exactly once.
    covered = sorted(
        (i, j)
        for start in starts
        for i in range(*op.tile_slice((0, 1), start)[0].indices(5))
        for j in range(*op.tile_slice((0, 1), start)[1].indices(3))
    )
    assert covered == [(i, j) for i in range(5) for j in range(3)]


def test_tile_larger_than_the_space_and_0d_space() -> None:
    op = tile_op([t(3)], [t(3)], [t(3)], space=[3], tiles=[8], ins=[(0,)], outs=[(0,)])
    op.verify()
    assert list(op.tile_starts()) == [(0,)]
    assert op.full_tile_type(t(3), (0,)) == t(3)
    scalar = tile_op([t()], [t()], [t()], space=[], tiles=[], ins=[()], outs=[()])
    scalar.verify()
    assert list(scalar.tile_starts()) == [()]
    assert scalar.tile_slice((), ()) == ()


TILE_ERRORS: list[tuple[str, dict[str, Any], str]] = [
    (
        "tile count",
        dict(space=[8, 4], tiles=[2], ins=[(0, 1)], outs=[(0, 1)], body=[t(2, 4)]),
        "'kernel.tile' op has 1 tile sizes for a 2-d iteration space",
    ),
    (
        "negative extent",
        dict(space=[-8], tiles=[2], ins=[(0,)], outs=[(0,)], body=[t(8)], shape=(8,)),
        "'kernel.tile' op space extent -8 is negative",
    ),
    (
        "tile size",
        dict(space=[8, 4], tiles=[2, 0], ins=[(0, 1)], outs=[(0, 1)], body=[t(2, 4)]),
        "'kernel.tile' op tile size 0 along d1 must be positive",
    ),
    (
        "scratch",
        dict(
            space=[8, 4],
            tiles=[2, 4],
            ins=[(0, 1)],
            outs=[(0, 1)],
            body=[t(2, 4)],
            scratch=[Buffer(np.dtype(np.float32), 8)],
        ),
        "'kernel.tile' op records scratch [memref<8xf32>] but its plan needs []",
    ),
    (
        "iterators",
        dict(
            space=[8, 4],
            tiles=[2, 4],
            ins=[(0, 1)],
            outs=[(0, 1)],
            body=[t(2, 4)],
            iterators=[IteratorType.REDUCTION, IteratorType.PARALLEL],
        ),
        '\'kernel.tile\' op iterators do not match its body, which needs ["parallel", "parallel"]',
    ),
    (
        "iterator count",
        dict(
            space=[8, 4],
            tiles=[2, 4],
            ins=[(0, 1)],
            outs=[(0, 1)],
            body=[t(2, 4)],
            iterators=[IteratorType.PARALLEL],
        ),
        "'kernel.tile' op has 1 iterator kinds for a 2-d iteration space",
    ),
    (
        "input map count",
        dict(space=[8, 4], tiles=[2, 4], ins=[], outs=[(0, 1)], body=[t(2, 4)]),
        "'kernel.tile' op has 0 input maps for 1 operands",
    ),
    (
        "output map count",
        dict(space=[8, 4], tiles=[2, 4], ins=[(0, 1)], outs=[], body=[t(2, 4)]),
        "'kernel.tile' op has 0 output maps for 1 results",
    ),
    (
        "whole dim as 0",
        dict(space=[8, 4], tiles=[2, 4], ins=[(0, 1)], outs=[(None, 1)], body=[t(2, 4)]),
        "'kernel.tile' op result #0 (tensor<8x4xf32>) maps a dim of extent 8 to 0: only "
        "broadcast dims of extent 1 may",
    ),
    (
        "result along other dims",
        dict(space=[8, 8], tiles=[8, 8], ins=[(0, 1)], outs=[(1, 0)], body=[t(8, 8)], shape=(8, 8)),
        "'kernel.tile' op result #0 map (d0, d1) -> (d1, d0) does not follow the dims its value "
        "runs along (d0, d1)",
    ),
    (
        "map rank",
        dict(space=[8, 4], tiles=[2, 4], ins=[(0,)], outs=[(0, 1)], body=[t(2, 4)]),
        "'kernel.tile' op operand #0 map (d0, d1) -> (d0) has 1 results for tensor<8x4xf32> "
        "of rank 2",
    ),
    (
        "extent",
        dict(space=[8, 4], tiles=[2, 4], ins=[(1, 0)], outs=[(0, 1)], body=[t(4, 2)]),
        "'kernel.tile' op operand #0 (tensor<8x4xf32>) runs along d1 with extent 8, but the "
        "iteration space has 4",
    ),
    (
        "body arguments",
        dict(space=[8, 4], tiles=[2, 4], ins=[(0, 1)], outs=[(0, 1)], body=[t(8, 4)]),
        "'kernel.tile' op body arguments (tensor<8x4xf32>) do not match the full-tile operand "
        "slices (tensor<2x4xf32>)",
    ),
]


@pytest.mark.parametrize(
    "spec,message", [c[1:] for c in TILE_ERRORS], ids=[c[0] for c in TILE_ERRORS]
)
def test_tile_verify_errors(spec: dict[str, Any], message: str) -> None:
    shape = spec.pop("shape", (8, 4))
    body = spec.pop("body")
    op = tile_op([t(*shape)], [t(*shape)], body, **spec)
    with pytest.raises(VerifyException, match=re.escape(message)):
        op.verify()


def test_tile_map_with_wrong_dim_count() -> None:
    (x,) = values(t(8))
    op = TileOp(
        [x],
        [t(8)],
        identity_body([t(2)]),
        space=[8],
        iterators=[IteratorType.PARALLEL],
        tiles=[2],
        scratch=[],
        in_maps=[dim_map(2, [0])],
        out_maps=[dim_map(1, [0])],
    )
    with pytest.raises(VerifyException, match=re.escape("map (d0, d1) -> (d0) must have 1 dims")):
        op.verify()


def test_dialect_object() -> None:
    assert Kernel.name == "kernel"
    assert {op.name for op in Kernel.operations} == {"kernel.fused", "kernel.tile", "kernel.yield"}
