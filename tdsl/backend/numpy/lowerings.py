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
its code, the dialect none.  Ops with ``reduction`` or ``normalize`` dims have
their lowerings here too (softmax's reductions and reciprocal, layernorm's
einsum, a sum of products as one einsum), registered by class: whole tiles
(:data:`LOWERINGS`), partials over tiles of a reduction dim (:data:`PARTIALS`)
and the step from an accumulator to the result (:data:`FINALIZERS`).  A
subclass inherits its base's entry, so an op of another dialect built on
``UnaryOp`` or ``ReductionOp`` lowers like tensordsl's.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from tdsl import scalar_numpy
from tdsl.backend.numpy.program import NumpyTileBuilder, NumpyValue, TileGen
from tdsl.dialects import tensordsl as td
from tdsl.dialects.structured import (
    IteratorType,
    ReductionOp,
    ScanOp,
    StructuredOpInterface,
    body_of,
)
from tdsl.dtypes import FLOAT_DTYPES
from tdsl.errors import TdslIRError, internal_error
from tdsl.scalar_numpy import (
    HELPER_CONSTANTS,
    NumpyFunction,
    constant_array,
    numpy_function,
    tdsl_convert,
)

Lowering = Callable[[Any, TileGen, Sequence[Any], Sequence[Any]], None]
"""``lowering(op, g, args, results)``: emit the calls computing ``results`` of one tile."""

PartialLowering = Callable[[Any, TileGen, Sequence[Any], Any], None]
"""``partial(op, g, args, out)``: emit the partial result of one tile into ``out`` (of the
op's accumulator dtype)."""
FinalizeLowering = Callable[[Any, TileGen, Any, Any, int], None]
"""``finalize(op, g, acc, out, count)``: emit the result from the accumulator (``count``
elements combined into each)."""

ScanLowering = Callable[[Any, TileGen, Sequence[Any], Sequence[Any], Any], None]
"""``scan(op, g, args, results, carry)``: emit one tile of a scan along a tiled dim, from
``carry`` (the running values so far, extent 1 along the scan axis), updating it."""

LOWERINGS: dict[type[Operation], Lowering] = {}
"""Op class -> the lowering this target registers for it (subclasses inherit it)."""
PARTIALS: dict[type[Operation], PartialLowering] = {}
"""Op class -> how a tile's partial result is computed (reductions, matmul)."""
FINALIZERS: dict[type[Operation], FinalizeLowering] = {}
"""Op class -> how the result comes from the accumulator (default: a copy)."""
MergeLowering = Callable[[Any, TileGen, Sequence[Any], Sequence[Any]], None]
"""``merge(op, g, acc, partial)``: emit the merge of a tile's partial state into the
accumulator, for a tuple accumulator (one var per component of each; ``acc`` updated)."""

UpdateLowering = Callable[[Any, TileGen, Sequence[Any], Sequence[Any], Sequence[Any]], bool]
"""``update(op, g, args, acc, partial)``: emit taking one tile of ``args`` into the
running state ``acc`` (a tuple accumulator) at once, with ``partial``'s buffers as
scratch: what :data:`PARTIALS` then :data:`MERGES` compute, in fewer calls.  False
(nothing emitted) where it does not apply: the partial and the merge run instead."""

UPDATES: dict[type[Operation], UpdateLowering] = {}
"""Op class -> how a tile is taken into its tuple accumulator in one step (optional: the
partial and the merge otherwise; Dask still merges partials of chunks)."""

SCANS: dict[type[Operation], ScanLowering] = {}
"""Op class -> how one tile of a scan along a tiled dim runs from its carry."""
MERGES: dict[type[Operation], MergeLowering] = {}
"""Op class -> how two states of a tuple accumulator merge (one ufunc merges the others)."""


def _transpose_view(op: Operation) -> str:
    """``{0}.T`` for the reversal, else ``np.transpose({0}, perm)``."""
    if not isinstance(op, td.TransposeOp):
        raise internal_error(f"numpy target: '{op.name}' lowered as a transpose", op=op)
    if op.perm is None:
        return "{0}.T"
    return f"np.transpose({{0}}, {op.permutation})"


def _expand_dims_view(op: Operation) -> str:
    if not isinstance(op, td.ExpandDimsOp):
        raise internal_error(f"numpy target: '{op.name}' lowered as an expand_dims", op=op)
    return f"np.expand_dims({{0}}, {op.axes_value})"


def _squeeze_view(op: Operation) -> str:
    if not isinstance(op, td.SqueezeOp):
        raise internal_error(f"numpy target: '{op.name}' lowered as a squeeze", op=op)
    return f"np.squeeze({{0}}, {op.axes_value})"


