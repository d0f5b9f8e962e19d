"""Element-wise bodies: :func:`element_body` builds an op's scalar body (widening
``f16``), :func:`body_of` caches it as a :class:`Body` block per op signature, and
:func:`checked_decomposition` checks a decomposition against the op it replaces;
:func:`constant_value` reads a constant op's array.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from xdsl.builder import (
    Builder,
    _current_builder,  # pyright: ignore[reportPrivateUsage]
)
from xdsl.dialects import arith
from xdsl.dialects.builtin import FileLineColLoc, Float16Type, StringAttr, f32
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from tdsl.dialects.op_interfaces import Decomposable, SweepDecomposable
from tdsl.dialects.structured_interface import HasConstantValue, is_constant, structured
from tdsl.dialects.structured_loops import IteratorType, Workspace
from tdsl.dialects.structured_types import convert_scalar, element_dtype, element_type, numpy_dtype
from tdsl.errors import SourceLocation, TdslIRError


def checked_decomposition(
    op: Operation, sweeps: bool = False
) -> tuple[list[Operation], SSAValue] | None:
    """``op``'s :meth:`~tdsl.dialects.op_interfaces.Decomposable.decompose` (with
    ``sweeps``, a :class:`~tdsl.dialects.op_interfaces.SweepDecomposable`'s
    ``decompose_sweeps`` too), checked as it is made: None for an op without one, else
    its ops and the value replacing the result.

    The contract: the op has one result; the value has its type; the new ops read only
    the op's operands and values of new ops listed before them; none of them has a
    ``normalize`` dim left.  A decomposition that breaks it is a
    :class:`~tdsl.errors.TdslIRError` located at the op, not a failure in a later pass.
    """
    if isinstance(op, Decomposable):
        decomposed = op.decompose()
    elif sweeps and isinstance(op, SweepDecomposable):
        decomposed = op.decompose_sweeps()
    else:
        decomposed = None
    if decomposed is None:
        return None
    ops, value = decomposed

    def broken(why: str) -> TdslIRError:
        loc = op.location
        where = (
            SourceLocation(loc.filename.data, loc.line.data, max(1, loc.column.data))
            if isinstance(loc, FileLineColLoc)
            else None  # a driver places the error by its op in the input text
        )
        return TdslIRError(f"'{op.name}': its decomposition {why}", where, op=op)

    if len(op.results) != 1:
        raise broken(f"replaces one result, but the op has {len(op.results)}")
    if value.type != op.results[0].type:
        raise broken(f"gives a value of type {value.type}, not the result's {op.results[0].type}")
    known: set[SSAValue] = set(op.operands)
    for new in ops:
        for k, operand in enumerate(new.operands):
            if operand not in known:
                raise broken(
                    f"reads operand {k} of '{new.name}' from outside it (only the op's "
                    "operands and earlier ops of the decomposition may be read)"
                )
        t = structured(new)
        if t is not None and IteratorType.NORMALIZE in t.iterator_types():
            raise broken(f"still holds the row-normalizing op '{new.name}'")
        known.update(new.results)
    if value not in known:
        raise broken("replaces the result by a value none of its ops computes")
    return ops, value


def constant_value(op: Operation) -> np.ndarray[Any, Any] | None:
    """The value of a constant op, or None for other ops."""
    return cast(HasConstantValue, op).constant_value() if is_constant(op) else None


def element_body(op: Operation, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
    """``op``'s :meth:`~StructuredOpInterface.scalar_body` on ``args`` (scalars of its operands'
    element types), the one place ``f16`` is widened: unless the op opts out
    (``F16_IN_F32``), ``f16`` arguments extend to ``f32``, the body runs on ``f32`` and
    each ``f16`` result rounds once at the end.  NumPy computes an ``f16`` ufunc the same
    way, so a body of one op gives NumPy's result, and a body of several ops (``logaddexp``)
    rounds once rather than after each step.  The interpreter, the numpy target's derived
    lowering and the native loops all build bodies through here."""
    s = structured(op)
    if s is None:
        raise TdslIRError(
            f"'{op.name}' does not implement the structured-op interface: it has no scalar body",
            op=op,
        )
    widen = s.F16_IN_F32 and any(isinstance(a.type, Float16Type) for a in args)
    if widen:
        args = [convert_scalar(b, a, f32) if isinstance(a.type, Float16Type) else a for a in args]
    results = s.scalar_body(b, args)
    if not widen:
        return results
    _mark_widened(results, set(args))
    out: list[SSAValue] = []
    for value, result in zip(results, op.results, strict=True):
        element = element_type(result)
        out.append(convert_scalar(b, value, element) if value.type != element else value)
    return tuple(out)


WIDENED_FROM = "tdsl.widened_from"
"""The attribute on a ``math`` or ``tdslmath`` op of a body widened from ``f16``
(``"f16"``): the op runs on ``f32``, and the nans NumPy gives it are ``f16``'s (a target
that follows NumPy's nan signs asks about that type: :mod:`tdsl.backend.llvm.numpy_nans`)."""


