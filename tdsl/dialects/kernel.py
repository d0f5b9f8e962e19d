"""The ``kernel`` dialect: fusion groups and their tiled schedules.

``kernel`` only holds structure; the compute inside stays ``tensordsl``.

* ``kernel.fused`` is a group of ops that run as one kernel.  Its operands are
  the group's inputs, its results the only values it materializes; its body
  computes on whole tensors and ends in ``kernel.yield``.
* ``kernel.tile`` is a fused group scheduled as a loop over tiles of its
  parallel *iteration space*.  For every operand and result an affine map says
  which slice of it a tile touches (see :class:`TileOp`); the body computes one
  tile and yields it.  It records the scratch (in elements) one tile needs.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import cast

from xdsl.dialects.builtin import (
    I64,
    AffineMapAttr,
    ArrayAttr,
    DenseArrayBase,
    IntegerAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, Region, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineMap
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, IsTerminator, Pure, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects.tensordsl import FloatTensorConstr, tensor_shape


def _types_str(types: Sequence[Attribute]) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


def _check_region_signature(
    op: IRDLOperation,
    region: Region,
    arg_types: Sequence[Attribute],
    yield_types: Sequence[Attribute],
    what: str,
) -> None:
    block = region.block
    got = [a.type for a in block.args]
    if got != list(arg_types):
        raise VerifyException(
            f"'{op.name}' op body arguments {_types_str(got)} do not match the {what} "
            f"{_types_str(arg_types)}"
        )
    term = block.last_op
    if not isinstance(term, YieldOp):
        raise VerifyException(f"'{op.name}' op body must end in kernel.yield")
    yielded = [v.type for v in term.values]
    if yielded != list(yield_types):
        raise VerifyException(
            f"'{op.name}' op body yields {_types_str(yielded)} but the op expects "
            f"{_types_str(yield_types)}"
        )


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends the body of a ``kernel.fused`` or ``kernel.tile``, returning its values.

    ```mlir
    kernel.yield %0, %1 : tensor<8x8xf32>, tensor<8xf32>
    ```
    """

    name = "kernel.yield"

    values = var_operand_def()

    assembly_format = "($values^ `:` type($values))? attr-dict"
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(FusedOp, TileOp), Pure()))

    def __init__(self, *values: SSAValue | Operation) -> None:
        super().__init__(operands=[[SSAValue.get(v) for v in values]])


@irdl_op_definition
class FusedOp(IRDLOperation):
    """A fusion group: ops that run as one kernel and materialize only its results.

    The body's block arguments stand for the operands (same types, same order);
    the body computes on whole tensors with ``tensordsl`` ops and yields the
    results.  A value the rest of the function uses is a result; every other
    intermediate stays inside.  ``group`` names the group in reports and in
    generated code; ``budget`` is the memory budget (in elements) that
    ``tdsl-fuse`` was given, which ``tdsl-tile`` then schedules the group under.

    ```mlir
    %y = kernel.fused(%x, %w, %b) group "g0" budget 1000000 : (tensor<64x128xf32>, tensor<128x256xf32>, tensor<256xf32>) -> tensor<64x256xf32> {
    ^bb0(%x1: tensor<64x128xf32>, %w1: tensor<128x256xf32>, %b1: tensor<256xf32>):
      %0 = tensordsl.matmul %x1, %w1 : (tensor<64x128xf32>, tensor<128x256xf32>) -> tensor<64x256xf32>
      %1 = tensordsl.add %0, %b1 : (tensor<64x256xf32>, tensor<256xf32>) -> tensor<64x256xf32>
      %2 = tensordsl.relu %1 : tensor<64x256xf32>
      kernel.yield %2 : tensor<64x256xf32>
    }
    ```
    """

    name = "kernel.fused"

    inputs = var_operand_def(FloatTensorConstr)
    outputs = var_result_def(FloatTensorConstr)
    group = opt_prop_def(StringAttr)
    budget = opt_prop_def(IntegerAttr[I64])
    body = region_def("single_block")

    assembly_format = (
        "`(` $inputs `)` (`group` $group^)? (`budget` $budget^)? attr-dict `:` "
        "functional-type($inputs, $outputs) $body"
    )
    traits = traits_def(RecursiveMemoryEffect())

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
        group: str | None = None,
        budget: int | None = None,
    ) -> None:
        props: dict[str, Attribute] = {}
        if group is not None:
            props["group"] = StringAttr(group)
        if budget is not None:
            props["budget"] = IntegerAttr(budget, i64)
        super().__init__(
            operands=[list(inputs)],
            result_types=[list(result_types)],
            regions=[body],
            properties=props,
        )

    @property
    def budget_value(self) -> int | None:
        return None if self.budget is None else self.budget.value.data

    def verify_(self) -> None:
        if self.budget is not None and self.budget.value.data <= 0:
            raise VerifyException(
                f"'{self.name}' op memory budget {self.budget.value.data} must be positive"
            )
        _check_region_signature(
            self,
            self.body,
            [v.type for v in self.inputs],
            [r.type for r in self.outputs],
            "operands",
        )