VIEWS: dict[type[Operation], str | Callable[[Operation], str]] = {
    td.TransposeOp: _transpose_view,
    td.CastOp: "{0}",
    td.ExpandDimsOp: _expand_dims_view,
    td.SqueezeOp: _squeeze_view,
}
"""Op class -> the view of its operand, a template on ``{0}`` (or a function of the op
giving one), for ops whose ``is_view()`` (a cast is one only to its own type).  An op of
another dialect brings its own as a ``numpy_view_template()`` method."""


def register(*op_classes: type[Operation]) -> Callable[[Lowering], Lowering]:
    """Register the decorated function as the numpy lowering of ``op_classes``."""

    def add(fn: Lowering) -> Lowering:
        for cls in op_classes:
            LOWERINGS[cls] = fn
        return fn

    return add


def _registered(table: dict[type[Operation], Any], op: Operation) -> Any:
    for cls in type(op).__mro__:
        found = table.get(cls)
        if found is not None:
            return found
    return None


def view_template(op: Operation) -> str:
    """The NumPy view an op that ``is_view()`` stands for, as a template on ``{0}``."""
    own = getattr(op, "numpy_view_template", None)
    found: str | Callable[[Operation], str] | None = (
        own() if callable(own) else _registered(VIEWS, op)
    )
    if callable(found):
        found = found(op)
    if found is None:
        raise TdslIRError(f"numpy target: no view registered for '{op.name}'")
    return found


def lower_op(
    op: Operation, s: StructuredOpInterface, g: TileGen, args: Sequence[Any], results: Sequence[Any]
) -> None:
    """Emit ``op`` on one tile: its registered lowering; for a body of several ops whose
    function NumPy has (``NUMPY_UFUNC``), that ufunc; else the lowering derived from its
    body."""
    found: Lowering | None = _registered(LOWERINGS, op)
    ufunc: str | None = getattr(op, "NUMPY_UFUNC", None)
    own = getattr(op, "lower_numpy", None)
    if found is not None:
        found(op, g, args, results)
    elif own is not None:
        # an op of another dialect may bring its own NumPy code (tdsl's ops do not)
        own(g, args, results)
    elif any(k is not IteratorType.PARALLEL for k in s.iterator_types()):
        raise TdslIRError(f"numpy target: no lowering registered for '{op.name}'")
    elif ufunc is not None and body_of(op).single() is None:
        # NumPy has the function: one call, and the op declares no workspaces for it
        g.ufunc(ufunc, *args, out=results[0])
    else:
        lower_body(op, g, args, results)


def lower_scan(
    op: Operation, g: TileGen, args: Sequence[Any], results: Sequence[Any], carry: Any
) -> None:
    """Emit one tile of the scan ``op`` along a tiled dim from ``carry``, updating it: the
    registered scan lowering, or an op's own ``lower_numpy_scan`` (another dialect's)."""
    found: ScanLowering | None = _registered(SCANS, op)
    own = getattr(op, "lower_numpy_scan", None)
    if found is not None:
        found(op, g, args, results, carry)
    elif own is not None:
        own(g, args, results, carry)
    else:
        raise TdslIRError(f"numpy target: no scan lowering registered for '{op.name}'")


def lower_partial(op: Operation, g: TileGen, args: Sequence[Any], out: Any) -> None:
    """Emit the partial result of ``op`` over one tile of its reduction dims into ``out``."""
    found: PartialLowering | None = _registered(PARTIALS, op)
    if found is None:
        raise TdslIRError(f"numpy target: no partial lowering registered for '{op.name}'")
    found(op, g, args, out)


def lower_merge(op: Operation, g: TileGen, acc: Sequence[Any], partial: Sequence[Any]) -> None:
    """Emit the merge of a tile's partial state into ``acc`` (a tuple accumulator)."""
    found: MergeLowering | None = _registered(MERGES, op)
    if found is None:
        raise TdslIRError(f"numpy target: no merge lowering registered for '{op.name}'")
    found(op, g, acc, partial)


def lower_update(
    op: Operation, g: TileGen, args: Sequence[Any], acc: Sequence[Any], partial: Sequence[Any]
) -> None:
    """Emit taking one tile into ``acc`` (a tuple accumulator): the op's own update
    (:data:`UPDATES`) where it has one that applies, else its partial into ``partial``
    and the merge."""
    found: UpdateLowering | None = _registered(UPDATES, op)
    if found is not None and found(op, g, args, acc, partial):
        return
    lower_partial(op, g, args, tuple(partial))
    lower_merge(op, g, acc, partial)


def lower_finalize(op: Operation, g: TileGen, acc: Any, out: Any, count: int) -> None:
    """Emit ``op``'s result from its accumulator ``acc`` into ``out`` (a tuple of vars for a
    tuple accumulator)."""
    found: FinalizeLowering | None = _registered(FINALIZERS, op)
    if found is None:
        g.call("np.copyto({out}, {0})", acc, out=out)
    else:
        found(op, g, acc, out, count)


