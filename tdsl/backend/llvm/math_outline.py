"""Repeated math functions expanded once per module, in a function LLVM inlines.

A kernel often applies one math function in several places: softmax's ``exp`` in
each sweep that needs it, a chain of ``tanh``, a ``gelu`` in two groups.  The
approximations (:mod:`tdsl.backend.llvm.math_approx`, :mod:`~tdsl.backend.llvm.math_erf`,
:mod:`~tdsl.backend.llvm.math_pow`, :mod:`~tdsl.backend.llvm.math_trig`) expand each such op into 30 to 200 ``arith``
ops, which the conversion then turns into as many ``llvm`` ops: on a chain of 100
``tanh`` that was 26,000 ops created, most of the compile.

So, before the approximations, every op of one kind (its name, types, attributes
and properties) that occurs more than once in a module becomes a ``func.call`` of a
private function holding that op once::

    func.func private @__tdsl_math_tanh_f32(%x: f32) -> f32
        attributes {passthrough = ["alwaysinline"]} {
      %y = math.tanh %x : f32
      func.return %y : f32
    }

The approximation then expands the op in that function only.  ``passthrough`` is
MLIR's list of LLVM function attributes (kept by ``tdsl-convert-to-llvm`` on the
``llvm.func``, given to LLVM by :func:`tdsl.runtime.compile.llvm_ir`):
``alwaysinline`` makes LLVM's inliner put the body back at every call before it
vectorizes the loops, so the machine code is that of the expansion written at each
use, and the function, being internal, is gone.  An op that occurs once is left
where it is.
"""

from __future__ import annotations

from collections import defaultdict

from xdsl.dialects import func, math
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


def outline_repeated_math(module: ModuleOp) -> None:
    """Turn every op of :data:`OUTLINED` whose kind occurs more than once in ``module``
    into a call of one private always-inline function per kind (this module's
    docstring)."""
    groups: defaultdict[tuple[object, ...], list[Operation]] = defaultdict(list)
    for op in module.walk():
        if _outlinable(op):
            groups[_key(op)].append(op)
    taken = {op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)}
    for ops in groups.values():
        if len(ops) < 2:
            continue
        first = ops[0]
        name = _fresh(f"{PREFIX}{first.name.removeprefix('math.')}_{first.results[0].type}", taken)
        inputs = list(first.operand_types)
        outputs = list(first.result_types)
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
        module.body.block.add_op(function)
        for op in ops:
            call = func.CallOp(name, list(op.operands), outputs)
            Rewriter.replace_op(op, call)


def _fresh(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        candidate, n = f"{name}_{n}", n + 1
    taken.add(candidate)
    return candidate


__all__ = ["OUTLINED", "PASSTHROUGH", "outline_repeated_math"]
