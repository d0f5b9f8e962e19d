"""NumPy functions a traced function may call that the language has no function for,
written as the NumPy calls they stand for (each a few lines of the language).

Each runs while tracing, on :class:`~tdsl.jit.tracer.Tracer` arrays: its NumPy calls
come back through the tracer as the language's functions (``np.repeat(x, 2, axis=0)``
is an ``expand_dims``, a ``broadcast_to`` and a ``reshape``), so it computes what
NumPy's function computes, dtypes included.  Its static arguments (counts, axes,
shifts, pad widths) must be Python numbers; an argument NumPy refuses is refused with
NumPy's reason, located at the user's line.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from tdsl.jit.trace_args import as_array, ndim_of, static_axis, static_count, static_ints, strong
from tdsl.jit.trace_linalg import dot, inner, norm, tensordot
from tdsl.jit.trace_names import subscripts_first, trace_error
from tdsl.jit.trace_reductions import average, with_initial
from tdsl.jit.trace_select import SELECT
from tdsl.jit.trace_shapes import SHAPES


def repeat(a: Any, repeats: Any, axis: Any = None) -> Any:
    """``np.repeat`` by one count: each element ``repeats`` times along ``axis``."""
    count = static_count(repeats, "the count of `np.repeat`")
    if axis is None:
        a, axis = np.ravel(a), 0
    k = static_axis(axis, a.ndim, "`np.repeat`")
    shape = tuple(a.shape)
    spread = np.broadcast_to(np.expand_dims(a, k + 1), (*shape[: k + 1], count, *shape[k + 1 :]))
    return np.reshape(spread, (*shape[:k], shape[k] * count, *shape[k + 1 :]))


def tile(A: Any, reps: Any) -> Any:
    """``np.tile``: ``A`` repeated ``reps`` times along each dim (a dim of each kind per
    dim, broadcast, then merged)."""
    counts = static_ints(reps, "the counts of `np.tile`")
    if any(c < 0 for c in counts):
        trace_error(f"the counts of `np.tile` must not be negative, got {reps!r}")
    rank = max(A.ndim, len(counts))
    shape = (1,) * (rank - A.ndim) + tuple(A.shape)
    counts = (1,) * (rank - len(counts)) + counts
    pairs = np.reshape(A, tuple(x for s in shape for x in (1, s)))
    sizes = zip(counts, shape, strict=True)
    spread = np.broadcast_to(pairs, tuple(x for c, s in sizes for x in (c, s)))
    return np.reshape(spread, tuple(c * s for c, s in zip(counts, shape, strict=True)))


def outer(a: Any, b: Any) -> Any:
    """``np.outer``: the product of each element of ``a`` with each of ``b``, flattened."""
    return np.multiply(np.expand_dims(np.ravel(a), 1), np.expand_dims(np.ravel(b), 0))


_NO_VALUE: Any = object()  # (`prepend` and `append` of `diff` not given)


def _along(k: int, ndim: int, part: slice) -> tuple[slice, ...]:
    """The index of ``part`` along dim ``k`` of ``ndim`` dims, the whole of the others."""
    return tuple(part if d == k else slice(None) for d in range(ndim))


def diff(
    a: Any, n: Any = 1, axis: Any = -1, prepend: Any = _NO_VALUE, append: Any = _NO_VALUE
) -> Any:
    """``np.diff``: ``n`` times the differences of neighbours along ``axis`` (``!=`` of
    booleans), after joining ``prepend`` and ``append`` (a scalar spans the other dims)."""
    count = static_count(n, "the order `n` of `np.diff`")
    a = as_array(a)
    if count == 0:
        return a
    if a.ndim == 0:
        trace_error("`np.diff` requires an input of at least one dimension")
    k = static_axis(axis, a.ndim, "`np.diff`")
    parts: list[Any] = []
    for extra in (prepend, a, append):
        if extra is _NO_VALUE:
            continue
        if extra is not a and ndim_of(extra) == 0:
            shape = list(a.shape)
            shape[k] = 1
            extra = np.broadcast_to(extra, tuple(shape))
        parts.append(extra)
    if len(parts) > 1:
        a = np.concatenate(parts, axis=k)
    op = np.not_equal if a.dtype == np.bool_ else np.subtract
    for _ in range(count):
        a = op(a[_along(k, a.ndim, slice(1, None))], a[_along(k, a.ndim, slice(None, -1))])
    return a


def ptp(a: Any, axis: Any = None, out: Any = None, keepdims: Any = False) -> Any:
    """``np.ptp``: the maximum less the minimum."""
    if out is not None:
        trace_error("`out=` of `np.ptp` writes into an array in place: use the returned value")
    return np.subtract(
        np.max(a, axis=axis, keepdims=keepdims), np.min(a, axis=axis, keepdims=keepdims)
    )


def flip(m: Any, axis: Any = None) -> Any:
    """``np.flip``: the elements in reverse order along ``axis`` (every axis for None)."""
    every = range(m.ndim)
    named = static_ints(axis, "the axes of `np.flip`") if axis is not None else every
    listed = [static_axis(x, m.ndim, "`np.flip`") for x in named]
    axes = set(listed)
    if len(axes) != len(listed):
        trace_error(f"`np.flip`: repeated axis in {axis!r}, as NumPy refuses")
    return m[tuple(slice(None, None, -1) if d in axes else slice(None) for d in range(m.ndim))]


def flipud(m: Any) -> Any:
    if m.ndim < 1:
        trace_error("`np.flipud` requires an input of at least one dimension")
    return flip(m, 0)


def fliplr(m: Any) -> Any:
    if m.ndim < 2:
        trace_error("`np.fliplr` requires an input of at least two dimensions")
    return flip(m, 1)


def roll(a: Any, shift: Any, axis: Any = None) -> Any:
    """``np.roll``: the elements moved ``shift`` places along ``axis`` (of the flattened
    array for None), those past the end coming round to the start."""
    if axis is None:
        return np.reshape(roll(np.ravel(a), shift, 0), a.shape)
    shifts, axes = (
        static_ints(shift, "the shifts of `np.roll`"),
        static_ints(axis, "the axes of `np.roll`"),
    )
    if len(shifts) == 1:
        shifts *= len(axes)
    if len(axes) == 1:
        axes *= len(shifts)
    if len(shifts) != len(axes):
        trace_error("`np.roll`: `shift` and `axis` must have the same length")
    for s, x in zip(shifts, axes, strict=True):
        k = static_axis(x, a.ndim, "`np.roll`")
        extent = a.shape[k]
        cut = extent - s % extent if extent else 0
        if extent and cut != extent:
            head, tail = slice(cut, None), slice(None, cut)
            a = np.concatenate([a[_along(k, a.ndim, head)], a[_along(k, a.ndim, tail)]], axis=k)
    return a


def count_nonzero(a: Any, axis: Any = None, *, keepdims: Any = False) -> Any:
    """``np.count_nonzero``: how many elements are not zero (nan is not zero), an int64
    (a 0-d int64 array where NumPy gives a Python int, as for every 0-d result)."""
    return np.sum(np.not_equal(a, 0), axis=axis, keepdims=keepdims)


def nan_to_num(
    x: Any, copy: Any = True, nan: Any = 0.0, posinf: Any = None, neginf: Any = None
) -> Any:
    """``np.nan_to_num``: nan as ``nan``, infinities as ``posinf``/``neginf`` (the dtype's
    largest finite by default), each where ``x`` holds it; integers, booleans as they are."""
    if x.dtype.kind not in "fc":
        return strong(x)
    info = np.finfo(x.dtype)
    # (NumPy writes them into x's dtype: a NumPy float64 replacement keeps float32)
    nan, posinf, neginf = (
        v.astype(x.dtype) if hasattr(v, "dtype") else v for v in (nan, posinf, neginf)
    )
    big = float(info.max) if posinf is None else posinf
    small = float(info.min) if neginf is None else neginf
    finite = cast(Any, np.where(x == np.inf, big, np.where(x == -np.inf, small, x)))
    return np.where(np.isnan(x), nan, finite)


def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: Any = False) -> Any:
    """``np.isclose``, as NumPy 2 computes it: ``b`` in its dtype's float (float64 for
    integers), then ``|a - b| <= atol + rtol * |b|`` where ``b`` is finite, or ``a == b``."""
    a, b = (np.asarray(v) if isinstance(v, list | tuple) else v for v in (a, b))
    kind = getattr(b, "dtype", None)
    if getattr(b, "weak", False) or isinstance(b, int):  # a Python number: Python's float
        b = b * 1.0 if isinstance(b, int) or b.dtype.kind != "f" else b
    elif kind is not None:
        b = b.astype(np.result_type(kind, 1.0))
    # NumPy's expression, which NumPy evaluates with invalid operations ignored: here `b`
    # is 0 where it is not finite (the term is masked there), so that `inf - inf` and
    # `0 * inf` are never computed and the numpy target warns as NumPy does; a Python
    # float constant stays weak (`np.isclose(x32, -1e308)`: -inf in float32, close)
    finite = bool(np.isfinite(b)) if isinstance(b, float) else np.isfinite(b)
    kept = (b if finite else 0.0) if isinstance(b, float) else np.where(finite, b, 0)
    result = (abs(a - kept) <= atol + rtol * abs(kept)) & finite | (a == b)
    if equal_nan:
        result = result | (np.isnan(a) & np.isnan(b))
    return result


def pad(array: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> Any:
    """``np.pad`` in its ``constant`` mode: the array between slabs of
    ``constant_values`` (0 by default), of the array's dtype."""
    if mode != "constant":
        trace_error(f"`np.pad` with mode={mode!r}: a traced function pads with constants only")
    value = kwargs.pop("constant_values", 0)
    if kwargs:
        trace_error(f"`np.pad` with `{'`, `'.join(kwargs)}` is not supported when traced")
    if ndim_of(value) != 0:
        trace_error("`constant_values` of `np.pad` must be one number when traced")
    if hasattr(value, "shape") and not isinstance(value, np.ndarray | np.generic):
        trace_error(
            "`constant_values` of `np.pad` must be a number when traced, not a traced value"
        )
    with np.errstate(all="ignore"):  # (NumPy assigns it: -1 in uint8 is 255, 300 is 44)
        fill = np.asarray(value).astype(array.dtype)
    array = strong(array)
    try:
        widths = np.broadcast_to(np.asarray(pad_width, dtype=object), (array.ndim, 2))
    except ValueError:
        trace_error(
            f"`pad_width` of `np.pad` must be a (before, after) pair for each of the "
            f"{array.ndim} dims, or one pair or number for all, got {pad_width!r}"
        )
    for k in range(array.ndim):
        before, after = (static_count(w, "a width of `np.pad`") for w in widths[k])
        slabs: dict[str, Any] = {}
        for side, width in (("before", before), ("after", after)):
            shape = list(array.shape)
            shape[k] = width
            if width:  # (an array made here is an input of the kernel: only what is needed)
                slabs[side] = np.full(tuple(shape), fill, dtype=array.dtype)
        if slabs:
            parts = [p for p in (slabs.get("before"), array, slabs.get("after")) if p is not None]
            array = np.concatenate(parts, axis=k)
    return array