# ---------------------------------------------------------------------------
# Derived from the body
# ---------------------------------------------------------------------------


def _call(g: TileGen, fn: NumpyFunction, operands: Sequence[Any], out: Any) -> None:
    if fn is tdsl_convert:
        g.call("np.copyto({out}, {0})", *operands, out=out)
    elif isinstance(fn, np.ufunc) and getattr(np, fn.__name__, None) is fn:
        g.ufunc(fn.__name__, *operands, out=out)
    else:
        constants = "".join(  # (the module constants its source reads, before it)
            f"{c} = {getattr(scalar_numpy, c)!r}\n" for c in HELPER_CONSTANTS.get(fn.__name__, ())
        )
        name = g.function(fn.__name__, constants + inspect.getsource(fn))
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
    slots, _ = body.slots()
    for inner, slot in zip(body.computing(), slots, strict=True):
        target = out if slot is None else g.workspace(slot)
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
    # scratch buffer can be.  A float's sign bit is flipped instead, as np.negative
    # does (a nan's too: multiplying by -1 kept a nan's sign), at the same speed;
    # an integer is multiplied by -1 (by the largest unsigned integer, -1 wrapped, an
    # unsigned one), which wraps as np.negative does.
    dtype = results[0].dtype
    if dtype.kind == "f":
        bits = np.dtype(f"u{dtype.itemsize}")
        sign = g.scalar(1 << (8 * dtype.itemsize - 1), bits)
        g.call(
            f"np.bitwise_xor({{0}}.view(np.{bits}), {{1}}, out={{out}}.view(np.{bits}))",
            args[0],
            sign,
            out=results[0],
            note="-x: the sign bit flipped",
        )
        return
    minus_one = int(np.iinfo(dtype).max) if dtype.kind == "u" else -1
    g.ufunc("multiply", args[0], g.scalar(minus_one, dtype), out=results[0])


@register(td.FloatPowerOp)
def _float_power(
    op: td.FloatPowerOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]
) -> None:
    # NumPy's own float_power: the C library's pow, bit for bit (its f64 power loop rounds
    # a last bit otherwise for about one result in twenty here, and takes sqrt for 0.5)
    g.ufunc("float_power", *args, out=results[0])


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
    return g.fill(out, constant.reshape(()).item())  # (an integer exactly, beyond 2**53)


@register(td.MaximumOp, td.MinimumOp)
def _extremum(
    op: td.MaximumOp | td.MinimumOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]
) -> None:
    out = results[0]
    name = "maximum" if isinstance(op, td.MaximumOp) else "minimum"
    g.ufunc(name, *(_fill_splat(g, a, out) for a in args), out=out)


