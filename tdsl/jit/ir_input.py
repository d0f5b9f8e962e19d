"""IR a user gives the JIT as text (:func:`tdsl.jit.compiler.build_ir`): the stage of
the pipeline it is at, and a ``tensordsl`` function re-typed for new argument shapes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tdsl.errors import TdslIRError, TdslTypeError

if TYPE_CHECKING:
    from xdsl.dialects.func import FuncOp


def input_stage(func_op: FuncOp) -> str:
    """The stage of the pipeline ``func_op`` is at: ``tiled`` when its computing ops are
    in ``kernel.tile`` groups, ``fused`` when some are in ``kernel.fused`` groups still
    (``tdsl-tile`` tiles those), ``tensordsl`` when none is in a group.  Raises a
    :class:`TdslIRError` for a function that mixes grouped and ungrouped computing ops."""
    from xdsl.dialects.func import ReturnOp

    from tdsl.dialects.kernel import FusedOp, TileOp
    from tdsl.dialects.structured import constant_value

    grouped = {FusedOp: 0, TileOp: 0}
    loose: list[str] = []
    for op in func_op.body.block.ops:
        if isinstance(op, FusedOp | TileOp):
            grouped[type(op)] += 1
        elif not isinstance(op, ReturnOp) and constant_value(op) is None:
            loose.append(op.name)
    if not grouped[FusedOp] and not grouped[TileOp]:
        return "tensordsl"
    if loose:
        raise TdslIRError(
            f"@{func_op.sym_name.data} has ops in kernel groups and '{loose[0]}' outside "
            "them: give tensordsl IR (no groups), or IR that tdsl-fuse grouped"
        )
    return "fused" if grouped[FusedOp] else "tiled"


def retyped_function(func_op: FuncOp, shapes: Sequence[tuple[int, ...]]) -> FuncOp:
    """A copy of ``func_op`` for arguments of ``shapes``, each op re-typed by its own type
    inference (constants are copied as they are).  Raises a :class:`TdslTypeError` for
    shapes an op does not accept."""
    from xdsl.dialects.builtin import TensorType
    from xdsl.dialects.func import FuncOp, ReturnOp
    from xdsl.ir import Block, Region, SSAValue

    from tdsl.dialects.structured import constant_value, element_type
    from tdsl.transforms.iteration_space import require_structured

    inputs = func_op.function_type.inputs.data
    if len(shapes) != len(inputs):
        raise TdslTypeError(
            f"{len(shapes)} shape(s) for the {len(inputs)} argument(s) of @{func_op.sym_name.data}"
        )
    block = Block(
        arg_types=[
            TensorType(element_type(t), shape) for t, shape in zip(inputs, shapes, strict=True)
        ]
    )
    mapping: dict[SSAValue, SSAValue] = {}
    for old, new in zip(func_op.args, block.args, strict=True):
        new.name_hint = old.name_hint
        mapping[old] = new
    returned: list[SSAValue] = []
    for op in func_op.body.block.ops:
        if isinstance(op, ReturnOp):
            returned = [mapping[v] for v in op.operands]
            block.add_op(ReturnOp(*returned))
            break
        if constant_value(op) is not None:
            new_op = op.clone()
        else:
            new_op = require_structured(op).retyped([mapping[v] for v in op.operands])
        block.add_op(new_op)
        for old, new in zip(op.results, new_op.results, strict=True):
            mapping[old] = new
    return FuncOp(
        func_op.sym_name.data,
        ([a.type for a in block.args], [v.type for v in returned]),
        Region(block),
    )


__all__ = ["input_stage", "retyped_function"]