def take_along_axis(arr: Any, indices: Any, axis: Any) -> Any:
    """``np.take_along_axis``: ``arr`` gathered along ``axis`` by ``indices`` (of the
    same dims), as NumPy builds it: an integer-array index per dim (an ``arange`` along
    each other dim), so an index out of range is the gather's ``IndexError``."""
    if axis is None:
        if ndim_of(indices) != 1:
            trace_error("`np.take_along_axis` with axis=None takes 1-d indices")
        arr, axis = np.ravel(arr), 0
    k = static_axis(axis, arr.ndim, "`np.take_along_axis`")
    if ndim_of(indices) != arr.ndim:
        trace_error("`indices` and `arr` of `np.take_along_axis` must have the same dims")
    index: list[Any] = []
    for d, extent in enumerate(cast(tuple[int, ...], arr.shape)):
        shape = tuple(-1 if e == d else 1 for e in range(arr.ndim))
        index.append(indices if d == k else np.reshape(np.arange(extent), shape))
    return arr[tuple(index)]


def _with_dtype(name: str, exact_mean: bool = False) -> Callable[..., Any]:
    """NumPy's ``name`` reduction (or scan) with a ``dtype=``: of the input cast to it, the
    result in it (an integer sum accumulates in int64 in the language; its value cast to
    a narrower integer is the one NumPy's wrapping sum gives).  Without ``dtype=``:
    NotImplemented (the language's function, as written)."""

    def reduce(a: Any, *args: Any, dtype: Any = None, **kwargs: Any) -> Any:
        if len(args) > 1:  # NumPy's positional (axis, dtype, out, ...): by name
            if dtype is not None or any(v is not None for v in args[2:]):
                trace_error(
                    f"`np.{name}` with more than its axis and dtype by position is not "
                    "supported when traced: name the others (`keepdims=`)"
                )
            if args[1] is not None:
                kwargs["dtype"] = args[1]
            return getattr(np, name)(a, args[0], **kwargs)
        if dtype is None:
            return NotImplemented
        wanted = np.dtype(dtype)
        if (exact_mean and wanted.kind != "f") or (wanted == np.float16 and exact_mean):
            trace_error(
                f"`np.{name}` with dtype={wanted.name} is not supported when traced (NumPy "
                "divides in that dtype): float32 and float64 are"
            )
        cast_in = a.astype(wanted) if hasattr(a, "astype") else np.asarray(a, wanted)
        result = getattr(np, name)(cast_in, *args, **kwargs)
        return result if result.dtype == wanted else result.astype(wanted)

    return reduce


