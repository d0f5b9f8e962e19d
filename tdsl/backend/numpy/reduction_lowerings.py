"""The numpy target's lowerings of reductions with a tuple accumulator (``logsumexp``:
(max, sum of exp); ``variance``: (count, mean, M2)), their partials, merges and
finalizers, and of the row-normalizing ops (softmax, log-softmax, layernorm).  They
register into the tables of :mod:`tdsl.backend.numpy.lowerings` when this module is
imported, which :mod:`tdsl.backend.numpy.group_plan` does, the one reader of the tables."""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from tdsl.backend.numpy.lowerings import (
    FINALIZERS,
    MERGES,
    PARTIALS,
    UPDATES,
    register,
)
from tdsl.backend.numpy.program import TileGen
from tdsl.dialects import tensordsl as td


def tdsl_logsumexp_state(x, shift, total, e, axis, keepdims, finite):  # type: ignore[no-untyped-def]
    """The state (max, sum of exp(x - max)) of one tile, into ``shift`` and ``total``; the
    max is clipped to finite values for the subtraction, so a row of -inf gives (-inf, 0)
    and one with inf a total of inf.  Special values are results here, not warnings."""
    with np.errstate(all="ignore"):
        np.maximum.reduce(x, axis=axis, keepdims=keepdims, initial=-np.inf, out=shift)
        np.clip(shift, -finite, finite, out=total)
        row = total if keepdims or axis is None else np.expand_dims(total, axis)
        np.subtract(x, row, out=e)
        np.exp(e, out=e)
        np.add.reduce(e, axis=axis, keepdims=keepdims, out=total)


def tdsl_logsumexp_merge(shift, total, p_shift, p_total, top):  # type: ignore[no-untyped-def]
    """Merge the state (p_shift, p_total) into (shift, total): both sums rescaled to the
    larger max (``top``, a buffer).  ``fmin(nan, 0)`` is 0, so a max equal to an infinite
    one rescales by 1, not by nan."""
    with np.errstate(all="ignore"):
        np.maximum(shift, p_shift, out=top)
        for s, t in ((shift, total), (p_shift, p_total)):
            np.subtract(s, top, out=s)
            np.fmin(s, 0, out=s)
            np.exp(s, out=s)
            np.multiply(t, s, out=t)
        np.add(total, p_total, out=total)
        np.copyto(shift, top)