@register(td.DivOp)
def _divide(op: td.DivOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    # NumPy's quotients, bit for bit: a multiplication by the reciprocal only where that
    # is exact (a constant divisor of powers of two whose reciprocals are finite)
    (a, b), (out,) = args, results
    value = g.constant_value(b)
    if value is not None and _exact_reciprocal(value):
        g.ufunc("multiply", a, g.constant(np.reciprocal(value)), out=out)
    else:
        g.ufunc("divide", a, b, out=out)


def _exact_reciprocal(value: np.ndarray[Any, Any]) -> bool:
    """Whether every element of the float array ``value`` has an exact, finite reciprocal
    (``x * (1 / d)`` is then ``x / d`` rounded once, for every ``x``)."""
    if value.dtype.kind != "f" or value.size == 0:
        return False
    with np.errstate(all="ignore"):
        r = np.reciprocal(value)
        mantissa, _ = np.frexp(value)
        return bool(
            np.all(np.isfinite(r))
            and np.all(r != 0)
            and np.all(np.abs(mantissa) == 0.5)
            and np.all(np.reciprocal(r) == value)
        )


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


# -- matmul and transpose ----------------------------------------------------------


def _matmul_partial(op: td.MatmulOp, g: TileGen, args: Sequence[Any], out: Any) -> None:
    # a float16 tile's product into its float32 accumulator is computed in float32: NumPy's
    # float16 matmul adds in float32 and rounds once, and a partial rounded to float16
    # overflows where the whole sum does not (products of 300 * +-300 cancelling)
    wide = "" if out.dtype == args[0].dtype else f", dtype=np.{out.dtype.name}"
    g.call(f"np.matmul({{0}}, {{1}}, out={{out}}{wide})", *args, out=out)


PARTIALS[td.MatmulOp] = _matmul_partial


@register(td.MatmulOp)
def _matmul(op: td.MatmulOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    _matmul_partial(op, g, args, results[0])


@register(td.CastOp)
def _cast(op: td.CastOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    # NumPy's own conversion: a float to an integer is NumPy's (nan and out-of-range
    # values give its "integer indefinite", with its RuntimeWarning)
    g.call('np.copyto({out}, {0}, casting="unsafe")', args[0], out=results[0])


@register(td.TransposeOp)
def _transpose(op: td.TransposeOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    g.call(f"np.copyto({{out}}, {_transpose_view(op)})", args[0], out=results[0])


# -- reductions ------------------------------------------------------------------------


def _reduce_args(op: ReductionOp) -> str:
    args = f"axis={op.axis_value}"
    return args + (", keepdims=True" if op.keepdims_value else "")


def _reduce_partial(op: ReductionOp, g: TileGen, args: Sequence[Any], out: Any) -> None:
    (x,) = args
    dtype = "" if x.dtype == out.dtype else f", dtype=np.{out.dtype.name}"
    g.call(
        f"np.{op.NUMPY_UFUNC}.reduce({{0}}, {_reduce_args(op)}{dtype}, out={{out}})",
        x,
        out=out,
    )


def _sum_partial(op: td.SumOp, g: TileGen, args: Sequence[Any], out: Any) -> None:
    if len(args) == 1:
        _reduce_partial(op, g, args, out)
        return
    a, b = args  # the operands of the product this sum fuses (SumOp.fuses_producer)
    letters = "abcdefghijklmnopqrstuvwxyz"[: len(a.shape)]
    target = "{out}[..., 0]" if op.keepdims_value else "{out}"
    dtype = "" if a.dtype == out.dtype else f", dtype=np.{out.dtype.name}"
    g.call(
        f'np.einsum("{letters},{letters}->{letters[:-1]}", {{0}}, {{1}}{dtype}, out={target})',
        a,
        b,
        out=out,
        note="sum(a * b) along the last axis as one einsum",
    )


def _mean_finalize(op: td.MeanOp, g: TileGen, acc: Any, out: Any, count: int) -> None:
    if count == 0:
        g.call("np.copyto({out}, np.nan)", out=out, note="the mean of nothing")
    else:
        g.ufunc("divide", acc, g.scalar(float(count), acc.dtype), out=out, note="mean")


PARTIALS[ReductionOp] = _reduce_partial
PARTIALS[td.SumOp] = _sum_partial
FINALIZERS[td.MeanOp] = _mean_finalize


@register(ReductionOp)
def _reduction(op: ReductionOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    (out,) = results
    acc = out if op.accumulator_dtype() == out.dtype else g.workspace(0)
    lower_partial(op, g, args, acc)
    x_shape = args[0].shape
    count = math.prod(x_shape[a] for a in op.reduced_axes())
    if acc is not out or op.finalizes():
        lower_finalize(op, g, acc, out, count)


__all__ = [
    "FINALIZERS",
    "LOWERINGS",
    "PARTIALS",
    "UPDATES",
    "FinalizeLowering",
    "Lowering",
    "PartialLowering",
    "lower_body",
    "lower_finalize",
    "lower_op",
    "lower_partial",
    "lower_update",
    "register",
]


# --------------------------------------------------------------------------- scans


def _scan_cut(op: ScanOp, rank: int, part: str) -> str:
    """A subscript selecting ``part`` (``0:1``, ``1:``, ``-1:``) along the scan axis."""
    return "[" + ":, " * op.axis_value + part + "]" if rank else ""


@register(ScanOp)
def _scan(op: ScanOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    (x,), (out,) = args, results
    operand = "{0}.reshape(1)" if not x.shape else "{0}"
    g.call(
        f"np.{op.NUMPY_UFUNC}.accumulate({operand}, axis={op.axis_value}, out={{out}})",
        x,
        out=out,
    )


def _scan_tile(
    op: ScanOp, g: TileGen, args: Sequence[Any], results: Sequence[Any], carry: Any
) -> None:
    # the carry enters the first element, then the tile accumulates in place: the
    # same operations, in the same order, as one accumulate over the whole row
    (x,), (out,) = args, results
    rank = len(out.shape)
    first, rest = _scan_cut(op, rank, "0:1"), _scan_cut(op, rank, "1:")
    last = _scan_cut(op, rank, "-1:")
    u = op.NUMPY_UFUNC
    g.call(f"np.{u}({{1}}, {{0}}{first}, out={{out}}{first})", x, carry, out=out)
    g.call(f"np.copyto({{out}}{rest}, {{0}}{rest})", x, out=out)
    g.call(f"np.{u}.accumulate({{out}}, axis={op.axis_value}, out={{out}})", out=out)
    g.call(f"np.copyto({{out}}, {{0}}{last})", out, out=carry)


SCANS[ScanOp] = _scan_tile