def _floats(x: Any) -> Any:
    """``x`` as a float ufunc loop takes it (NumPy's ``e``, ``f``, ``d`` loops: a ``uint8``
    or a bool in float16, an ``int32`` in float64)."""
    if x.dtype.kind == "f":
        return x
    return x.astype(np.result_type(x.dtype, np.float16))


def _truth(x: Any) -> Any:
    """``x`` as booleans, as NumPy's logical functions read it (not zero: nan too)."""
    if not hasattr(x, "dtype"):
        return np.bool_(x)
    return x if x.dtype == np.bool_ else np.not_equal(x, 0)


def fabs(x: Any) -> Any:
    """``np.fabs``: the absolute value, of floats."""
    return np.abs(_floats(x))


def rint(x: Any) -> Any:
    """``np.rint``: to the nearest integer, ties to even, of floats."""
    return cast(Any, np.round(_floats(x)))


def concatenate(arrays: Any, axis: Any = 0, **kwargs: Any) -> Any:
    """``np.concatenate`` with ``axis=None``: of the arrays flattened (the language's
    ``concatenate`` has no such axis; an explicit None was dropped as a default before,
    which joined along axis 0).  Any other call: NotImplemented (the language's)."""
    if axis is not None:
        return NotImplemented
    arrays = list(arrays)
    arrays = [
        a if isinstance(a, int | float) or hasattr(a, "dtype") else np.asarray(a) for a in arrays
    ]
    numbers = [not hasattr(a, "dtype") or getattr(a, "weak", False) for a in arrays]
    # (stand-ins for NumPy's weak promotion: a Python int or float of the same kind)
    kinds = [(a if not hasattr(a, "dtype") else a.dtype.type(0).item()) if n else a.dtype
             for a, n in zip(arrays, numbers, strict=True)]  # fmt: skip
    common = np.result_type(*kinds)
    with np.errstate(all="ignore"):  # (300 in uint8 is 44, as NumPy's cast)
        parts = [
            np.ravel(a).astype(common) if n else np.ravel(a)
            for a, n in zip(arrays, numbers, strict=True)
        ]
    return np.concatenate(parts, 0, **kwargs)


