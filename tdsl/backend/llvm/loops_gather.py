"""The native gather: a ``tensordsl.take`` as a loop nest of its own.

``@<function>_take<n>(a, indices, out, error)`` first checks each index once, in a
nest over the indices alone (so an index is checked even where the result is empty
because another axis of ``a`` is), then runs over the result: per position of the
indices (and the axes before the one taken along) it reads the index once, wraps a
negative one as NumPy does, and copies that slice of ``a``.  An index outside the axis
is never read: the loops read index 0 in its place; the check records the first such
index in ``error`` (``memref<2xi64>``: a flag, then the index), which the runtime reads after the
call and raises as :class:`~tdsl.errors.TdslIndexError`.  The checks are ``arith``
comparisons and selects, no branch, so the loops stay one straight nest.
"""

from __future__ import annotations

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, i64
from xdsl.ir import SSAValue

from tdsl.backend.llvm.loops_common import _Code
from tdsl.dialects.structured import element_type, tensor_shape
from tdsl.dialects.tensordsl import TakeOp

ERRORS_ATTR = "tdsl.errors"
"""The function attribute of its ``error`` arguments: per gather, its error argument,
the axis it takes along and that axis's extent (what the runtime's message says)."""

ERROR_PLACES_ATTR = "tdsl.error_places"
"""The function attribute of where each gather of :data:`ERRORS_ATTR` is in the source,
in its order: ``file:line:col``, or empty where unknown (the runtime's error is there)."""


def emit_take(
    code: _Code, op: TakeOp, a: SSAValue, indices: SSAValue, out: SSAValue, error: SSAValue
) -> None:
    """The loops of ``op`` reading memrefs ``a`` and ``indices`` into ``out``, recording a
    bad index in ``error``."""
    index_shape = tensor_shape(op.indices)
    axis, extent = op.axis_value, op.extent
    before = len(index_shape) + axis  # result dims: a's before the axis, then the indices'
    result = tensor_shape(op.result)
    # every index checked once, in a nest of its own: also where the result is empty
    # because another axis of ``a`` is (the numpy target's check, NumPy's for ``a[:, i]``)
    check, at = code.nest([(d, code.index(0), code.index(n)) for d, n in enumerate(index_shape)])
    raw, bad, _ = _wrapped(check, op, indices, [at[d] for d in range(len(index_shape))], extent)
    # the first bad index: the flag (0 or 1) and the index it was
    first, second = check.index(0), check.index(1)
    zero = check.insert(arith.ConstantOp(IntegerAttr(0, i64)))
    flag = check.insert(memref.LoadOp.get(error, [first]))
    seen = check.insert(memref.LoadOp.get(error, [second]))
    fresh = check.insert(arith.AndIOp(bad, check.insert(arith.CmpiOp(flag, zero, "eq"))))
    check.b.insert(
        memref.StoreOp.get(check.insert(arith.SelectOp(fresh, raw, seen)), error, [second])
    )
    widened = check.insert(arith.ExtUIOp(bad, i64))
    check.b.insert(memref.StoreOp.get(check.insert(arith.OrIOp(flag, widened)), error, [first]))
    outer, coords = code.nest([(d, code.index(0), code.index(result[d])) for d in range(before)])
    where = [coords[d] for d in range(axis, before)]
    _, _, safe = _wrapped(outer, op, indices, where, extent)
    row = outer.insert(arith.IndexCastOp(safe, IndexType()))
    inner, rest = outer.nest(
        [(d, outer.index(0), outer.index(result[d])) for d in range(before, len(result))]
    )
    source = [coords[d] for d in range(axis)] + [row]
    source += [rest[d] for d in range(before, len(result))]
    x = inner.insert(memref.LoadOp.get(a, source))
    inner.b.insert(
        memref.StoreOp.get(
            x,
            out,
            [*(coords[d] for d in range(before)), *(rest[d] for d in range(before, len(result)))],
        )
    )


def _wrapped(
    code: _Code, op: TakeOp, indices: SSAValue, where: list[SSAValue], extent: int
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """The index at ``where`` (as i64), whether it is outside the axis, and the row it
    reads: wrapped as NumPy wraps a negative index, 0 for a bad one."""
    raw = code.insert(memref.LoadOp.get(indices, where))
    if element_type(op.indices) != i64:
        raw = code.insert(arith.ExtSIOp(raw, i64))
    n = code.insert(arith.ConstantOp(IntegerAttr(extent, i64)))
    zero = code.insert(arith.ConstantOp(IntegerAttr(0, i64)))
    negative = code.insert(arith.CmpiOp(raw, zero, "slt"))
    wrapped = code.insert(arith.SelectOp(negative, code.insert(arith.AddiOp(raw, n)), raw))
    low = code.insert(arith.CmpiOp(wrapped, zero, "slt"))
    high = code.insert(arith.CmpiOp(wrapped, n, "sge"))
    bad = code.insert(arith.OrIOp(low, high))
    return raw, bad, code.insert(arith.SelectOp(bad, zero, wrapped))


ERROR_TYPE = IntegerType(64)
"""The element type of an error argument (``memref<2xi64>``)."""

__all__ = ["ERRORS_ATTR", "ERROR_PLACES_ATTR", "ERROR_TYPE", "emit_take"]
