"""How the numpy target computes one op on a tile: derived from its scalar body, or a
hand-tuned lowering this target registers for the op's class.

An element-wise op states its semantics once, in its scalar body.  By default the
target derives its code from that body through the table of
:mod:`tdsl.scalar_numpy` (the same table the interpreter evaluates with): a body
of one scalar op is one ``np.<ufunc>(..., out=)`` call, as NumPy computes it (for
``f16``, in ``f32`` rounded once); a body of several is one call per scalar op, each
writing a workspace the op declares (``numpy_workspace``, which the scratch plan
counts), the last writing the result.  ``f16`` bodies run on ``f32`` workspaces and
round once at the end.

Where NumPy has a faster form than the body's (``np.maximum`` against a block of
zeros, one ``np.remainder`` for a body emulating it, a multiplication by the
reciprocal), this module registers a lowering for the op's class: the target owns
its code, the dialect none.  Ops with ``reduction`` or ``normalize`` dims still
bring their own ``lower_numpy`` (not yet moved here).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from tdsl.dialects import tensordsl as td
from tdsl.dialects.structured import (
    NumpyTileBuilder,
    NumpyValue,
    StructuredOpInterface,
    body_of,
)
from tdsl.dtypes import FLOAT_DTYPES
from tdsl.errors import TdslIRError
from tdsl.lowering.numpy_emit.program import TileGen
from tdsl.scalar_numpy import (
    NumpyFunction,
    constant_array,
    numpy_function,
    tdsl_convert,
)

Lowering = Callable[[Any, TileGen, Sequence[Any], Sequence[Any]], None]
"""``lowering(op, g, args, results)``: emit the calls computing ``results`` of one tile."""

LOWERINGS: dict[type[Operation], Lowering] = {}
"""Op class -> the lowering this target registers for it (subclasses inherit it)."""


def register(*op_classes: type[Operation]) -> Callable[[Lowering], Lowering]:
    """Register the decorated function as the numpy lowering of ``op_classes``."""

    def add(fn: Lowering) -> Lowering:
        for cls in op_classes:
            LOWERINGS[cls] = fn
        return fn

    return add


def _registered(op: Operation) -> Lowering | None:
    for cls in type(op).__mro__:
        found = LOWERINGS.get(cls)
        if found is not None:
            return found
    return None


def lower_op(
    op: Operation, s: StructuredOpInterface, g: TileGen, args: Sequence[Any], results: Sequence[Any]
) -> None:
    """Emit ``op`` on one tile: its registered lowering, its own ``lower_numpy``, or the
    lowering derived from its body (in that order)."""
    found = _registered(op)
    if found is not None:
        found(op, g, args, results)
    elif type(s).lower_numpy is not StructuredOpInterface.lower_numpy:
        s.lower_numpy(g, args, results)
    else:
        lower_body(op, g, args, results)


# ---------------------------------------------------------------------------
# Derived from the body
# ---------------------------------------------------------------------------


def _call(g: TileGen, fn: NumpyFunction, operands: Sequence[Any], out: Any) -> None:
    if fn is tdsl_convert:
        g.call("np.copyto({out}, {0})", *operands, out=out)
    elif isinstance(fn, np.ufunc) and getattr(np, fn.__name__, None) is fn:
        g.ufunc(fn.__name__, *operands, out=out)
    else:
        name = g.function(fn.__name__, inspect.getsource(fn))
        args = ", ".join(f"{{{i}}}" for i in range(len(operands)))
        g.call(f"{name}({args}, out={{out}})", *operands, out=out)


def lower_body(op: Operation, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    """The lowering derived from ``op``'s scalar body (see the module docstring)."""
    body = body_of(op)
    (out,) = results
    env: dict[SSAValue, Any] = dict(zip(body.block.args, args, strict=True))
    single = body.single()

    def operand(v: SSAValue) -> Any:
        found = env.get(v)
        if found is None:
            owner = v.owner
            if isinstance(owner, arith.ConstantOp):
                return g.constant(constant_array(owner))
            if isinstance(owner, arith.ExtFOp) and single is not None:
                return operand(owner.input)  # NumPy's f16 ufunc widens itself
            raise TdslIRError(f"numpy target: '{op.name}' body value {v} is not computed")
        return found

    if single is not None:
        _call(g, numpy_function(single), [operand(v) for v in single.operands], out)
        return
    (result,) = body.results
    if result in env or isinstance(result.owner, arith.ConstantOp):
        g.call("np.copyto({out}, {0})", operand(result), out=out)
        return
    k = 0
    for inner in body.computing():
        target = out if inner.results[0] is result else g.workspace(k)
        if target is not out:
            k += 1
        _call(g, numpy_function(inner), [operand(v) for v in inner.operands], target)
        env[inner.results[0]] = target