def clip(a: Any, *bounds: Any, **kwargs: Any) -> Any:
    """``np.clip`` with a bound named (``a_min=``/``a_max=``, or NumPy 2.1's ``min=``
    and ``max=``): as given by position.  A Python-int bound of an integer array beyond
    the dtype on its own side (a lower one below its least value, an upper one above its
    greatest) bounds nothing, as in NumPy 2, and is left out (one beyond the other side is
    the language's error, as NumPy's); one known only at call time is clamped to the
    dtype's range first.  A Python bool bound of numbers is 0 or 1.
    Otherwise, bounds by position: NotImplemented."""
    names = [k for k in ("a_min", "a_max", "min", "max") if k in kwargs]
    old_names = [k for k in ("a_min", "a_max") if k in kwargs]
    if old_names and len(bounds) + len(old_names) < 2:  # (NumPy's TypeError)
        trace_error("`np.clip` with `a_min=` or `a_max=` takes both: give None for no bound")
    given = list(bounds) + [None] * (2 - len(bounds))
    for k in names:
        given[0 if k in ("a_min", "min") else 1] = kwargs.pop(k)
    dropped = False
    if any(type(b) is bool for b in given[:2]):
        if getattr(a, "dtype", None) == np.bool_:  # (NumPy's clip: minimum of maximum)
            low, high = given[:2]
            done = a if low is None else np.maximum(a, low)
            return done if high is None else np.minimum(done, high)
        dropped = True  # a Python bool bound of numbers: 0 or 1
        given = [int(b) if type(b) is bool else b for b in given]
    if getattr(a, "dtype", np.dtype(np.float64)).kind in "iu" and not getattr(a, "weak", True):
        info = np.iinfo(a.dtype)
        for side, bound in enumerate(given[:2]):
            if type(bound) is int and (bound < info.min if side == 0 else bound > info.max):
                given[side], dropped = None, True
            elif getattr(bound, "weak", False) and bound.dtype.kind == "i":  # known at call time
                low, high = max(info.min, -(2**63)), min(info.max, 2**63 - 1)
                given[side] = np.clip(bound, low, high).astype(a.dtype)
                dropped = True
    if not names and not dropped and len(bounds) == 2:
        return NotImplemented
    if given[0] is None and given[1] is None and dropped:
        return a  # (NumPy's copy: a traced value is never written in place)
    return np.clip(a, *given[:2], **kwargs)