WIDENED_DIALECTS = ("math", "tdslmath")
"""The dialects whose ops :data:`WIDENED_FROM` marks: those that can create a nan."""


def _mark_widened(results: Sequence[SSAValue], args: set[SSAValue]) -> None:
    """Set :data:`WIDENED_FROM` on the ``math`` and ``tdslmath`` ops computing ``results``
    from ``args``."""
    seen: set[Operation] = set()
    todo = [v for v in results if v not in args]
    while todo:
        owner = todo.pop().owner
        if not isinstance(owner, Operation) or owner in seen:
            continue
        seen.add(owner)
        if owner.dialect_name() in WIDENED_DIALECTS:
            owner.attributes[WIDENED_FROM] = StringAttr("f16")
        todo.extend(v for v in owner.operands if v not in args)


@dataclass(frozen=True)
class Body:
    """An element-wise op's body built once into a block: its arguments (scalars of the
    operands' element types), its ops and the values it yields."""

    block: Block
    results: tuple[SSAValue, ...]

    def computing(self) -> list[Operation]:
        """The ops that compute (constants aside)."""
        return [o for o in self.block.ops if not isinstance(o, arith.ConstantOp)]

    def single(self) -> Operation | None:
        """The one op computing the result from the arguments, when the body is that op
        (behind the ``f16`` widening): NumPy's ufunc computes it with one rounding."""
        ops = self.computing()
        args = set(self.block.args)
        core = [
            o
            for o in ops
            if not (isinstance(o, arith.ExtFOp) and o.input in args)
            and not (isinstance(o, arith.TruncFOp) and o.result in self.results)
        ]
        if not core and len(ops) == 1:  # a conversion
            return ops[0]
        return core[0] if len(core) == 1 else None

    def slots(self) -> tuple[tuple[int | None, ...], tuple[np.dtype[Any], ...]]:
        """Where a NumPy evaluation of the body, one call per computing op, keeps each
        op's value: per op of :meth:`computing`, the index of its buffer (None for the
        result, written in place), and the dtype of each buffer.  A buffer is reused,
        by a value of its dtype, once every reader of its previous value has run."""
        ops = self.computing()
        last: dict[SSAValue, int] = {}
        for i, o in enumerate(ops):
            for v in o.operands:
                last[v] = i
        where: dict[SSAValue, int] = {}
        free: dict[np.dtype[Any], list[int]] = {}
        dtypes: list[np.dtype[Any]] = []
        assigned: list[int | None] = []
        for i, o in enumerate(ops):
            r = o.results[0]
            if r in self.results:
                assigned.append(None)
            else:
                dtype = element_dtype(r.type) or numpy_dtype(r.type)
                pool = free.setdefault(dtype, [])
                slot = pool.pop() if pool else len(dtypes)
                if slot == len(dtypes):
                    dtypes.append(dtype)
                where[r] = slot
                assigned.append(slot)
            # values read for the last time here (or never read) free their buffers
            for v in {*o.operands, r}:
                if v in where and last.get(v, i) <= i:
                    free.setdefault(dtypes[where[v]], []).append(where.pop(v))
        return tuple(assigned), tuple(dtypes)

    def workspaces(self, shape: tuple[int, ...]) -> tuple[Workspace, ...]:
        """The buffers a NumPy evaluation needs (:meth:`slots`), of the result's tile
        shape; none for a body of one op."""
        if self.single() is not None:
            return ()
        return tuple((shape, dtype) for dtype in self.slots()[1])


_BODIES: dict[tuple[Any, ...], Body] = {}


def body_of(op: Operation) -> Body:
    """``op``'s body (through :func:`element_body`), built once per op class, operand and
    result types and properties."""
    key = (
        type(op),
        tuple(op.operand_types),
        tuple(op.result_types),
        tuple(sorted(op.properties.items(), key=lambda item: item[0])),
    )
    found = _BODIES.get(key)
    if found is None:
        block = Block(arg_types=[element_type(v) for v in op.operands])
        b = Builder(InsertPoint.at_end(block))
        # built apart, even while a caller builds implicitly (as kernel.tile's builder can)
        saved, _current_builder.builder = _current_builder.builder, None
        try:
            results = element_body(op, b, block.args)
        finally:
            _current_builder.builder = saved
        if len(_BODIES) >= 4096:
            _BODIES.clear()
        found = _BODIES[key] = Body(block, tuple(results))
    return found