# ---------------------------------------------------------------------------
# Hand-tuned lowerings
# ---------------------------------------------------------------------------


def _ufunc(name: str) -> Lowering:
    def lower(op: Operation, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
        g.ufunc(name, *args, out=results[0])

    return lower


# One NumPy ufunc computes what these bodies spell out in several scalar ops.
for _cls, _name in (
    (td.SignOp, "sign"),
    (td.SquareOp, "square"),
    (td.ReciprocalOp, "reciprocal"),
    (td.CopyOp, "positive"),
    (td.ConjOp, "conjugate"),
    (td.RemainderOp, "remainder"),
    (td.PowerOp, "power"),
    (td.NotOp, "logical_not"),
):
    LOWERINGS[_cls] = _ufunc(_name)


@register(td.ReluOp)
def _relu(op: td.ReluOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    # against a block of zeros: np.maximum with a scalar takes a slow non-SIMD path
    g.ufunc("maximum", args[0], g.fill(args[0], 0.0), out=results[0])


@register(td.NegOp)
def _neg(op: td.NegOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    # NumPy 2.4's np.negative computed in place is wrong on a view whose stride is
    # 16 bytes (f32) or 64 bytes (f64), as a remainder tile's column slice of a
    # scratch buffer can be; multiplying by -1 negates exactly (signed zeros too).
    g.ufunc("multiply", args[0], g.scalar(-1.0, results[0].dtype), out=results[0])


@register(td.OnesLikeOp)
def _ones_like(op: td.OnesLikeOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    g.call("np.copyto({out}, 1)", out=results[0], note="ones_like")


@register(td.WhereOp)
def _where(op: td.WhereOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    (c, a, b), (out,) = args, results
    # np.where allocates: copy b in, then a where the condition holds
    g.call("np.copyto({out}, {0})", b, out=out, note="where(c, a, b)")
    g.call("np.copyto({out}, {0}, where={1})", a, c, out=out)


def _fill_splat(g: NumpyTileBuilder, value: NumpyValue, out: NumpyValue) -> NumpyValue:
    """A one-element constant operand as a block shaped like ``out`` (NumPy's fast path)."""
    constant = g.constant_value(value)
    if constant is None or constant.size != 1 or value.shape == out.shape:
        return value
    return g.fill(out, float(constant.reshape(())))


@register(td.MaximumOp, td.MinimumOp)
def _extremum(
    op: td.MaximumOp | td.MinimumOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]
) -> None:
    out = results[0]
    name = "maximum" if isinstance(op, td.MaximumOp) else "minimum"
    g.ufunc(name, *(_fill_splat(g, a, out) for a in args), out=out)


@register(td.DivOp)
def _divide(op: td.DivOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    (a, b), (out,) = args, results
    if not op.by_reciprocal(b.shape, out.shape):
        g.ufunc("divide", a, b, out=out)
        return
    value = g.constant_value(b)
    if value is not None:
        with np.errstate(divide="ignore"):
            r = g.constant(np.reciprocal(value))
    else:
        r = g.workspace(0)
        g.ufunc("reciprocal", b, out=r, note="divide by a broadcast operand: its reciprocal")
    g.ufunc("multiply", a, r, out=out)


@register(td.SigmoidOp)
def _sigmoid(op: td.SigmoidOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    # max(x >= 0, e) / (1 + e) with e = exp(-|x|): seven calls where the body has nine ops;
    # f16 computes in two f32 workspaces and rounds once, as the body does
    (x,), (out,) = args, results
    e = g.workspace(0)
    num = g.workspace(1) if out.dtype == FLOAT_DTYPES["f16"] else out
    g.ufunc("absolute", x, out=e, note="sigmoid: max(x >= 0, e) / (1 + e) with e = exp(-|x|)")
    g.ufunc("multiply", e, g.scalar(-1.0, e.dtype), out=e)  # not np.negative: see _neg
    g.ufunc("exp", e, out=e)
    g.ufunc("greater_equal", x, g.fill(x, 0.0), out=num)
    g.ufunc("maximum", num, e, out=num)
    g.ufunc("add", e, g.scalar(1.0, e.dtype), out=e)
    g.ufunc("divide", num, e, out=out)


__all__ = ["LOWERINGS", "Lowering", "lower_body", "lower_op", "register"]