def copy(a: Any, *args: Any, **kwargs: Any) -> Any:
    """``np.copy`` (``x.copy()``): the value itself, as a traced value is never written in
    place (the language's ``copy`` takes no booleans)."""
    return a


def conjugate(x: Any) -> Any:
    """``np.conj`` of integers: the value itself, of its dtype (the language's ``conj``
    takes floats); of floats, the language's (NotImplemented; of booleans NumPy gives
    int8, which tdsl lacks: the language's error)."""
    return x if x.dtype.kind in "iu" else NotImplemented


def _like(a: Any, dtype: Any, shape: Any, what: str) -> tuple[Any, np.dtype[Any]]:
    """Ones of ``a``'s shape in ``dtype`` (``a``'s by default), for a ``*_like``."""
    if shape is not None:
        trace_error(f"`shape=` of `np.{what}` is not supported when traced")
    wanted = np.dtype(a.dtype if dtype is None else dtype)
    # (the language's ones_like takes numbers: of booleans, ones of a uint8 copy)
    ones = np.ones_like(a if a.dtype != np.bool_ else a.astype(np.uint8))
    return (ones if ones.dtype == wanted else ones.astype(wanted)), wanted


def _check_fill(value: Any, shape: tuple[int, ...], dtype: np.dtype[Any]) -> None:
    """Refuse what NumPy refuses to fill an array of ``shape`` and ``dtype`` with: a
    value of a shape that does not broadcast to it, a Python int out of its range."""
    given = tuple(value.shape) if hasattr(value, "shape") else np.shape(value)
    try:
        fits = np.broadcast_shapes(given, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        trace_error(
            f"the fill value of `np.full_like` (shape {given}) does not broadcast to {shape}"
        )
    if isinstance(value, int) and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            trace_error(f"the fill value {value} of `np.full_like` is out of bounds for {dtype}")


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None, **kw: Any) -> Any:
    """``np.full_like``: ``fill_value`` cast to the dtype (as NumPy casts it), times ones
    of ``a``'s shape (nan, infinities and -0.0 kept)."""
    ones, wanted = _like(a, dtype, shape, "full_like")
    _check_fill(fill_value, tuple(a.shape), wanted)
    if hasattr(fill_value, "shape") and not isinstance(fill_value, np.ndarray):
        value = fill_value.astype(wanted)  # (a traced value)
    else:
        with np.errstate(all="ignore"):
            value: Any = np.asarray(cast(Any, fill_value)).astype(wanted)
    return np.logical_and(ones, value) if wanted == np.bool_ else np.multiply(ones, value)