def dim_map(num_dims: int, dims: Sequence[int | None]) -> AffineMapAttr:
    """The map whose result ``j`` is ``d<dims[j]>``, or the constant 0 (whole dim) for None."""
    results = tuple(AffineConstantExpr(0) if d is None else AffineDimExpr(d) for d in dims)
    return AffineMapAttr(AffineMap(num_dims, 0, results))


def map_dims(attr: AffineMapAttr) -> tuple[int | None, ...]:
    """Per operand dim: the iteration dim it follows, or None when taken whole."""
    out: list[int | None] = []
    for expr in attr.data.results:
        if isinstance(expr, AffineDimExpr):
            out.append(expr.position)
        elif isinstance(expr, AffineConstantExpr) and expr.value == 0:
            out.append(None)
        else:
            raise ValueError(f"unsupported tile map result {expr} in {attr.data}")
    return tuple(out)


@irdl_op_definition
class TileOp(IRDLOperation):
    """A fusion group run as a loop over tiles of its parallel iteration space.

    ``space`` is the extent of each iteration dimension and ``tiles`` the tile
    size along it (a tile size equal to the extent leaves the dim untiled; the
    last tile along a dim may be smaller: remainder tiles are legal).  For each
    operand (``ins``) and each result (``outs``) an affine map from the
    iteration dims ``(d0, ..., dn)`` to the operand's dims says which slice a
    tile touches: result ``d<i>`` means the operand dim runs along iteration dim
    ``i`` (its extent equals ``space[i]``, the tile takes the tile's range of
    it); the constant ``0`` means the dim is taken whole (a broadcast dim, or a
    contraction/row dim that every tile needs entirely).  An output map must
    name every tiled dim, so tiles never write the same slice twice.

    The body's block arguments have the slice types of a full tile, and it
    yields the result slices of a full tile; on a remainder tile the same body
    runs on smaller slices.  ``scratch`` is the number of elements one tile
    allocates for the values computed inside it (intermediate tiles, after
    reuse of dead buffers): the memory budget bounds it.

    ```mlir
    %y = kernel.tile(%x, %w, %b) group "g0" space [64, 256] tiles [16, 256] scratch 8192
        ins [affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d1)>]
        outs [affine_map<(d0, d1) -> (d0, d1)>]
        : (tensor<64x128xf32>, tensor<128x256xf32>, tensor<256xf32>) -> tensor<64x256xf32> {
    ^bb0(%x1: tensor<16x128xf32>, %w1: tensor<128x256xf32>, %b1: tensor<256xf32>):
      %0 = tensordsl.matmul %x1, %w1 : (tensor<16x128xf32>, tensor<128x256xf32>) -> tensor<16x256xf32>
      %1 = tensordsl.add %0, %b1 : (tensor<16x256xf32>, tensor<256xf32>) -> tensor<16x256xf32>
      %2 = tensordsl.relu %1 : tensor<16x256xf32>
      kernel.yield %2 : tensor<16x256xf32>
    }
    ```
    """

    name = "kernel.tile"

    inputs = var_operand_def(FloatTensorConstr)
    outputs = var_result_def(FloatTensorConstr)
    group = opt_prop_def(StringAttr)
    space = prop_def(DenseArrayBase.constr(I64))
    tiles = prop_def(DenseArrayBase.constr(I64))
    scratch = prop_def(IntegerAttr[I64])
    in_maps = prop_def(ArrayAttr[AffineMapAttr])
    out_maps = prop_def(ArrayAttr[AffineMapAttr])
    body = region_def("single_block")

    assembly_format = (
        "`(` $inputs `)` (`group` $group^)? `space` $space `tiles` $tiles `scratch` $scratch "
        "`ins` $in_maps `outs` $out_maps attr-dict `:` "
        "functional-type($inputs, $outputs) $body"
    )
    traits = traits_def(RecursiveMemoryEffect())

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
        *,
        space: Sequence[int],
        tiles: Sequence[int],
        scratch: int,
        in_maps: Sequence[AffineMapAttr],
        out_maps: Sequence[AffineMapAttr],
        group: str | None = None,
    ) -> None:
        props: dict[str, Attribute] = {
            "space": DenseArrayBase.from_list(i64, list(space)),
            "tiles": DenseArrayBase.from_list(i64, list(tiles)),
            "scratch": IntegerAttr(scratch, i64),
            "in_maps": ArrayAttr(in_maps),
            "out_maps": ArrayAttr(out_maps),
        }
        if group is not None:
            props["group"] = StringAttr(group)
        super().__init__(
            operands=[list(inputs)],
            result_types=[list(result_types)],
            regions=[body],
            properties=props,
        )

    # -- accessors -----------------------------------------------------------

    @property
    def space_value(self) -> tuple[int, ...]:
        return self.space.get_values()

    @property
    def tiles_value(self) -> tuple[int, ...]:
        return self.tiles.get_values()

    @property
    def scratch_value(self) -> int:
        return self.scratch.value.data

    @property
    def input_dims(self) -> tuple[tuple[int | None, ...], ...]:
        """For each operand, per dim: the iteration dim it follows or None (whole)."""
        return tuple(map_dims(m) for m in self.in_maps.data)

    @property
    def output_dims(self) -> tuple[tuple[int | None, ...], ...]:
        """For each result, per dim: the iteration dim it follows or None (whole)."""
        return tuple(map_dims(m) for m in self.out_maps.data)

    def tile_starts(self) -> Iterator[tuple[int, ...]]:
        """The start of every tile, in row-major order.

        A zero-extent dim still runs one (empty) tile, so that results which do
        not follow that dim are computed.
        """
        ranges = [
            range(0, max(extent, 1), size)
            for extent, size in zip(self.space_value, self.tiles_value, strict=True)
        ]
        return itertools.product(*ranges)

    def tile_slice(self, dims: Sequence[int | None], start: Sequence[int]) -> tuple[slice, ...]:
        """The slice of a value whose dims follow ``dims`` for the tile at ``start``."""
        space, tiles = self.space_value, self.tiles_value
        return tuple(
            slice(None) if d is None else slice(start[d], min(start[d] + tiles[d], space[d]))
            for d in dims
        )

    def full_tile_type(self, value_type: Attribute, dims: Sequence[int | None]) -> Attribute:
        """The type of a value's slice for a full (not remainder) tile."""
        t = cast(TensorType[Attribute], value_type)
        shape = [
            extent if d is None else min(self.tiles_value[d], extent)
            for extent, d in zip(t.get_shape(), dims, strict=True)
        ]
        return TensorType(t.get_element_type(), shape)

    # -- verification --------------------------------------------------------

    def verify_(self) -> None:
        space, tiles = self.space_value, self.tiles_value
        rank = len(space)
        if len(tiles) != rank:
            raise VerifyException(
                f"'{self.name}' op has {len(tiles)} tile sizes for a {rank}-d iteration space"
            )
        for i, (extent, size) in enumerate(zip(space, tiles, strict=True)):
            if extent < 0:
                raise VerifyException(f"'{self.name}' op space extent {extent} is negative")
            if size <= 0:
                raise VerifyException(
                    f"'{self.name}' op tile size {size} along d{i} must be positive"
                )
        if self.scratch_value < 0:
            raise VerifyException(f"'{self.name}' op scratch {self.scratch_value} is negative")
        if len(self.in_maps.data) != len(self.inputs):
            raise VerifyException(
                f"'{self.name}' op has {len(self.in_maps.data)} input maps for "
                f"{len(self.inputs)} operands"
            )
        if len(self.out_maps.data) != len(self.outputs):
            raise VerifyException(
                f"'{self.name}' op has {len(self.out_maps.data)} output maps for "
                f"{len(self.outputs)} results"
            )
        arg_types: list[Attribute] = []
        for kind, values, maps in (
            ("operand", self.inputs, self.in_maps.data),
            ("result", self.outputs, self.out_maps.data),
        ):
            for idx, (value, m) in enumerate(zip(values, maps, strict=True)):
                dims = self._check_map(kind, idx, value.type, m)
                if kind == "result":
                    tiled = {i for i in range(rank) if tiles[i] < space[i]}
                    missing = tiled - {d for d in dims if d is not None}
                    if missing:
                        raise VerifyException(
                            f"'{self.name}' op result #{idx} map {m.data} does not name tiled "
                            f"dims {sorted(missing)}: tiles would overwrite each other"
                        )
                arg_types.append(self.full_tile_type(value.type, dims))
        n_in = len(self.inputs)
        _check_region_signature(
            self, self.body, arg_types[:n_in], arg_types[n_in:], "full-tile operand slices"
        )

    def _check_map(
        self, kind: str, idx: int, value_type: Attribute, m: AffineMapAttr
    ) -> tuple[int | None, ...]:
        space = self.space_value
        amap = m.data
        if amap.num_dims != len(space) or amap.num_symbols != 0:
            raise VerifyException(
                f"'{self.name}' op {kind} #{idx} map {amap} must have {len(space)} dims "
                "and no symbols"
            )
        try:
            dims = map_dims(m)
        except ValueError as err:
            raise VerifyException(f"'{self.name}' op {kind} #{idx}: {err}") from None
        # A tile of a dim named twice would be a diagonal, not a slice; that is
        # harmless only when the dim is not tiled (every tile takes all of it).
        named = [d for d in dims if d is not None]
        repeated = {d for d in named if named.count(d) > 1}
        tiled = {d for d in repeated if self.tiles_value[d] < space[d]}
        if tiled:
            raise VerifyException(
                f"'{self.name}' op {kind} #{idx} map {amap} names the tiled dim "
                f"d{min(tiled)} twice: its tile would be a diagonal, not a slice"
            )
        shape = tensor_shape(value_type)
        if len(dims) != len(shape):
            raise VerifyException(
                f"'{self.name}' op {kind} #{idx} map {amap} has {len(dims)} results for "
                f"{value_type} of rank {len(shape)}"
            )
        for extent, d in zip(shape, dims, strict=True):
            if d is not None and extent != space[d]:
                raise VerifyException(
                    f"'{self.name}' op {kind} #{idx} ({value_type}) runs along d{d} with "
                    f"extent {extent}, but the iteration space has {space[d]}"
                )
        return dims


Kernel = Dialect("kernel", [FusedOp, TileOp, YieldOp], [])
