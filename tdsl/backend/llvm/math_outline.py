"""Math functions expanded once per process, in functions LLVM inlines.

The approximations (:mod:`tdsl.backend.llvm.math_approx`, :mod:`~tdsl.backend.llvm.math_erf`,
:mod:`~tdsl.backend.llvm.math_pow`, :mod:`~tdsl.backend.llvm.math_trig`) expand each
math op into 30 to 200 ``arith`` ops, which the conversion then turns into as many
``llvm`` ops.  A kernel often applies one math function in several places (softmax's
``exp`` in each sweep that needs it, a chain of ``tanh``), and kernels compiled in one
process apply the same few functions again and again.

So, before the approximations, every op of one kind (its name, types, attributes and
properties) in a module becomes a ``func.call`` of a private function holding that op
once (:func:`outline_math`)::

    func.func private @__tdsl_math_tanh_f32(%x: f32) -> f32
        attributes {passthrough = ["alwaysinline"]} {
      %y = math.tanh %x : f32
      func.return %y : f32
    }

(shown before its conversion).  The module gets that function in its ``llvm`` dialect
form: the conversion of a module holding only that function, done once per process and
per kind and cloned into each module that needs it (with the C library declarations it
calls).  In ``python benchmarks/compile_time.py stages`` (two runs against the code before,
2026-12-05) that took ``tdsl-convert-to-llvm`` of the 64x64 ``softmax(A, axis=0)`` from
76-77 ms to 55-59 ms, and of a kernel of five functions from 174-176 ms to 60-65 ms.

``passthrough`` is MLIR's list of LLVM function attributes (kept by
``tdsl-convert-to-llvm`` on the ``llvm.func``, given to LLVM by
:func:`tdsl.runtime.compile.llvm_ir`): ``alwaysinline`` makes LLVM's inliner put the
body back at every call before it vectorizes the loops, so the machine code is that
of the expansion written at each use, and the function, being internal, is gone.  A
function called many times is kept whole instead (:mod:`tdsl.runtime.vector_math`).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable
from typing import cast

from xdsl.dialects import func, llvm, math
from xdsl.dialects.builtin import (
    ArrayAttr,
    Float32Type,
    Float64Type,
    FunctionType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Block, Operation, Region
from xdsl.rewriter import Rewriter

from tdsl.errors import internal_error

OUTLINED: tuple[type[Operation], ...] = (
    math.ExpOp,
    math.ExpM1Op,
    math.LogOp,
    math.Log1pOp,
    math.TanhOp,
    math.SinhOp,
    math.CoshOp,
    math.ErfOp,
    math.PowFOp,
    math.SinOp,
    math.CosOp,
)
"""The ops the approximations expand (f32 and f64)."""

PASSTHROUGH = "passthrough"
"""The ``func.func`` (and ``llvm.func``) attribute listing LLVM function attributes."""

PREFIX = "__tdsl_math_"


def _key(op: Operation) -> tuple[object, ...]:
    return (
        op.name,
        tuple(str(t) for t in op.operand_types),
        tuple(str(t) for t in op.result_types),
        tuple(sorted((k, str(v)) for k, v in op.attributes.items())),
        tuple(sorted((k, str(v)) for k, v in op.properties.items())),
    )


def _outlinable(op: Operation) -> bool:
    return (
        isinstance(op, OUTLINED)
        and len(op.results) == 1
        and isinstance(op.results[0].type, Float32Type | Float64Type)
    )


def outline_math(module: ModuleOp, convert: Callable[[ModuleOp], None]) -> None:
    """Turn every op of :data:`OUTLINED` in ``module`` into a call of one private
    always-inline function per kind, in its ``llvm`` dialect form: what ``convert`` (the
    approximations and the conversion to ``llvm``) makes of a module holding only that
    function, computed once per process and kind and cloned here, with the external
    declarations it calls that ``module`` lacks (this module's docstring)."""
    groups: defaultdict[tuple[object, ...], list[Operation]] = defaultdict(list)
    for op in module.walk():
        if _outlinable(op):
            groups[_key(op)].append(op)
    taken = {op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp | llvm.FuncOp)}
    declarations: list[llvm.FuncOp] = []
    for kind, ops in groups.items():
        first = ops[0]
        base = f"{PREFIX}{first.name.removeprefix('math.')}_{first.results[0].type}"
        name = _fresh(base, taken)
        for made in _converted(kind, first, base, convert):
            if made.body.blocks:
                copy = made.clone()
                copy.sym_name = StringAttr(name)
                module.body.block.add_op(copy)
            elif made.sym_name.data not in taken:
                taken.add(made.sym_name.data)
                declarations.append(made.clone())
        for op in ops:
            Rewriter.replace_op(op, func.CallOp(name, list(op.operands), list(op.result_types)))
    module.body.block.add_ops(declarations)


_CONVERTED: dict[tuple[object, ...], tuple[llvm.FuncOp, ...]] = {}
"""The ``llvm`` dialect form of each outlined math function converted in this process,
by kind (:func:`_key`): a handful of entries (the math functions of f32 and f64, by
their attributes)."""

_CONVERTED_LOCK = threading.Lock()


def _converted(
    kind: tuple[object, ...], first: Operation, name: str, convert: Callable[[ModuleOp], None]
) -> tuple[llvm.FuncOp, ...]:
    """The function ``name`` holding an op like ``first`` (of kind ``kind``), converted."""
    with _CONVERTED_LOCK:
        found = _CONVERTED.get(kind)
    if found is not None:
        return found
    inputs, outputs = list(first.operand_types), list(first.result_types)
    block = Block(arg_types=inputs)
    body = first.create(
        operands=list(block.args),
        result_types=outputs,
        attributes=dict(first.attributes),
        properties=dict(first.properties),
    )
    block.add_ops([body, func.ReturnOp(*body.results)])
    function = func.FuncOp(
        name, FunctionType.from_lists(inputs, outputs), Region(block), visibility="private"
    )
    function.attributes[PASSTHROUGH] = ArrayAttr([StringAttr("alwaysinline")])
    alone = ModuleOp([function])
    convert(alone)
    made = tuple(alone.body.block.ops)
    for op in made:
        if not isinstance(op, llvm.FuncOp):  # pragma: no cover - convert makes functions
            raise internal_error(f"convert-to-llvm: a math function made '{op.name}'")
        op.detach()
    with _CONVERTED_LOCK:
        return cast(tuple[llvm.FuncOp, ...], _CONVERTED.setdefault(kind, made))


def _fresh(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        candidate, n = f"{name}_{n}", n + 1
    taken.add(candidate)
    return candidate


__all__ = ["OUTLINED", "PASSTHROUGH", "outline_math"]