def zeros_like(a: Any, dtype: Any = None, shape: Any = None, **kw: Any) -> Any:
    """``np.zeros_like`` (and ``np.empty_like``, whose values NumPy leaves unset)."""
    return full_like(a, 0, dtype, shape)


def ones_like(a: Any, dtype: Any = None, shape: Any = None, **kw: Any) -> Any:
    """``np.ones_like`` with ``dtype=``: ones cast; without it: NotImplemented."""
    if dtype is None and shape is None and a.dtype != np.bool_:
        return NotImplemented
    return _like(a, dtype, shape, "ones_like")[0]


def einsum(*operands: Any, optimize: Any = False, **kwargs: Any) -> Any:
    """``np.einsum`` with ``optimize=`` (the order NumPy contracts in, which the values
    do not depend on but for rounding): without it.  Without: NotImplemented."""
    subscripts_first(operands)
    if optimize is False:
        return NotImplemented
    return np.einsum(*operands, **kwargs)


def _power_of_ten(n: int) -> float:
    """NumPy's ``power_of_ten``, ``np.round``'s scale: exact up to 1e8, then 1e9 times
    10.0 once a step, each product rounded (its 1e23 is not Python's ``10.0 ** 23``),
    inf past 1e308."""
    if n < 9:
        return 10.0**n
    scale = 1e9
    for _ in range(n - 9):
        scale *= 10.0
        if scale == math.inf:
            break
    return scale


def round_(a: Any, decimals: Any = None, out: Any = None) -> Any:
    """``np.round`` to ``decimals`` places, as NumPy computes it: ``rint(a * 10**d) /
    10**d`` (for negative ``d``, ``rint(a / 10**-d) * 10**-d``), the power of ten a
    Python float (weak: float32 stays float32).  Zero places: the language's
    ``round`` (NotImplemented when not given; ``np.round(a)`` when spelled out as
    ``decimals=0``); integers to places: themselves."""
    places = 0 if decimals is None else static_ints(decimals, "`decimals` of `np.round`")[0]
    if out is not None:
        trace_error("`out=` of `np.round` writes into an array in place: use the returned value")
    if places == 0:
        return NotImplemented if decimals is None else np.round(a)
    if a.dtype.kind in "iub":
        if places > 0:
            return strong(a)
        trace_error("`np.round` of integers to negative decimals is not supported when traced")
    scale = _power_of_ten(abs(places))
    if places > 0:
        return np.divide(cast(Any, np.round(np.multiply(a, scale))), scale)
    return np.multiply(cast(Any, np.round(np.divide(a, scale))), scale)


def positive(x: Any) -> Any:
    """``np.positive`` (``+x``): the same values; NumPy refuses booleans."""
    if x.dtype == np.bool_:
        trace_error("`np.positive` (unary `+`) of booleans is not supported, as in NumPy")
    return strong(x)


def signbit(x: Any) -> Any:
    """``np.signbit``: whether the sign bit is set (``-0.0`` and a negative nan too)."""
    return np.less(np.copysign(1.0, _floats(x)), 0)


def _logical(name: str) -> Callable[..., Any]:
    """NumPy's logical function ``name`` of any operands: of their truth.  Of booleans
    alone: NotImplemented (the language's function; ``xor``: ``!=``)."""
    xor = name == "logical_xor"

    def logical(*operands: Any) -> Any:
        if not xor and all(getattr(v, "dtype", None) == np.bool_ for v in operands):
            return NotImplemented
        truths = [_truth(v) for v in operands]
        return np.not_equal(*truths) if xor else getattr(np, name)(*truths)

    return logical


