"""The arguments of NumPy's functions in a traced function: static counts, axes and
ints, and values as NumPy's functions make arrays of them."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, cast

import numpy as np

from tdsl.errors import TdslCallError, TdslZeroDivisionError
from tdsl.jit.trace_names import (
    COMPARISON_METHODS,
    COMPARISON_OPERATORS,
    NO_VALUES,
    WEAK_OPERATORS,
    ZERO_DIVISORS,
    holds_traced,
    not_static,
    trace_error,
)


class NeedsValues:
    """What a traced array cannot do, having no values while traced (a Python ``bool``,
    ``int``, a format: each a located error), and copies, which it makes as itself (a
    traced value is never changed in place)."""

    name: str
    weak: bool
    _trace: Any
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    refs: tuple[str, ...]
    scalar: bool | str

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: Any) -> Any:
        return self  # (the default deep copy copied the trace too: ops went astray)

    def _needs_values(self, what: str) -> NoReturn:
        if self.weak and self.name in self._trace.weak:  # a Python-number argument itself
            not_static(self.name, what)
        trace_error(
            f"{what} of a traced array needs its values, and {NO_VALUES}: Python control flow "
            "runs while tracing, on shapes and dtypes only; for a choice between values "
            "use `np.where`",
            TdslCallError,
        )

    def __bool__(self) -> NoReturn:
        self._needs_values("`bool(...)` (an `if`, `while`, `and`, `or` or `not`)")

    def __float__(self) -> NoReturn:
        self._needs_values("`float(...)`")

    def __int__(self) -> NoReturn:
        self._needs_values("`int(...)`")

    def __index__(self) -> NoReturn:
        self._needs_values("using it as a Python integer (a count, a size, an axis, an index)")

    def __complex__(self) -> NoReturn:
        self._needs_values("`complex(...)`")

    def __format__(self, spec: str) -> str:
        if spec:  # (`f"{x}"` is its repr, as before)
            self._needs_values(f"formatting it (`:{spec}`)")
        return repr(self)

    def item(self, *args: Any) -> NoReturn:
        self._needs_values("`.item()`")

    def tolist(self) -> NoReturn:
        self._needs_values("`.tolist()`")


def static_count(value: Any, what: str) -> int:
    """``value`` as a static non-negative count."""
    try:
        count = operator.index(value)
    except TypeError:
        trace_error(f"{what} must be a Python int when traced (a count known when compiling)")
    if count < 0:
        trace_error(f"{what} must not be negative, got {count}")
    return count


def static_axis(axis: Any, ndim: int, what: str) -> int:
    """``axis`` of an array of ``ndim`` dims, as NumPy normalizes it."""
    try:
        index = operator.index(axis)
    except TypeError:
        trace_error(f"the axis of {what} must be a Python int, got {axis!r}")
    if not -ndim <= index < ndim:
        trace_error(f"axis {index} of {what} is out of bounds for an array of {ndim} dims")
    return index % ndim


def static_ints(value: Any, what: str) -> tuple[int, ...]:
    """An int or a sequence of ints, as a tuple (not checked for sign)."""
    items: Sequence[Any] = (
        cast(Sequence[Any], value) if isinstance(value, tuple | list) else (value,)
    )
    try:
        return tuple(operator.index(v) for v in items)
    except TypeError:
        trace_error(f"{what} must be Python ints when traced, got {value!r}")


def ndim_of(value: Any) -> int:
    """The dims of an array, a traced one too (whose ``np.ndim`` is not traced)."""
    return int(value.ndim) if hasattr(value, "ndim") else int(np.ndim(value))


def as_array(value: Any) -> Any:
    """``value`` as NumPy's functions make an array of it (a list, a number: strong)."""
    return value if hasattr(value, "ndim") else np.asarray(value)


def weak_type(v: Any) -> type[int] | type[float] | None:
    """The Python type of a traced Python-number argument (weak: NumPy's ufuncs and
    ``np.result_type`` read it as a Python ``int`` or ``float``, NEP 50), else None."""
    if not getattr(v, "weak", False):
        return None
    return float if np.dtype(v.dtype).kind == "f" else int


def strong(v: Any) -> Any:
    """``v`` as ``np.asarray`` makes it: a Python number (or a traced Python-number
    argument, weak) a float64/int64 array."""
    if not hasattr(v, "dtype"):
        return np.asarray(v)
    return v.astype(v.dtype) if getattr(v, "weak", False) else v


