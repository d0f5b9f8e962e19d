"""What runs a lowered main function besides its machine code: a
:class:`FunctionPlan` of its arguments (role, shape, dtype, and what a ``const``,
``view`` or ``error`` argument needs) and the calls its body makes, read from the
lowered IR (:func:`read_plan`) and stored as JSON-ready data in the disk cache."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from tdsl.errors import internal_error
from tdsl.runtime.compile import NativeCompileError

if TYPE_CHECKING:
    from xdsl.dialects import func

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class _Call:
    """One call of a main function: the callee and, per operand, a main argument index
    (``int``) or a constant (``("const", value)``)."""

    callee: str
    operands: tuple[int | tuple[str, int], ...]
    group: bool
    """A group function: operands 0 and 1 are its tile range."""
    scratch_limit: int | None = None
    """For a group: the scratch (elements) its plan allows, all threads together."""
    serial: bool = False
    """A group whose loops call BLAS (which has threads of its own): where its tiles are
    shared among threads, each runs its BLAS calls on one thread (OpenBLAS's count is
    set to 1 for the call); where that cannot be set, one thread runs its tiles (the
    name is from when that was always so)."""


@dataclass(frozen=True)
class _Arg:
    role: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    data: Array | None = field(default=None, compare=False)
    """A ``const`` argument's values (C-contiguous, read-only), passed on every call."""
    view: tuple[int, int] | None = None
    """A ``view`` argument's window: the argument it lies in, and the element offset of
    its first element there."""
    error: tuple[int, int, str] | None = None
    """An ``error`` argument's gather: the axis it takes along, that axis's extent and
    where the gather is in the source (``file:line:col`` or empty): a bad index is
    reported there, as NumPy words it."""


def _arg(role: str, shape: tuple[int, ...], dtype: np.dtype[Any], data: Sequence[Any]) -> _Arg:
    """An argument from :meth:`FunctionPlan.to_data`'s entry (a ``const`` one's values as
    base64 text)."""
    if role == "view":
        source, offset = data
        return _Arg(role, shape, dtype, view=(int(source), int(offset)))
    if role == "error":
        axis, extent, where = data
        return _Arg(role, shape, dtype, error=(int(axis), int(extent), str(where)))
    if role != "const":
        return _Arg(role, shape, dtype)
    (text,) = data
    values = np.frombuffer(base64.b64decode(str(text)), dtype).reshape(shape)
    return _Arg(role, shape, dtype, values)