def _nan_reduction(name: str) -> Callable[..., Any]:
    """NumPy's ``nan{name}``: ``name`` over the elements that are not nan (integers and
    booleans have none: ``name`` itself).  A sum counts nan as 0 and a product as 1 (of
    none: 0 and 1, as NumPy's); a max or min of a slice of nan only is nan, and a mean
    divides the sum by the count in float64 and rounds to the dtype, as NumPy's (nan
    for no elements).  ``nanmax`` and ``nanmin`` take no ``dtype``, as NumPy's."""

    def over(a: Any, axis: Any, dtype: Any, out: Any, keepdims: Any) -> Any:
        if out is not None:
            trace_error(
                f"`out=` of `np.nan{name}` writes into an array in place: use the returned value"
            )
        a = as_array(a) if dtype is None else as_array(a).astype(dtype)
        if a.dtype.kind != "f":
            return getattr(np, name)(a, axis=axis, keepdims=keepdims)
        nan = np.isnan(a)
        if name in ("max", "min"):
            bound = -np.inf if name == "max" else np.inf
            value = getattr(np, name)(np.where(nan, bound, a), axis=axis, keepdims=keepdims)
            return np.where(np.all(nan, axis=axis, keepdims=keepdims), np.nan, value)
        if name == "prod":
            return np.prod(np.where(nan, 1, a), axis=axis, keepdims=keepdims)
        total = np.sum(np.where(nan, 0, a), axis=axis, keepdims=keepdims)
        if name == "sum":
            return total
        count = np.sum(np.logical_not(nan), axis=axis, keepdims=keepdims)
        some = count > 0  # (no 0 / 0: NumPy's own raises no FloatingPointError)
        mean = np.divide(total, np.where(some, count, 1))
        return np.where(some, mean, np.nan).astype(a.dtype)

    def extreme(a: Any, axis: Any = None, out: Any = None, keepdims: Any = False) -> Any:
        return over(a, axis, None, out, keepdims)

    def reduce(
        a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False
    ) -> Any:
        return over(a, axis, dtype, out, keepdims)

    return extreme if name in ("max", "min") else reduce


COMPOSED: dict[str, Callable[..., Any]] = {
    "np.repeat": repeat,
    "np.tile": tile,
    "np.outer": outer,
    "np.diff": diff,
    "np.ptp": ptp,
    "np.flip": flip,
    "np.flipud": flipud,
    "np.fliplr": fliplr,
    "np.roll": roll,
    "np.count_nonzero": count_nonzero,
    "np.nan_to_num": nan_to_num,
    "np.isclose": isclose,
    "np.pad": pad,
    "np.take_along_axis": take_along_axis,
    "np.linalg.norm": norm,
    **{f"np.nan{n}": _nan_reduction(n) for n in ("sum", "prod", "max", "min", "mean")},
    **{f"np.{n}": _with_dtype(n) for n in ("cumsum", "cumprod")},
    **{f"np.{n}": with_initial(n, _with_dtype(n)) for n in ("sum", "prod")},
    **{f"np.{n}": with_initial(n) for n in ("max", "min", "amax", "amin")},
    "np.average": average,
    "np.mean": _with_dtype("mean", exact_mean=True),
    "np.full_like": full_like,
    "np.zeros_like": zeros_like,
    "np.empty_like": zeros_like,
    "np.ones_like": ones_like,
    "np.einsum": einsum,
    "np.concatenate": concatenate,
    "np.clip": clip,
    "np.copy": copy,
    "np.conjugate": conjugate,
    "np.tensordot": tensordot,
    **SHAPES,
    **SELECT,
    "np.shape": lambda a: a.shape,  # (static: NumPy's, of the traced shape)
    "np.ndim": lambda a: a.ndim,
    "np.size": lambda a, axis=None: a.size if axis is None else a.shape[axis],
    "np.dot": dot,
    "np.inner": inner,
    "np.round": round_,
    "np.around": round_,
    # ufuncs (their tracer's __array_ufunc__ asks)
    "np.fabs": fabs,
    "np.rint": rint,
    "np.positive": positive,
    "np.signbit": signbit,
    **{f"np.{n}": _logical(n) for n in ("logical_and", "logical_or", "logical_xor", "logical_not")},
}
"""NumPy's functions (by their name under ``np``) that a trace writes as the calls above
(one that returns NotImplemented leaves the call to the language)."""

__all__ = ["COMPOSED"]