ARRAY_OPERANDS = frozenset({"where", "dot", "matmul", "inner", "outer", "einsum"})
"""NumPy's functions whose positional arguments are all arrays (``einsum``'s after its
subscripts)."""
JOINS = frozenset({"concatenate", "stack", "hstack", "vstack", "column_stack", "dstack"})
"""NumPy's functions whose first argument is a sequence of arrays."""


def list_operands(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """``args`` (and ``kwargs``' ``prepend``/``append``, in place) with each list or tuple
    of numbers that ``name`` reads as an array made one, as NumPy makes it: ``np.where(c,
    [1, 2], 0)``, ``np.concatenate([x, [0.0]])``; a sequence holding traced arrays (a
    join's) stays one."""

    def array(v: Any) -> Any:
        return np.asarray(v) if isinstance(v, list | tuple) and not holds_traced(v) else v

    for key in ("prepend", "append"):
        if key in kwargs:
            kwargs[key] = array(kwargs[key])
    if name in ARRAY_OPERANDS:
        first = 1 if name == "einsum" else 0
        return tuple(array(a) if i >= first else a for i, a in enumerate(args))
    if name in JOINS and args and isinstance(args[0], list | tuple):
        return (type(args[0])(array(a) for a in args[0]), *args[1:])
    return args


def numpy_method(function: Callable[..., Any]) -> Callable[..., Any]:
    """A method of a traced array that calls NumPy's ``function`` of it (``x.sum()``)."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return function(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = function.__name__
    return method


def transpose_method(self: Any, *axes: Any) -> Any:
    """``x.transpose(...)``: axes given apart, as a tuple or list, or None."""
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], tuple | list)):
        axes = () if axes[0] is None else tuple(axes[0])
    return np.transpose(self, axes or None)


def reshape_method(self: Any, *shape: Any, order: Any = "C", copy: Any = None) -> Any:
    """``x.reshape(...)``: the shape given apart, or as a tuple, list or array."""
    if len(shape) == 1 and isinstance(shape[0], tuple | list | np.ndarray):
        shape = shape[0] if isinstance(shape[0], np.ndarray) else tuple(shape[0])
    return np.reshape(self, shape, order=order)  # (`copy`: values are never shared)


def unary_operator(ufunc: np.ufunc) -> Callable[..., Any]:
    """``-x``, ``~x`` (``ufunc`` the mixin's): marked as an operator, as
    :func:`operator_method`'s (``-s`` and ``~s`` of a Python int are Python ints)."""

    def method(self: Any) -> Any:
        self._trace.operator = True
        return ufunc(self)

    return method


def operator_method(ufunc: np.ufunc, reflected: bool) -> Callable[..., Any]:
    """``x + y`` (``ufunc`` the mixin's ``np.add``), marked as an operator: Python's
    operators on Python numbers give Python numbers (weak), NumPy's ufuncs on them NumPy
    scalars (strong: ``np.power(s, 2)`` of a Python int is an int64)."""

    def method(self: Any, other: Any) -> Any:
        self._trace.operator = True
        return ufunc(other, self) if reflected else ufunc(self, other)

    return method


def as_numpy_gives(value: Any, scalar: bool | str) -> Any:
    """``value`` (a result), if a 0-d tracer, marked as a NumPy scalar, a 0-d array or
    (``"python"``) a Python number (each of a tuple of results: ``np.divmod``'s)."""
    if isinstance(value, tuple):
        return tuple(as_numpy_gives(v, scalar) for v in cast(tuple[Any, ...], value))
    if not isinstance(value, NeedsValues) or value.shape or value.scalar == scalar:
        return value
    if scalar is True and value.scalar == "python":  # (a ufunc's result: Python's, kept)
        return value
    trace = value._trace  # pyright: ignore[reportPrivateUsage]
    return type(value)(trace, value.name, (), value.dtype, value.refs, scalar=scalar)


def python_numbers(inputs: Sequence[Any]) -> bool:
    """Whether ``inputs`` are all Python numbers: traced Python-number arguments, Python's
    arithmetic on them and literals (not NumPy scalars, which are strong)."""
    return all(
        x.weak if isinstance(x, NeedsValues) else type(x) in (bool, int, float) for x in inputs
    )


_COMPARISONS = frozenset(u.__name__ for u in COMPARISON_METHODS.values())


def python_comparison(name: str, inputs: Sequence[Any]) -> bool:
    """Whether the operator ``name`` (a ufunc's) is Python's comparison of Python numbers,
    whose result is a Python ``bool`` (``s > 0``; ``np.greater(s, 0)`` a NumPy one), or
    Python's ``& | ^`` of such bools."""
    if name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        return all(type(x) is bool or getattr(x, "scalar", None) == "python" for x in inputs)
    return name in _COMPARISONS and python_numbers(inputs)


def python_operator(name: str) -> str | None:
    """The operator Python spells the ufunc ``name`` with, on Python numbers a Python number
    or bool (``**``, ``<``), where the language would write the ufunc by name; else None."""
    return WEAK_OPERATORS.get(name) or COMPARISON_OPERATORS.get(name)


def python_result_dtype(name: str, inputs: Sequence[Any], floats: bool) -> type[np.generic]:
    """The dtype of Python's operator ``name`` (a ufunc's) on Python numbers: a float, an
    int, or a bool (a comparison's; ``&``, ``|``, ``^`` of bools, not their shifts)."""
    bools = all(isinstance(x, bool) or getattr(x, "dtype", None) == np.bool_ for x in inputs)
    if name in COMPARISON_OPERATORS or (name.startswith("bitwise_") and bools):
        return np.bool_
    return np.float64 if floats else np.int64


def round_method(self: Any, ndigits: int | None = None) -> Any:
    """``round(x)``: Python's int of a 0-d value (refused: it has none), else NumPy's
    ``np.round`` (an ndarray's)."""
    if not self.shape and ndigits is None:
        trace_error(f"`round()` of a 0-d traced value ({NO_VALUES}): use `np.round(x)`")
    return np.round(self, ndigits or 0)


def by_name_dtype(ufunc: np.ufunc, inputs: Sequence[Any], floats: bool) -> str:
    """The dtype of the NumPy scalar ``ufunc`` called by name on Python numbers gives: its
    result on stand-ins of theirs (``np.add(s, 1)`` is an int64 for an int ``s``,
    ``np.abs(s < 0)`` a bool, NumPy's absolute value of ``True``)."""

    def stand_in(x: Any) -> Any:
        if isinstance(x, bool | int | float):
            return x
        kind = np.dtype(getattr(x, "dtype", np.float64)).kind
        return True if kind == "b" else 1 if kind in "iu" else 1.0

    try:
        with np.errstate(all="ignore"):
            dtype = np.asarray(ufunc(*map(stand_in, inputs))).dtype
    except (TypeError, ValueError, OverflowError):  # (as the language would refuse it)
        dtype = np.dtype(np.float64 if floats else np.int64)
    return "bool" if dtype == np.bool_ else dtype.name


def python_division(name: str, inputs: Sequence[Any]) -> Any:
    """The operator ``name`` (a ufunc's) on Python numbers as Python computes it where that
    is not the ufunc: ``divmod`` as its ``//`` and ``%`` (Python numbers too, where
    ``np.divmod`` gives NumPy scalars); a zero literal divisor refused, as Python refuses it
    at every call (NumPy's ufuncs give ``inf``, ``nan`` or 0). ``NotImplemented`` where
    Python computes the ufunc."""
    if name not in ZERO_DIVISORS or not python_numbers(inputs):
        return NotImplemented
    a, b = inputs
    if not isinstance(b, NeedsValues) and b == 0:
        trace_error(
            f"{ZERO_DIVISORS[name]} of a Python number by zero, which Python refuses (ZeroDivisionError) "
            "at every call",
            TdslZeroDivisionError,
        )
    return (a // b, a % b) if name == "divmod" else NotImplemented


__all__ = [
    "ARRAY_OPERANDS",
    "JOINS",
    "as_array",
    "as_numpy_gives",
    "by_name_dtype",
    "list_operands",
    "ndim_of",
    "numpy_method",
    "operator_method",
    "python_comparison",
    "python_division",
    "python_numbers",
    "python_operator",
    "python_result_dtype",
    "reshape_method",
    "round_method",
    "static_axis",
    "static_count",
    "static_ints",
    "strong",
    "transpose_method",
    "unary_operator",
]
