"""Kernels of the steps of a Dask plan (:mod:`tdsl.dask.plan`).

The shape of a value's first block, the text of a step's ``func.func`` module
of tensordsl IR, and the kernels and accumulator types of the reductions a
plan combines across chunks (an op's partial ops).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from tdsl.dialects.kernel_plan import (
    Dims,
)
from tdsl.dialects.structured import (
    PartialOps,
    element_type,
    tensor_shape,
)
from tdsl.errors import TdslIRError, internal_error


def block_shape(value: SSAValue, dims: Dims, chunks: Sequence[tuple[int, ...]]) -> list[int]:
    """The shape of ``value``'s first block."""
    return [
        extent if d is None else (chunks[d][0] if chunks[d] else 0)
        for extent, d in zip(tensor_shape(value), dims, strict=True)
    ]


def module_text(block: Block, results: Sequence[SSAValue]) -> str:
    block.add_op(ReturnOp(*results))
    main = FuncOp("main", ([a.type for a in block.args], [v.type for v in results]), Region(block))
    module = ModuleOp([main])
    module.verify()
    return str(module)


def reduction_kernel(op: Operation, shape: Sequence[int], count: int | None) -> str:
    """``op``'s partial ops on concatenated partials of ``shape``, then (with a ``count``)
    its finalize ops."""
    s = partial_ops_of(op)
    block = Block(arg_types=[TensorType(element_type(acc_type(op)), shape)])
    ops, value = s.partial_ops([block.args[0]])
    for new in ops:
        block.add_op(new)
    if count is not None:
        final_ops, value = s.finalize_ops(value, count)
        for new in final_ops:
            block.add_op(new)
    return module_text(block, [value])


def partial_ops_of(op: Operation) -> PartialOps:
    """``op`` as a reduction with partial ops; a located error for one without (the plan
    takes such an op's reduced dims whole, so it never accumulates across chunks)."""
    if not isinstance(op, PartialOps):
        raise TdslIRError(f"'{op.name}' accumulates across chunks but has no partial ops")
    return op


def acc_type(op: Operation) -> TensorType:
    """The type of ``op``'s partial of its whole operand."""
    scratch = Block(arg_types=[v.type for v in op.operands])
    t = partial_ops_of(op).partial_ops(list(scratch.args))[1].type
    if not isinstance(t, TensorType):
        raise internal_error(f"dask: the partial of '{op.name}' is a {t}, not a tensor", op=op)
    return t  # pyright: ignore[reportUnknownVariableType]
