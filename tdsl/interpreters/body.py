"""Element-wise ops on whole NumPy arrays, from their scalar bodies: the interpreter's view
of an op's one statement of semantics.

An element-wise op has no ``evaluate`` of its own.  Its body is built once per op
class, operand and result types (:func:`~tdsl.dialects.structured.body_of`), then
walked applying one NumPy function per scalar op (the table of
:mod:`tdsl.scalar_numpy`, which the numpy target's default lowering reads too) to
whole arrays, operands broadcasting as NumPy does, IEEE exceptions silent: never
one Python call per element.

``f16`` bodies run on ``f32`` and round once (``element_body`` widens them), as NumPy
computes its ``f16`` ufuncs; an op whose body is one scalar op thus gives NumPy's result.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from tdsl.dialects.structured import body_of, numpy_dtype
from tdsl.scalar_numpy import constant_array, numpy_function, scalar_dtype

Array = np.ndarray[Any, Any]


def evaluate_body(op: Operation, *args: Array) -> tuple[Array, ...]:
    """``op``'s results on whole operand arrays, from its scalar body (see the module
    docstring): operands broadcast as NumPy does, results in the result dtypes."""
    body = body_of(op)
    env: dict[SSAValue, Array] = {
        a: np.asarray(x, dtype=scalar_dtype(a.type))
        for a, x in zip(body.block.args, args, strict=True)
    }
    with np.errstate(all="ignore"):
        for inner in body.block.ops:
            if isinstance(inner, arith.ConstantOp):
                env[inner.result] = constant_array(inner)
                continue
            value = numpy_function(inner)(*(env[v] for v in inner.operands))
            env[inner.results[0]] = np.asarray(value, dtype=scalar_dtype(inner.results[0].type))
        # the operands' broadcast shape: a remainder tile is smaller than the types say
        shape = np.broadcast_shapes(*(np.shape(x) for x in args))
        return tuple(
            np.array(np.broadcast_to(env[v], shape), dtype=numpy_dtype(r.type))
            for v, r in zip(body.results, op.results, strict=True)
        )


__all__ = ["evaluate_body"]