@dataclass(frozen=True)
class FunctionPlan:
    """What runs a lowered main function besides machine code: its name, each
    argument's role (``in``, ``out``, ``tmp``, ``scratch``, ``const``, ``view``), shape and
    dtype (a ``const`` one's values, a ``view`` one's window), and
    the calls its body makes, in order."""

    name: str
    args: tuple[_Arg, ...]
    calls: tuple[_Call, ...]

    def to_data(self) -> dict[str, Any]:
        """The plan as JSON-ready values (lists, strings, ints)."""
        return {
            "name": self.name,
            "args": [
                [a.role, list(a.shape), a.dtype.str]
                + ([] if a.data is None else [base64.b64encode(a.data.tobytes()).decode()])
                + ([] if a.view is None else list(a.view))
                + ([] if a.error is None else list(a.error))
                for a in self.args
            ],
            "calls": [
                [
                    c.callee,
                    [list(x) if isinstance(x, tuple) else x for x in c.operands],
                    c.group,
                    c.scratch_limit,
                    c.serial,
                ]
                for c in self.calls
            ],
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> FunctionPlan:
        """The plan :meth:`to_data` gave (raises ``KeyError``, ``TypeError`` or
        ``ValueError`` on anything else)."""
        args = tuple(
            _arg(str(entry[0]), tuple(int(d) for d in entry[1]), np.dtype(str(entry[2])), entry[3:])
            for entry in data["args"]
        )
        calls = tuple(
            _Call(
                str(callee),
                tuple(int(x) if isinstance(x, int) else (str(x[0]), int(x[1])) for x in operands),
                bool(group),
                None if limit is None else int(limit),
                bool(rest[0]) if rest else False,
            )
            for callee, operands, group, limit, *rest in data["calls"]
        )
        return cls(str(data["name"]), args, calls)


def read_plan(fn: func.FuncOp, roles_attr: str) -> FunctionPlan:
    """The plan of a lowered main function: its arguments' roles and types, its calls."""
    from xdsl.dialects import arith, func
    from xdsl.dialects.builtin import (
        ArrayAttr,
        DenseArrayBase,
        DenseIntOrFPElementsAttr,
        IntegerAttr,
        IntegerType,
        MemRefType,
        StringAttr,
    )
    from xdsl.ir import Attribute, BlockArgument

    from tdsl.backend.llvm.llvm_types import UNSIGNED_ARGS_ATTR
    from tdsl.backend.llvm.loops_common import (
        CONSTANTS_ATTR,
        SCRATCH_LIMIT_ATTR,
        SERIAL_ATTR,
        VIEWS_ATTR,
    )
    from tdsl.backend.llvm.loops_gather import ERROR_PLACES_ATTR, ERRORS_ATTR
    from tdsl.dialects.structured import element_dtype
    from tdsl.dialects.tensordsl import dense_to_numpy

    roles = [
        cast(StringAttr, r).data for r in cast(ArrayAttr[Attribute], fn.attributes[roles_attr])
    ]
    consts = iter(cast(ArrayAttr[Attribute], fn.attributes.get(CONSTANTS_ATTR, ArrayAttr([]))))
    windows: dict[int, tuple[int, int]] = {}
    found = fn.attributes.get(VIEWS_ATTR)
    if found is not None:
        flat = cast(DenseArrayBase, found).get_values()
        for k in range(0, len(flat), 3):
            windows[int(flat[k])] = (int(flat[k + 1]), int(flat[k + 2]))
    gathers: dict[int, tuple[int, int, str]] = {}
    found = fn.attributes.get(ERRORS_ATTR)
    if found is not None:
        flat = cast(DenseArrayBase, found).get_values()
        places = cast(ArrayAttr[StringAttr], fn.attributes.get(ERROR_PLACES_ATTR, ArrayAttr([])))
        where = [p.data for p in places.data]
        for k in range(0, len(flat), 3):
            at = where[k // 3] if k // 3 < len(where) else ""
            gathers[int(flat[k])] = (int(flat[k + 1]), int(flat[k + 2]), at)
    found = fn.attributes.get(UNSIGNED_ARGS_ATTR)
    marked = cast("DenseArrayBase[IntegerType]", found).get_values() if found is not None else ()
    unsigned = {int(k) for k in marked}
    args: list[_Arg] = []
    for role, arg in zip(roles, fn.body.block.args, strict=True):
        t = cast(MemRefType[Attribute], arg.type)
        element = t.get_element_type()
        dtype = element_dtype(element)
        if arg.index in unsigned:  # written signless by the loops stage
            dtype = np.dtype(f"uint{cast(IntegerType, element).bitwidth}")
        if dtype is None:
            raise internal_error(
                f"native plan: argument {arg.index} of @{fn.sym_name.data} has the element "
                f"type {element}, which has no NumPy dtype",
                op=fn,
            )
        data = None
        if role == "const":
            values = dense_to_numpy(cast(DenseIntOrFPElementsAttr, next(consts)), dtype)
            data = np.ascontiguousarray(values, dtype).reshape(tuple(t.get_shape()))
            data.flags.writeable = False
        args.append(
            _Arg(
                role,
                tuple(t.get_shape()),
                dtype,
                data,
                windows.get(arg.index),
                gathers.get(arg.index),
            )
        )
    calls: list[_Call] = []
    for op in fn.body.block.ops:
        if isinstance(op, func.CallOp):
            operands: list[int | tuple[str, int]] = []
            for v in op.arguments:
                if isinstance(v, BlockArgument):
                    operands.append(v.index)
                else:
                    owner = v.owner
                    value = owner.value if isinstance(owner, arith.ConstantOp) else None
                    if not isinstance(value, IntegerAttr):
                        raise internal_error(
                            f"native plan: an operand of the call to {op.callee} is neither "
                            "an argument nor an integer arith.constant",
                            op=op,
                        )
                    operands.append(("const", cast(IntegerAttr[Any], value).value.data))
            name = op.callee.root_reference.data
            group = bool(op.arguments) and not isinstance(op.arguments[0], BlockArgument)
            limit = op.attributes.get(SCRATCH_LIMIT_ATTR)
            calls.append(
                _Call(
                    name,
                    tuple(operands),
                    group,
                    cast(IntegerAttr[Any], limit).value.data
                    if isinstance(limit, IntegerAttr)
                    else None,
                    SERIAL_ATTR in op.attributes,
                )
            )
        elif not isinstance(op, arith.ConstantOp | func.ReturnOp):
            raise NativeCompileError(f"unexpected '{op.name}' in a lowered main function")
    return FunctionPlan(fn.sym_name.data, tuple(args), tuple(calls))


__all__ = ["FunctionPlan", "read_plan"]