def tdsl_running_product(x, out, axis, keepdims):  # type: ignore[no-untyped-def]
    """``out`` times the elements of ``x`` along ``axis`` in turn, NumPy's order: a slice
    at a time, or (few elements beside the axis) a chunk at a time after ``out``, through
    a temporary of at most 4096 elements and a slice."""
    n = x.shape[axis]
    step = max(1, 4096 // max(1, x.size // max(n, 1)))
    head = out if keepdims else np.expand_dims(out, axis)
    for j in range(0, n, step):
        part = x[(slice(None),) * axis + (slice(j, j + step),)]
        if step == 1:
            np.multiply(head, part, out=head)
        else:
            joined = np.concatenate((head, part), axis)
            np.multiply.reduce(joined, axis=axis, keepdims=True, out=head)


def lower_running_product(op: td.ProdOp, g: TileGen, args: Sequence[Any], acc: Any) -> None:
    """A product over a cut reduction dim, in NumPy's order: the running product times
    each element in turn.  (The product of each tile times the running one reassociates:
    fifteen 1e30 and fifteen 1e-30 in tiles of 15 gave inf * 0 = nan, NumPy inf.)"""
    (x,) = args
    name = g.function("tdsl_running_product", inspect.getsource(tdsl_running_product))
    axis = cast(int, op.axis_value) % len(x.tile)
    g.call(f"{name}({{0}}, {{out}}, {axis}, {op.keepdims_value})", x, out=acc, note="in order")


def tdsl_logsumexp_result(shift, total, out):  # type: ignore[no-untyped-def]
    """``shift + log(total)`` into ``out`` (-inf for an empty state, without a warning)."""
    with np.errstate(all="ignore"):
        np.log(total, out=total)
        np.add(shift, total, out=out)


def _logsumexp_partial(
    op: td.LogSumExpOp, g: TileGen, args: Sequence[Any], out: Sequence[Any]
) -> None:
    (x,), (shift, total) = args, out
    name = g.function("tdsl_logsumexp_state", inspect.getsource(tdsl_logsumexp_state))
    finite = float(np.finfo(shift.dtype).max)
    g.call(
        f"{name}({{0}}, {{out}}, {{1}}, {{2}}, {op.axis_value}, {op.keepdims_value}, {finite!r})",
        x,
        total,
        g.workspace(0),
        out=shift,
        note="logsumexp: the state (max, sum of exp(x - max)) of this tile",
    )


def _logsumexp_merge(
    op: td.LogSumExpOp, g: TileGen, acc: Sequence[Any], partial: Sequence[Any]
) -> None:
    (shift, total), (p_shift, p_total) = acc, partial
    name = g.function("tdsl_logsumexp_merge", inspect.getsource(tdsl_logsumexp_merge))
    g.call(
        f"{name}({{out}}, {{0}}, {{1}}, {{2}}, {{3}})",
        total,
        p_shift,
        p_total,
        g.workspace(1),
        out=shift,
    )


def _logsumexp_finalize(
    op: td.LogSumExpOp, g: TileGen, acc: Sequence[Any], out: Any, count: int
) -> None:
    shift, total = acc
    name = g.function("tdsl_logsumexp_result", inspect.getsource(tdsl_logsumexp_result))
    g.call(f"{name}({{0}}, {{1}}, {{out}})", shift, total, out=out, note="max + log(sum)")


@register(td.LogSumExpOp)
def _logsumexp(op: td.LogSumExpOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    state = (g.workspace(1), g.workspace(2))
    _logsumexp_partial(op, g, args, state)
    _logsumexp_finalize(op, g, state, results[0], 0)


PARTIALS[td.LogSumExpOp] = _logsumexp_partial
MERGES[td.LogSumExpOp] = _logsumexp_merge
FINALIZERS[td.LogSumExpOp] = _logsumexp_finalize


def tdsl_variance_state(x, count, mean, m2, d, axis, keepdims):  # type: ignore[no-untyped-def]
    """The variance state of one tile (its count, mean and sum of squared deviations) into
    ``count``, ``mean`` and ``m2``, through the deviations ``d`` (a buffer of x's shape)."""
    with np.errstate(all="ignore"):
        n = x.size if axis is None else x.shape[axis]
        count[...] = n
        np.add.reduce(x, axis=axis, keepdims=keepdims, dtype=mean.dtype, out=mean)
        if n:
            np.divide(mean, n, out=mean)
        row = mean if keepdims or axis is None else np.expand_dims(mean, axis)
        np.subtract(x, row, out=d)
        np.multiply(d, d, out=d)
        np.add.reduce(d, axis=axis, keepdims=keepdims, out=m2)


def tdsl_variance_merge(count, mean, m2, p_count, p_mean, p_m2):  # type: ignore[no-untyped-def]
    """Merge the state (p_count, p_mean, p_m2) into (count, mean, m2) by Chan's formula:
    ``delta = p_mean - mean``, the mean moves by ``delta * p_count / n`` and ``m2`` gains
    ``delta**2 * count * p_count / n`` (``n`` the total, never 0: a partial is a tile's).
    The partial's buffers are overwritten."""
    with np.errstate(all="ignore"):
        np.add(m2, p_m2, out=m2)
        np.subtract(p_mean, mean, out=p_mean)  # delta
        np.multiply(p_mean, count, out=p_m2)  # delta * count
        np.add(count, p_count, out=count)  # n
        np.divide(p_count, count, out=p_count)  # the partial's share (a tile is never empty)
        np.multiply(p_mean, p_count, out=p_count)  # delta * share
        np.add(mean, p_count, out=mean)
        np.multiply(p_m2, p_count, out=p_m2)  # delta**2 * count * share
        np.add(m2, p_m2, out=m2)


def _variance_partial(
    op: td.VarianceOp, g: TileGen, args: Sequence[Any], out: Sequence[Any]
) -> None:
    (x,), (count, mean, m2) = args, out
    name = g.function("tdsl_variance_state", inspect.getsource(tdsl_variance_state))
    g.call(
        f"{name}({{0}}, {{1}}, {{out}}, {{2}}, {{3}}, {op.axis_value}, {op.keepdims_value})",
        x,
        count,
        m2,
        g.workspace(0),
        out=mean,
        note="variance: the state (count, mean, squared deviations) of this tile",
    )


def _variance_merge(
    op: td.VarianceOp, g: TileGen, acc: Sequence[Any], partial: Sequence[Any]
) -> None:
    name = g.function("tdsl_variance_merge", inspect.getsource(tdsl_variance_merge))
    g.call(
        f"{name}({{0}}, {{out}}, {{1}}, {{2}}, {{3}}, {{4}})", acc[0], acc[2], *partial, out=acc[1]
    )


def _variance_finalize(
    op: td.VarianceOp, g: TileGen, acc: Sequence[Any], out: Any, count: int
) -> None:
    m2 = acc[2]
    g.ufunc("divide", m2, g.scalar(max(count - op.ddof_value, 0.0), m2.dtype), out=m2)
    g.ufunc("sqrt" if isinstance(op, td.StdOp) else "positive", m2, out=out)


@register(td.VarianceOp)
def _variance(op: td.VarianceOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    state = (g.workspace(1), g.workspace(2), g.workspace(3))
    _variance_partial(op, g, args, state)
    count = math.prod(args[0].shape[a] for a in op.reduced_axes())
    _variance_finalize(op, g, state, results[0], count)


PARTIALS[td.VarianceOp] = _variance_partial
MERGES[td.VarianceOp] = _variance_merge
FINALIZERS[td.VarianceOp] = _variance_finalize


# -- row-normalizing ops ---------------------------------------------------------------


@register(td.SoftmaxOp)
def _softmax(op: td.SoftmaxOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    (x,), (out,) = args, results
    if math.prod(out.shape) == 0:
        return  # nothing to compute: the result is empty too
    axis = op.axis_value
    row = g.workspace(0)
    wide = "" if row.dtype == x.dtype else f", dtype=np.{row.dtype.name}"
    reduce = f"axis={axis}, keepdims=True{wide}, out={{out}}"
    g.call(
        f"np.maximum.reduce({{0}}, {reduce})",
        x,
        out=row,
        note=f"softmax along axis {axis}: exp(x - max) / sum",
    )
    g.ufunc("subtract", x, row, out=out)
    g.ufunc("exp", out, out=out)
    g.call(f"np.add.reduce({{0}}, {reduce})", out, out=row)
    # the quotient, as the op's reference divides: a multiplication by the sum's
    # reciprocal was 1 ulp off NumPy's in about a quarter of the elements, and no
    # faster here (f32, 64x4096: 48 us either way)
    g.ufunc("divide", out, row, out=out)


@register(td.LogSoftmaxOp)
def _log_softmax(
    op: td.LogSoftmaxOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]
) -> None:
    (x,), (out,) = args, results
    if math.prod(out.shape) == 0:
        return  # nothing to compute: the result is empty too
    axis = op.axis_value
    m, e, s = g.workspace(0), g.workspace(1), g.workspace(2)
    g.call(
        f"np.maximum.reduce({{0}}, axis={axis}, keepdims=True, out={{out}})",
        x,
        out=m,
        note=f"log_softmax along axis {axis}: (x - max) - log(sum(exp(x - max)))",
    )
    g.ufunc("subtract", x, m, out=out)
    g.ufunc("exp", out, out=e)
    wide = "" if s.dtype == e.dtype else f", dtype=np.{s.dtype.name}"
    g.call(f"np.add.reduce({{0}}, axis={axis}, keepdims=True{wide}, out={{out}})", e, out=s)
    g.ufunc("log", s, out=s)
    g.ufunc("subtract", out, s, out=out)


@register(td.LayerNormOp)
def _layernorm(op: td.LayerNormOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]) -> None:
    (x,), (out,) = args, results
    if math.prod(out.shape) == 0:
        return  # nothing to compute: the result is empty too
    axis = op.axis_value
    mean, var = g.workspace(0), g.workspace(1)
    wide = "" if mean.dtype == x.dtype else f", dtype=np.{mean.dtype.name}"
    n = g.scalar(float(x.shape[axis]), mean.dtype)
    g.call(
        f"np.add.reduce({{0}}, axis={axis}, keepdims=True{wide}, out={{out}})",
        x,
        out=mean,
        note=f"layernorm along axis {axis}: (x - mean) / sqrt(var + eps)",
    )
    g.ufunc("divide", mean, n, out=mean)
    # the deviations, in the result (float16: in a float32 buffer, rounded once at the end)
    d = out if not wide else g.workspace(2)
    g.ufunc("subtract", x, mean, out=d)
    # the sum of squared deviations as one einsum (no temporary)
    letters = "abcdefghijklmnopqrstuvwxyz"[: len(out.shape)]
    kept = letters.replace(letters[axis], "")
    row = ", ".join([":"] * axis + ["0", "..."])  # a view, also when 0-d
    g.call(
        f'np.einsum("{letters},{letters}->{kept}", {{0}}, {{0}}, out={{out}}[{row}])',
        d,
        out=var,
    )
    g.ufunc("divide", var, n, out=var)
    g.ufunc("add", var, g.scalar(op.eps_value, var.dtype), out=var)
    g.ufunc("sqrt", var, out=var)
    g.ufunc("divide", d, var, out=out)


# -- softmax_matmul: flash attention's online softmax ------------------------------------


def tdsl_softmax_matmul_state(s, v, acc, shift, total, e, finite):  # type: ignore[no-untyped-def]
    """The state of one tile of scores ``s`` and values ``v``: ``exp(s - shift) @ v`` into
    ``acc``, the row maxima of ``s`` into ``shift`` and the sums of ``exp(s - shift)``
    into ``total`` (one column each, or the first column of a wider buffer), through ``e`` (a buffer of ``s``'s shape).  The
    maximum is clipped to finite values for the subtraction: a row of -inf gives the
    empty state (-inf, 0, 0)."""
    with np.errstate(all="ignore"):
        m, t = shift[..., :1], total[..., :1]
        row = (*s.shape[:-1], 1)
        apart = m.shape != row  # the scores broadcast along a batch dim of v
        if apart:
            m, t = np.empty(row, m.dtype), np.empty(row, t.dtype)
        np.maximum.reduce(s, axis=-1, keepdims=True, initial=-np.inf, out=m)
        np.clip(m, -finite, finite, out=t)
        np.subtract(s, t, out=e)
        np.exp(e, out=e)
        np.matmul(e, v, out=acc)
        np.add.reduce(e, axis=-1, keepdims=True, out=t)
        if apart:
            shift[..., :1], total[..., :1] = m, t


def tdsl_softmax_matmul_merge(acc, shift, total, p_acc, p_shift, p_total, top):  # type: ignore[no-untyped-def]
    """Merge the state (p_acc, p_shift, p_total) into (acc, shift, total) (the statistics in
    their first column, as :func:`tdsl_softmax_matmul_state` leaves them): both rescaled to
    the larger maximum (``top``, a buffer of one column).  ``fmin(nan, 0)`` is 0, so a
    maximum equal to an infinite one rescales by 1, not by nan.  The partial's buffers
    are overwritten."""
    with np.errstate(all="ignore"):
        np.maximum(shift[..., :1], p_shift[..., :1], out=top)
        for m, t, a in ((shift, total, acc), (p_shift, p_total, p_acc)):
            m = m[..., :1]
            np.subtract(m, top, out=m)
            np.fmin(m, 0, out=m)
            np.exp(m, out=m)
            np.multiply(t[..., :1], m, out=t[..., :1])
            np.multiply(a, m, out=a)
        np.add(total[..., :1], p_total[..., :1], out=total[..., :1])
        np.add(acc, p_acc, out=acc)
        shift[..., :1] = top


def tdsl_softmax_matmul_update(s, v, acc, shift, total, e, p_acc, p_total, top, finite):  # type: ignore[no-untyped-def]
    """Take one tile of scores ``s`` and values ``v`` into the running state (acc, shift,
    total), as :func:`tdsl_softmax_matmul_state` then :func:`tdsl_softmax_matmul_merge`
    would, in fewer calls: the state rescaled to the larger maximum ``top`` (``fmin(nan,
    0)`` is 0: a maximum equal to an infinite one rescales by 1), then ``exp(s - top)``
    (``top`` clipped to finite values, so a row of -inf adds nothing) taken in, through
    ``e`` (a buffer of ``s``'s shape) and the partial buffers ``p_acc``, ``p_total``."""
    with np.errstate(all="ignore"):
        m, t, pt = shift[..., :1], total[..., :1], p_total[..., :1]
        np.maximum.reduce(s, axis=-1, keepdims=True, initial=-np.inf, out=pt)
        np.maximum(m, pt, out=top)
        np.subtract(m, top, out=m)
        np.fmin(m, 0, out=m)
        np.exp(m, out=m)
        np.multiply(t, m, out=t)
        np.multiply(acc, m, out=acc)
        np.clip(top, -finite, finite, out=m)
        np.subtract(s, m, out=e)
        np.exp(e, out=e)
        np.matmul(e, v, out=p_acc)
        np.add(acc, p_acc, out=acc)
        np.add.reduce(e, axis=-1, keepdims=True, out=pt)
        np.add(t, pt, out=t)
        np.copyto(m, top)


def _call_helper(
    g: TileGen,
    helper: Any,
    before: Sequence[Any],
    out: Any,
    after: Sequence[Any],
    *constants: float,
    note: str = "",
) -> None:
    """Emit a call of the module-level ``helper`` (its source added to the generated
    module once) on ``before``, then ``out`` (written), then ``after`` and ``constants``."""
    name = g.function(helper.__name__, inspect.getsource(helper))
    slots = [f"{{{i}}}" for i in range(len(before) + len(after))]
    where = len(before)
    text = ", ".join([*slots[:where], "{out}", *slots[where:], *map(repr, constants)])
    g.call(f"{name}({text})", *before, *after, out=out, note=note)


def _softmax_matmul_update(
    op: td.SoftmaxMatmulOp,
    g: TileGen,
    args: Sequence[Any],
    acc: Sequence[Any],
    partial: Sequence[Any],
) -> bool:
    (s, v), (a, shift, total), (p_acc, _, p_total) = args, acc, partial
    if tuple(s.shape[:-1]) != tuple(a.shape[:-1]):  # the scores broadcast along v's batch
        return False  # (their rows are not the state's: the partial and the merge)
    after = (shift, total, g.workspace(0), p_acc, p_total, g.workspace(1))
    _call_helper(
        g,
        tdsl_softmax_matmul_update,
        (s, v),
        a,
        after,
        float(np.finfo(a.dtype).max),
        note="softmax_matmul: this tile taken into the state (max, sum of exp(s - max), "
        "exp(s - max) @ v)",
    )
    return True


def _softmax_matmul_partial(
    op: td.SoftmaxMatmulOp, g: TileGen, args: Sequence[Any], out: Sequence[Any]
) -> None:
    (s, v), (acc, shift, total) = args, out
    _call_helper(
        g,
        tdsl_softmax_matmul_state,
        (s, v),
        acc,
        (shift, total, g.workspace(0)),
        float(np.finfo(acc.dtype).max),
        note="softmax_matmul: the state (max, sum of exp(s - max), exp(s - max) @ v) of this tile",
    )


def _softmax_matmul_merge(
    op: td.SoftmaxMatmulOp, g: TileGen, acc: Sequence[Any], partial: Sequence[Any]
) -> None:
    after = (acc[1], acc[2], *partial, g.workspace(1))
    _call_helper(g, tdsl_softmax_matmul_merge, (), acc[0], after)


def _softmax_matmul_finalize(
    op: td.SoftmaxMatmulOp, g: TileGen, acc: Sequence[Any], out: Any, count: int
) -> None:
    a, _, total = acc
    if count == 0:  # no keys: NumPy's product of empty probabilities, zeros
        g.call("np.copyto({out}, 0)", out=out)
        return
    g.call(
        "np.divide({0}, {1}[..., :1], out={out})",
        a,
        total,
        out=out,
        note="the weighted sum over the sum of weights",
    )


@register(td.SoftmaxMatmulOp)
def _softmax_matmul(
    op: td.SoftmaxMatmulOp, g: TileGen, args: Sequence[Any], results: Sequence[Any]
) -> None:
    (out,) = results
    if math.prod(out.shape) == 0:
        return  # nothing to compute: the result is empty too
    acc = out if out.dtype == g.workspace(1).dtype else g.workspace(3)
    state = (acc, g.workspace(1), g.workspace(2))
    _softmax_matmul_partial(op, g, args, state)
    _softmax_matmul_finalize(op, g, state, out, args[0].shape[-1])


PARTIALS[td.SoftmaxMatmulOp] = _softmax_matmul_partial
MERGES[td.SoftmaxMatmulOp] = _softmax_matmul_merge
UPDATES[td.SoftmaxMatmulOp] = _softmax_matmul_update
FINALIZERS[td.SoftmaxMatmulOp] = _softmax_matmul_finalize
