"""``kernel.tile``: a fused group scheduled as loops over tiles of its iteration space,
with the maps, iterator kinds and scratch buffers it records, how it is built from a
plan (:meth:`TileOp.planned`), and the verifier that checks what it records against the
schedule and scratch plan of its body (:mod:`tdsl.dialects.kernel_plan`)."""

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
    MemRefType,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import irdl_op_definition, opt_prop_def, prop_def
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects.kernel_fused import GroupOp, buffer_type, memref_buffer
from tdsl.dialects.kernel_plan import (
    Buffer,
    Dims,
    GroupBody,
    LoopsPlan,
    PlanError,
    TileSchedule,
    body_state,
    derived_kinds,
    loops_plan_error,
    plan_scratch,
    propagate_dims,
    schedule,
)
from tdsl.dialects.structured import (
    IteratorType,
    element_dtype,
    is_constant,
    map_dims,
    structured,
    tensor_shape,
)


@irdl_op_definition
class TileOp(GroupOp):
    """A fusion group run as loops over tiles of its iteration space.

    ``space`` is the extent of each iteration dimension, ``iterators`` its kind
    (``"parallel"``; ``"reduction"`` when an op of the body reduces along it;
    else ``"normalize"`` when one normalizes along it, as ``softmax`` does; else
    ``"scan"`` when one scans along it, as ``cumsum`` does) and ``tiles`` the
    tile size along it (a tile size equal
    to the extent leaves the dim untiled; the last tile may be smaller).  For
    each operand (``ins``) and each result (``outs``) an affine map from the
    iteration dims ``(d0, ..., dn)`` to the value's dims says which slice a tile
    touches: result ``d<i>`` means the value's dim runs along iteration dim
    ``i`` (the tile takes the tile's range of it); the constant ``0`` means a
    broadcast dim of extent 1.  An operand read along two maps is two operands.

    The body's block arguments have the slice types of a full tile; it yields
    the slices of the results.  Parallel tiles are independent.  When a
    reduction dim is tiled, the body runs in passes over its tiles, and an op
    reducing along it accumulates partial results over the tiles (see
    :mod:`tdsl.dialects.kernel_plan`); a result not running along a reduction
    dim is the full reduction.  A tiled scan dim is looped like a reduction dim,
    in order: a scan along it carries each row's running values from one tile
    to the next in a buffer of its own (one element per row).

    The rest of the line records the plan every target runs.  ``sweeps`` (one
    entry per op of the body that is not a constant, in order) is the step of
    the schedule that first computes each op: even steps are *stages* (once per
    parallel tile), odd ones *passes* over the tiles of the tiled reduction
    dims; an op runs no earlier than what it reads is ready, and a later pass
    computes the per-tile values of an earlier one again, unless they are
    ``staged`` (positions in the same list): a staged value is kept whole along
    the tiled reduction dims, in a buffer of its own, by the pass that computes
    it.  Without ``sweeps`` every op runs in the earliest step it can.
    ``scratch`` lists the buffers one tile allocates (intermediate tiles,
    workspaces, accumulators, staged values, after reuse); the verifier checks
    that the recorded sweeps and staged values can run, and that ``scratch`` is
    what they need, and the memory budget bounds its total.

    ``loops tiles [...] stored [...] blas [...]`` (optional, written by
    ``tdsl-plan-loops``) is the native target's plan of the group's loops, which
    ``tdsl-lower-to-loops`` runs as recorded: the tile of each dim (reduction,
    normalize and scan dims whole: the loops run along them element by element; a
    reduction dim at most this op's tile, for attention's keys, or where the loops run
    this op's passes), the values the loops keep in scratch for later loop nests
    (numbered in order over the results of the body's ops that are not constants, after
    ``tdsl-tile``'s decomposition of the ops it decomposes), and the positions of
    the matmuls a BLAS call computes; ``limit N`` (optional) the scratch they use, all
    threads together, where more than ``scratch`` (``tdsl-plan-loops{memory-budget=B}``
    lets them use what the budget leaves; else 4,096 more: ``LOOPS_SCRATCH_SLACK``);
    ``summed`` (optional) that they run this op's passes along the contraction of a
    matmul where they cut it, each tile's product added into its result, by BLAS or in
    loops (else BLAS loops over its tiles within their sweeps).  Other targets ignore it.

    ```mlir
    %y = kernel.tile(%x, %w, %b) group "g0" space [64, 256, 128] iterators ["parallel", "parallel", "reduction"] tiles [16, 256, 128] scratch [] sweeps [0, 0, 0]
        ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d1)>]
        outs [affine_map<(d0, d1, d2) -> (d0, d1)>]
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

    space = prop_def(DenseArrayBase.constr(I64))
    iterators = prop_def(ArrayAttr[StringAttr])
    tiles = prop_def(DenseArrayBase.constr(I64))
    scratch = prop_def(ArrayAttr[MemRefType])
    in_maps = prop_def(ArrayAttr[AffineMapAttr])
    out_maps = prop_def(ArrayAttr[AffineMapAttr])
    sweeps = opt_prop_def(DenseArrayBase.constr(I64))
    staged = opt_prop_def(DenseArrayBase.constr(I64))
    loops_tiles = opt_prop_def(DenseArrayBase.constr(I64))
    loops_stored = opt_prop_def(DenseArrayBase.constr(I64))
    loops_blas = opt_prop_def(DenseArrayBase.constr(I64))
    loops_limit = opt_prop_def(IntegerAttr[I64])
    loops_summed = opt_prop_def(UnitAttr)

    assembly_format = (
        "`(` $inputs `)` (`group` $group^)? `space` $space `iterators` $iterators "
        "`tiles` $tiles `scratch` $scratch (`sweeps` $sweeps^)? (`staged` $staged^)? "
        "(`loops` `tiles` $loops_tiles^ `stored` $loops_stored `blas` $loops_blas)? "
        "(`limit` $loops_limit^)? (`summed` $loops_summed^)? "
        "`\\n` ` ` ` ` `ins` $in_maps `\\n` ` ` ` ` `outs` $out_maps "
        "attr-dict `:` functional-type($inputs, $outputs) $body"
    )

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
        *,
        space: Sequence[int],
        iterators: Sequence[IteratorType],
        tiles: Sequence[int],
        scratch: Sequence[Buffer],
        in_maps: Sequence[AffineMapAttr],
        out_maps: Sequence[AffineMapAttr],
        group: str | None = None,
        sweeps: Sequence[int] | None = None,
        staged: Sequence[int] = (),
    ) -> None:
        props: dict[str, Attribute] = {
            "space": DenseArrayBase.from_list(i64, list(space)),
            "iterators": ArrayAttr([StringAttr(str(k)) for k in iterators]),
            "tiles": DenseArrayBase.from_list(i64, list(tiles)),
            "scratch": ArrayAttr([buffer_type(b) for b in scratch]),
            "in_maps": ArrayAttr(in_maps),
            "out_maps": ArrayAttr(out_maps),
        }
        if group is not None:
            props["group"] = StringAttr(group)
        if sweeps is not None:
            props["sweeps"] = DenseArrayBase.from_list(i64, list(sweeps))
        if staged:
            props["staged"] = DenseArrayBase.from_list(i64, sorted(staged))
        super().__init__(
            operands=[list(inputs)],
            result_types=[list(result_types)],
            regions=[body],
            properties=props,
        )

    @classmethod
    def planned(
        cls,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
        *,
        space: Sequence[int],
        tiles: Sequence[int],
        in_maps: Sequence[AffineMapAttr],
        out_maps: Sequence[AffineMapAttr],
        group: str | None = None,
        staged: Sequence[int] = (),
    ) -> TileOp:
        """A tile op whose iterator kinds, sweeps and scratch buffers are derived from
        its body, as ``tdsl-tile`` records them (for IR built by hand); ``staged`` are
        the positions of the body's ops to stage (see the class docstring).

        Raises :class:`~tdsl.dialects.kernel_plan.PlanError` when the body cannot run
        with ``tiles``.
        """
        op = cls(
            inputs,
            result_types,
            body,
            space=space,
            iterators=[IteratorType.PARALLEL] * len(space),
            tiles=tiles,
            scratch=(),
            in_maps=in_maps,
            out_maps=out_maps,
            group=group,
            staged=staged,
        )
        op.properties["iterators"] = ArrayAttr([StringAttr(str(k)) for k in op.derived_iterators()])
        op.record_plan(op.schedule())
        return op

    def record_plan(self, sched: TileSchedule) -> None:
        """Record the sweeps, staged ops and scratch buffers of ``sched`` (a schedule of
        this op's body with its tiles)."""
        body = sched.body
        self.properties["sweeps"] = DenseArrayBase.from_list(
            i64, [sched.step_of[op] for op in body.ops]
        )
        if sched.staged:
            positions = sorted(body.position[op] for op in sched.staged)
            self.properties["staged"] = DenseArrayBase.from_list(i64, positions)
        else:
            self.properties.pop("staged", None)
        self.properties["scratch"] = ArrayAttr(
            [buffer_type(b) for b in plan_scratch(sched).buffers]
        )

    def derived_iterators(self) -> tuple[IteratorType, ...]:
        """The iterator kinds the body needs: ``reduction`` where an op reduces or normalizes."""
        return derived_kinds(self._group_body(()))

    # -- accessors -----------------------------------------------------------

    @property
    def space_value(self) -> tuple[int, ...]:
        return self.space.get_values()

    @property
    def tiles_value(self) -> tuple[int, ...]:
        return self.tiles.get_values()

    @property
    def sweeps_value(self) -> tuple[int, ...] | None:
        """The recorded step of each op of the body that is not a constant (None: the
        earliest each can run in)."""
        return None if self.sweeps is None else self.sweeps.get_values()

    @property
    def staged_value(self) -> tuple[int, ...]:
        """The positions (among the ops that are not constants) of the staged ops."""
        return () if self.staged is None else self.staged.get_values()

    @property
    def loops_plan(self) -> LoopsPlan | None:
        """The native loops' recorded plan (None: not planned yet)."""
        if self.loops_tiles is None or self.loops_stored is None or self.loops_blas is None:
            return None
        return LoopsPlan(
            self.loops_tiles.get_values(),
            self.loops_stored.get_values(),
            self.loops_blas.get_values(),
            None if self.loops_limit is None else self.loops_limit.value.data,
            self.loops_summed is not None,
        )

    def record_loops_plan(self, plan: LoopsPlan | None) -> None:
        """Record (None: drop) the native loops' plan."""
        if plan is None:
            for key in ("tiles", "stored", "blas", "limit", "summed"):
                self.properties.pop(f"loops_{key}", None)
            return
        self.properties["loops_tiles"] = DenseArrayBase.from_list(i64, list(plan.tiles))
        self.properties["loops_stored"] = DenseArrayBase.from_list(i64, list(plan.stored))
        self.properties["loops_blas"] = DenseArrayBase.from_list(i64, list(plan.blas))
        if plan.limit is None:
            self.properties.pop("loops_limit", None)
        else:
            self.properties["loops_limit"] = IntegerAttr(plan.limit, i64)
        if plan.summed:
            self.properties["loops_summed"] = UnitAttr()
        else:
            self.properties.pop("loops_summed", None)

    @property
    def iterator_types(self) -> tuple[IteratorType, ...]:
        return tuple(IteratorType(s.data) for s in self.iterators.data)

    @property
    def scratch_buffers(self) -> tuple[Buffer, ...]:
        return tuple(map(memref_buffer, self.scratch.data))

    @property
    def scratch_value(self) -> int:
        """The scratch of one tile, in elements."""
        return sum(b.elements for b in self.scratch_buffers)

    @property
    def input_dims(self) -> tuple[Dims, ...]:
        """For each operand, per dim: the iteration dim it follows or None (broadcast)."""
        return tuple(map_dims(m.data) for m in self.in_maps.data)

    @property
    def output_dims(self) -> tuple[Dims, ...]:
        """For each result, per dim: the iteration dim it follows or None (broadcast)."""
        return tuple(map_dims(m.data) for m in self.out_maps.data)

    def tile_starts(self) -> Iterator[tuple[int, ...]]:
        """The start of every tile of the whole space, in row-major order.

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

    def group_body(self) -> GroupBody:
        """The body as a :class:`~tdsl.dialects.kernel_plan.GroupBody` (dims from the maps).

        Made once while the op and its body stay as they are: the verifier and each
        target ask for it, and the body keeps the schedules made from it, so the
        recorded plan is worked out once, not once per reader.

        Raises :class:`~tdsl.dialects.kernel_plan.PlanError` when the body's ops
        do not run along the maps consistently.
        """
        key = body_state(self)
        kept = self.__dict__.get("_kept_body")
        if kept is not None and kept[0] == key:
            return kept[1]
        body = self._group_body(self.iterator_types)
        self.__dict__["_kept_body"] = (key, body)
        return body

    def _group_body(self, kinds: tuple[IteratorType, ...]) -> GroupBody:
        block = self.body.block
        ops, yielded = self.body_ops()
        loops: dict[Operation, tuple[int | None, ...]] = {}
        dims = propagate_dims(
            ops, dict(zip(block.args, self.input_dims, strict=True)), len(self.space_value), loops
        )
        reads = {(op, i): dims[v] for op in ops for i, v in enumerate(op.operands)}
        constants = frozenset(r for op in ops if is_constant(op) for r in op.results)
        return GroupBody(
            extents=self.space_value,
            kinds=kinds,
            ops=tuple(op for op in ops if not is_constant(op)),
            dims=dims,
            reads=reads,
            outputs=yielded,
            output_dims=self.output_dims,
            constants=constants,
            known_loop_dims=loops,
        )

    def schedule(self) -> TileSchedule:
        """What one parallel tile runs: the stages and passes of the body, as recorded.

        Raises :class:`~tdsl.dialects.kernel_plan.PlanError` when the recorded plan
        cannot run (the verifier says so first)."""
        return self._recorded_schedule(self.group_body())

    def _recorded_schedule(self, body: GroupBody) -> TileSchedule:
        staged, sweeps = self.recorded_plan(body)
        return schedule(body, self.tiles_value, staged, sweeps)

    def recorded_plan(
        self, body: GroupBody
    ) -> tuple[frozenset[Operation], dict[Operation, int] | None]:
        """The staged ops and the sweep of each op (None: the earliest) the op records,
        for ``body`` (its :meth:`group_body`): what a target passes to
        :func:`~tdsl.dialects.kernel_plan.schedule` with its own tiles.

        Raises :class:`~tdsl.dialects.kernel_plan.PlanError` when they do not fit it."""
        n = len(body.ops)
        sweeps = self.sweeps_value
        if sweeps is not None and len(sweeps) != n:
            raise PlanError(
                f"records {len(sweeps)} sweeps for the {n} ops of its body that are not constants"
            )
        staged = self.staged_value
        for k in staged:
            if not 0 <= k < n:
                raise PlanError(f"stages op #{k}, but its body has {n} ops that are not constants")
        if len(set(staged)) != len(staged):
            raise PlanError("stages an op twice")
        return (
            frozenset(body.ops[k] for k in staged),
            None if sweeps is None else dict(zip(body.ops, sweeps, strict=True)),
        )

    # -- verification --------------------------------------------------------

    def verify_(self) -> None:
        space, tiles = self.space_value, self.tiles_value
        rank = len(space)
        if len(tiles) != rank:
            raise VerifyException(
                f"'{self.name}' op has {len(tiles)} tile sizes for a {rank}-d iteration space"
            )
        if len(self.iterators.data) != rank:
            raise VerifyException(
                f"'{self.name}' op has {len(self.iterators.data)} iterator kinds for a "
                f"{rank}-d iteration space"
            )
        for s in self.iterators.data:
            if s.data not in tuple(IteratorType):
                raise VerifyException(
                    f'\'{self.name}\' op iterator kind "{s.data}" must be "parallel", '
                    '"reduction", "normalize" or "scan"'
                )
        for i, (extent, size) in enumerate(zip(space, tiles, strict=True)):
            if extent < 0:
                raise VerifyException(f"'{self.name}' op space extent {extent} is negative")
            if size <= 0:
                raise VerifyException(
                    f"'{self.name}' op tile size {size} along d{i} must be positive"
                )
        for m in self.scratch.data:
            shape, dtype = m.get_shape(), element_dtype(m.get_element_type())
            plain = m == MemRefType(m.element_type, shape)  # (no layout, no memory space)
            if len(shape) != 1 or shape[0] < 0 or dtype is None or not plain:
                raise VerifyException(
                    f"'{self.name}' op scratch buffer {m} must be a plain 1-d memref of static "
                    "size and of a tensor element type (memref<4096xf32>)"
                )
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
                dims = self._check_map(kind, idx, value.type, m.data)
                arg_types.append(self.full_tile_type(value.type, dims))
        self._verify_loops_plan()
        n_in = len(self.inputs)
        self.check_region_signature(arg_types[:n_in], arg_types[n_in:], "full-tile operand slices")
        self._verify_body()

    def _check_map(self, kind: str, idx: int, value_type: Attribute, amap: AffineMap) -> Dims:
        space = self.space_value
        if amap.num_dims != len(space) or amap.num_symbols != 0:
            raise VerifyException(
                f"'{self.name}' op {kind} #{idx} map {amap} must have {len(space)} dims "
                "and no symbols"
            )
        try:
            dims = map_dims(amap)
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
            if d is None and extent != 1:
                raise VerifyException(
                    f"'{self.name}' op {kind} #{idx} ({value_type}) maps a dim of extent "
                    f"{extent} to 0: only broadcast dims of extent 1 may"
                )
            if d is not None and extent != space[d]:
                raise VerifyException(
                    f"'{self.name}' op {kind} #{idx} ({value_type}) runs along d{d} with "
                    f"extent {extent}, but the iteration space has {space[d]}"
                )
        return dims

    def _verify_loops_plan(self) -> None:
        """The native loops' plan: all of it or none, and as far as it reads without
        lowering (:func:`~tdsl.dialects.kernel_plan.loops_plan_error`)."""
        given = [self.loops_tiles, self.loops_stored, self.loops_blas]
        if any(g is None for g in given) and any(g is not None for g in given):
            raise VerifyException(
                f"'{self.name}' op records part of a loops plan: give `loops tiles [...] "
                "stored [...] blas [...]` whole, or none of it"
            )
        plan = self.loops_plan
        if plan is None:
            for key in ("limit", "summed"):
                if self.properties.get(f"loops_{key}") is not None:
                    raise VerifyException(
                        f"'{self.name}' op records a loops `{key}` without a plan"
                    )
            return
        kinds, tiles = self.iterator_types, self.tiles_value
        error = loops_plan_error(plan, self.space_value, kinds, tiles, self.scratch_value)
        if error is not None:
            raise VerifyException(f"'{self.name}' op {error}")

    def _verify_body(self) -> None:
        ops, yielded = self.body_ops()
        for op in ops:
            if structured(op) is None and not is_constant(op):
                raise VerifyException(
                    f"'{self.name}' op body holds '{op.name}', which does not implement the "
                    "structured-op interface"
                )
        try:
            body = self.group_body()
        except PlanError as err:
            raise VerifyException(f"'{self.name}' op {err}") from None
        kinds = derived_kinds(body)
        if tuple(kinds) != self.iterator_types:
            shown = ", ".join(f'"{k}"' for k in kinds)
            raise VerifyException(
                f"'{self.name}' op iterators do not match its body, which needs [{shown}]"
            )
        for idx, (value, dims) in enumerate(zip(yielded, self.output_dims, strict=True)):
            if value in body.dims and body.dims[value] != dims:
                raise VerifyException(
                    f"'{self.name}' op result #{idx} map {self.out_maps.data[idx].data} does "
                    f"not follow the dims its value runs along {_dims_str(body.dims[value])}"
                )
        try:
            sched = self._recorded_schedule(body)
        except PlanError as err:
            raise VerifyException(f"'{self.name}' op cannot run its recorded plan: {err}") from None
        needed = plan_scratch(sched).buffers
        if sorted(map(_buffer_key, needed)) != sorted(map(_buffer_key, self.scratch_buffers)):
            shown = ", ".join(str(buffer_type(b)) for b in needed)
            raise VerifyException(
                f"'{self.name}' op records scratch {self.scratch} but its plan needs [{shown}]"
            )


def _buffer_key(b: Buffer) -> tuple[str, int]:
    """A buffer as the verifier compares it: the recorded order of buffers is free."""
    return (b.dtype.str, b.elements)


def _dims_str(dims: Dims) -> str:
    return "(" + ", ".join("0" if d is None else f"d{d}" for d in dims) + ")"
