"""The names and errors of :mod:`tdsl.jit.tracer`: NumPy's names of the language's
dtypes, ufuncs and functions, the user's line an error points at, literals."""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn, cast

import numpy as np

from tdsl.dtypes import SHORT_NAMES
from tdsl.errors import SourceLocation, TdslCallError, TdslError, TdslTypeError

_TDSL_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__))
_STDLIB_DIR = os.path.dirname(os.path.abspath(contextlib.__file__))


UFUNC_OPERATORS = {
    "add": "+",
    "subtract": "-",
    "multiply": "*",
    "divide": "/",
    "true_divide": "/",
    "floor_divide": "//",
    "remainder": "%",
    "matmul": "@",
    "bitwise_and": "&",
    "bitwise_or": "|",
    "bitwise_xor": "^",
}
"""Binary ufuncs written as the language's operators."""

WEAK_ARITHMETIC = frozenset(
    {"add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "negative"}
    | {"invert", "absolute"}
)
"""Ufuncs whose result on Python numbers is a Python number (by Python's operator or
``abs``)."""

WEAK_OPERATOR_METHODS = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "truediv": np.true_divide,
    "floordiv": np.floor_divide,
    "mod": np.remainder,
    "pow": np.power,
    "lshift": np.left_shift,
    "rshift": np.right_shift,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "divmod": np.divmod,
}
"""Python's binary operators (``__add__``, ``__radd__``) and the ufuncs they are: on
Python numbers a Python number (weak), where the ufunc called by name gives a NumPy
scalar (strong)."""

COMPARISON_OPERATORS = {
    "less": "<",
    "less_equal": "<=",
    "greater": ">",
    "greater_equal": ">=",
    "equal": "==",
    "not_equal": "!=",
}
"""Python's comparisons of Python numbers, written as the language's operators: a Python
bool, weak as the language types it (``2 * (s < 0)`` is a Python int, ``x * (s < 0)``
keeps ``x``'s dtype)."""

COMPARISON_METHODS = {
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
}
"""Python's comparisons (``__lt__``) and the ufuncs they are: on Python numbers a Python
``bool``, where the ufunc called by name gives a NumPy ``bool``."""

ZERO_DIVISORS = {
    "divide": "`/`",
    "true_divide": "`/`",
    "floor_divide": "`//`",
    "remainder": "`%`",
    "divmod": "divmod()",
}
"""Ufuncs that Python's operators on Python numbers refuse a zero divisor to
(``ZeroDivisionError``), where NumPy's give ``inf``, ``nan`` or 0: to the operator."""

WEAK_OPERATORS = {
    "power": "**",
    "remainder": "%",
    "left_shift": "<<",
    "right_shift": ">>",
    "bitwise_and": "&",
    "bitwise_or": "|",
    "bitwise_xor": "^",
}
"""Python's other binary operators on Python numbers, a Python number too (``d ** 0.5``
of a Python int ``d`` is a Python float, weak: ``q / d ** 0.5`` stays float32), written
as the language's operators, which it computes on weak values as NumPy does (``**`` of
two integers excepted: the language refuses it, so it stays ``power``)."""

STRONG_NUMBERS = frozenset({"concatenate", "stack", "hstack", "vstack"})
"""NumPy functions that convert the Python numbers among their arrays with
``np.asarray``: strong float64/int64 (``np.hstack([y, 1.0])`` of a float32 ``y`` is
float64), unlike a ufunc's, which are weak; ``np.clip``'s first argument too."""


def strong_numbers(name: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` of NumPy's function ``name`` with the Python numbers it makes arrays of
    (see :data:`STRONG_NUMBERS`) as NumPy scalars, which a trace spells strong."""

    def strong(v: Any) -> Any:
        if getattr(v, "weak", False) is True:  # a traced Python number given at run time
            return v.astype(v.dtype)
        return np.asarray(v)[()] if isinstance(v, int | float) and not isinstance(v, bool) else v

    if name in STRONG_NUMBERS and args and isinstance(args[0], tuple | list):
        items: list[Any] = [strong(v) for v in cast(Sequence[Any], args[0])]
        return (tuple(items) if isinstance(args[0], tuple) else items, *args[1:])
    if name == "clip" and args:
        return (strong(args[0]), *args[1:])
    return args


UFUNC_NAMES = {"negative": "neg", "absolute": "abs", "mod": "remainder", "conjugate": "conj"}
"""Ufuncs whose language function has another name."""

FUNCTION_NAMES = {"amax": "max", "amin": "min", "round_": "round", "around": "round"}
"""Array functions whose language function has another name."""

NO_VALUES = (
    "a traced array has no values while tdsl traces the function (it stands for the "
    "array the compiled kernel computes)"
)


def user_location() -> SourceLocation | None:
    """Where the user's code is: the innermost frame outside tdsl, NumPy and Python's
    standard library (``contextlib``'s, around a compile)."""
    frame = sys._getframe(1)  # pyright: ignore[reportPrivateUsage]
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        library = path.startswith(_STDLIB_DIR) and "-packages" not in path
        # (and code tdsl generates: a kernel's call, `<tdsl call main>`)
        ours = path.startswith((_TDSL_DIR, _NUMPY_DIR)) or frame.f_code.co_filename.startswith(
            "<tdsl"
        )
        if not ours and not library and not frame.f_code.co_filename.startswith("<frozen"):
            text = linecache.getline(path, frame.f_lineno)
            stripped = text.strip()
            column = len(text) - len(text.lstrip()) + 1 if stripped else 1
            return SourceLocation(
                frame.f_code.co_filename,
                frame.f_lineno,
                column,
                max(1, len(stripped)),
                text.rstrip("\n") if stripped else None,
            )
        frame = frame.f_back
    return None


def subscripts_first(operands: Sequence[Any]) -> None:
    """Refuse ``np.einsum``'s interleaved form (operands and lists of axis numbers): its
    lists were read as arrays, and the error said "3 were given" (found by fuzzing)."""
    if operands and not isinstance(operands[0], str):
        trace_error(
            "`np.einsum`'s interleaved form (operands and lists of axis numbers) is not "
            "supported when traced: give the subscripts as a string (`np.einsum('ij,jk', a, b)`)"
        )


def traced_argument(where: str) -> NoReturn:
    """The error of a compiled kernel called on a traced array, at the traced line."""
    trace_error(
        f"{where} is a traced array: a compiled kernel runs on values, which a traced "
        "function does not have while it is traced; call a `tdsl.trace`d function there "
        "instead (its trace joins this one's) or the NumPy code itself",
        TdslCallError,
    )


VALUE_HINTS = {
    "np.full": "NumPy fills a new NumPy array with them; write `np.broadcast_to(v, shape)` "
    "(or `np.full_like(x, v)` for the shape and dtype of a traced `x`)",
}
"""What to write instead of a NumPy function that converts a traced argument to an
array (where NumPy's dispatch does not see it), by the function's name."""


def numpy_caller() -> str | None:
    """The NumPy function the user's code called that is running now (the outermost
    NumPy frame below the user's), as ``np.full``; None where NumPy is not running."""
    frame = sys._getframe(1)  # pyright: ignore[reportPrivateUsage]
    found: str | None = None
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if path.startswith(_NUMPY_DIR):
            found = frame.f_code.co_name
        elif not path.startswith(_TDSL_DIR):
            break
        frame = frame.f_back
    return None if found is None or found.startswith("_") else f"np.{found}"


def values_needed() -> NoReturn:
    """The error for NumPy converting a traced array to a NumPy one: what to write
    instead where the NumPy function doing it has a hint (:data:`VALUE_HINTS`)."""
    caller = numpy_caller()
    if caller in VALUE_HINTS:
        trace_error(
            f"`{caller}` needs the values of a traced array, and {NO_VALUES}: "
            + VALUE_HINTS[caller]
        )
    trace_error(
        f"NumPy needs the values of a traced array here, and {NO_VALUES}: a NumPy array "
        "indexed by a traced one (`W[i]`, `np.take(W, i)`: pass `W` as an argument), a "
        "list of traced arrays (`np.sum([x, y])`: `np.stack` them), `np.asarray`, or a "
        "NumPy scalar type called on one (`np.float32(s)`, `np.int32(x)`: write "
        "`x.astype(np.int32)`, or pass a Python number argument in as `np.float32(s)`)"
    )


def trace_error(message: str, kind: type[TdslError] = TdslTypeError) -> NoReturn:
    raise kind(message, user_location())


def not_static(name: str, what: str) -> NoReturn:
    """The error for a Python-number argument ``name`` that ``what`` needs the value of."""
    trace_error(
        f"argument `{name}` is a Python number the traced call gets only when it runs, and "
        f'{what} needs it now: make it static, `static_argnames=("{name}",)`',
        TdslCallError,
    )


def spell_dtype(dtype: Any) -> str:
    """The language's name of a NumPy dtype (``float32``), or an error."""
    try:
        d = np.dtype(dtype)
    except TypeError:
        trace_error(f"`{dtype!r}` is not a dtype")
    if d.name not in SHORT_NAMES:
        trace_error(
            f"dtype {d.name} is not in tdsl (it has {', '.join(SHORT_NAMES)})", TdslTypeError
        )
    return "bool_" if d.name == "bool" else d.name


ZERO_D_AXIS = frozenset(
    {"sum", "prod", "max", "min", "amax", "amin", "any", "all", "argmax", "argmin", "cumsum"}
    | {"cumprod"}
)
"""NumPy's functions that take ``axis=0`` (or ``-1``) of a 0-d array as its whole (not
a tuple; not ``mean``, ``var``, ``std``: NumPy's ``AxisError``)."""


STATIC_KEYWORDS = frozenset({"axis", "axes", "shape", "newshape", "keepdims", "ddof", "k", "n"})
"""Arguments of NumPy's functions that must be Python values (a trace writes them into
the program), by keyword."""

STATIC_REST = frozenset(
    {"swapaxes", "moveaxis", "transpose", "split", "array_split", "broadcast_to"}
)
"""Functions whose arguments after the first are all axes, shapes or sections."""
STATIC_SECOND = ZERO_D_AXIS | {"mean", "var", "std", "reshape", "expand_dims", "squeeze"}
"""NumPy's functions whose second positional argument is such a value (an axis, a shape)."""
SEQUENCE_KEYWORDS = frozenset({"shape", "newshape", "axes", "indices_or_sections"})
SEQUENCE_FUNCTIONS = frozenset({"reshape", "broadcast_to", "transpose", "split", "array_split"})
"""Where NumPy takes a 1-d integer array for a sequence of ints (a shape, a permutation,
split points), by keyword and by function (its arguments after the first)."""


def _traced(value: Any) -> bool:
    return hasattr(value, "_trace") and hasattr(value, "__index__")  # a Tracer


def holds_traced(*values: Any) -> bool:
    """Whether ``values`` (nested in tuples, lists and dicts) hold a traced value: a call
    with one is part of a trace (a traced function's, called inside another's)."""
    stack = list(values)
    seen: set[int] = set()  # (a list that holds itself is walked once)
    while stack:
        v = stack.pop()
        if isinstance(v, tuple | list | dict):
            if id(v) in seen:
                continue
            seen.add(id(v))
            items = cast(dict[Any, Any], v).values() if isinstance(v, dict) else v
            stack.extend(cast(Sequence[Any], items))
        elif _traced(v):
            return True
    return False


def check_static(value: Any) -> None:
    """Raise the error of a traced value (an array, or a weak scalar argument) used as a
    Python int (``operator.index``, :meth:`Tracer.__index__`'s) where ``value`` (nested in
    tuples and lists) holds one: a slice bound, an axis or a shape must be static."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple | list):
            stack.extend(cast(Sequence[Any], v))
        elif _traced(v):
            v.__index__()


def static_ints(value: Any, sequence: bool = False) -> Any:
    """``value`` (checked by :func:`check_static`) with its NumPy integers as Python ints,
    nested in tuples and lists, as a slice bound, an axis or a shape takes them
    (``x.reshape(n, np.prod(x.shape[1:]))``, a 0-d integer array too), and where a
    ``sequence`` may stand (a shape, a permutation, split points) a 1-d integer array as
    the tuple of its ints, as NumPy takes them; other values unchanged."""
    check_static(value)
    if isinstance(value, tuple | list):
        items = [static_ints(v) for v in cast(Sequence[Any], value)]
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu" and value.ndim <= sequence:
        array = cast(np.ndarray[Any, Any], value)
        return int(array) if array.ndim == 0 else tuple(int(v) for v in array)
    return value


def ufunc_operand(name: str, value: Any) -> Any:
    """An operand of ufunc ``name`` as NumPy takes it: a list or tuple of numbers is the
    array ``np.asarray`` makes of it (``img * [0.299, 0.587, 0.114]``: a float64 array,
    strong), captured as a constant input; ``None`` is an error, as in NumPy."""
    if isinstance(value, list | tuple):
        if holds_traced(value):
            trace_error(
                f"a {type(value).__name__} holding traced arrays is an operand of `np.{name}`: "
                "make it one array first (`np.stack`, `np.array` is not traced)"
            )
        try:
            return np.asarray(value)
        except ValueError:
            trace_error(f"a ragged {type(value).__name__} is not an operand of `np.{name}`")
    if value is None:
        trace_error(f"None is not an operand of `np.{name}` (NumPy cannot compute it either)")
    return value


def missing_hint(name: str) -> str | None:
    """Why NumPy's function ``name`` is not in the language, or what to write instead
    (``np.median``: sorting is not in the language), as docs/from-numpy.md's tables say; None if neither."""
    from tdsl.frontend.functions import NUMPY_ALIASES, NUMPY_MISSING

    if name in NUMPY_MISSING:
        return NUMPY_MISSING[name]
    return f"write {NUMPY_ALIASES[name]}" if name in NUMPY_ALIASES else None


def ufunc_inputs(name: str, inputs: tuple[Any, ...], composed: bool) -> tuple[Any, ...]:
    """The operands of NumPy's ufunc ``name`` (see :func:`ufunc_operand`), once the
    ufunc is known to be one the trace can write (the language's, an operator, or
    ``composed`` of others): else an error naming NumPy's ufunc, not a misspelling of a
    function the language has (``np.fmax`` is not ``max``, ``np.frexp`` not ``exp``)."""
    from tdsl.frontend.functions import FUNCTIONS

    known = composed or name in UFUNC_OPERATORS or UFUNC_NAMES.get(name, name) in FUNCTIONS
    if not known:
        why = missing_hint(name) or "the language has no such function"
        label = f"`np.{name}`" if hasattr(np, name) else f"the ufunc `{name}`"
        trace_error(
            f"{label} is not supported when traced ({why}; docs/from-numpy.md lists what "
            "a traced function may call)"
        )
    return tuple(ufunc_operand(name, x) for x in inputs)


def numpy_call(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[str, tuple[Any, ...]]:
    """NumPy's function ``name`` on ``args`` as a trace writes it: the Python numbers it
    makes arrays of strong (:func:`strong_numbers`), and ``np.clip`` with one bound
    ``None`` (``np.clip(x, 0, None)``) as the one ``maximum`` or ``minimum`` it is (the
    language's ``clip`` takes both bounds).  An int ``keepdims`` in ``kwargs`` (NumPy
    takes its truth: ``keepdims=1``) becomes the bool the language takes."""
    for k in STATIC_KEYWORDS & kwargs.keys():
        kwargs[k] = static_ints(kwargs[k], k in SEQUENCE_KEYWORDS)
    sequence = name in SEQUENCE_FUNCTIONS
    if name in STATIC_REST:
        args = (args[0], *(static_ints(a, sequence) for a in args[1:]))
    elif name in STATIC_SECOND and len(args) > 1:
        args = (args[0], static_ints(args[1], sequence), *args[2:])
    if type(kwargs.get("keepdims")) in (int, np.bool_):
        kwargs["keepdims"] = bool(kwargs["keepdims"])
    if name in ZERO_D_AXIS and args and getattr(args[0], "ndim", None) == 0:
        # NumPy's reductions and scans take axis 0 or -1 of a 0-d array: its one element
        axis = kwargs.get("axis", args[1] if len(args) > 1 else None)
        if type(axis) is int and axis in (0, -1):
            kwargs.pop("axis", None)
            args = args[:1] + (None,) * (len(args) > 1) + args[2:]
    if name == "take" and len(args) > 1 and type(args[1]) is int:
        # (an index NumPy takes as a 0-d index array: the axis goes, as x[:, 2] drops it)
        args = (args[0], np.int64(args[1]), *args[2:])
    elif name == "take" and len(args) > 1 and isinstance(args[1], list | tuple):
        args = (args[0], ufunc_operand(name, args[1]), *args[2:])  # (the array NumPy makes)
    args = strong_numbers(name, args)
    if name == "clip" and len(args) == 3 and args[1] is None and args[2] is None:
        return "copy", args[:1]  # (NumPy 2 clips to no bound: the array, copied)
    if name == "clip" and len(args) == 3 and (args[1] is None) != (args[2] is None):
        return ("maximum", args[:2]) if args[2] is None else ("minimum", (args[0], args[2]))
    if name == "transpose" and len(args) == 2 and args[1] is None:
        return name, args[:1]
    from tdsl.frontend.functions import FUNCTIONS

    info = FUNCTIONS.get(name)
    bad = [k for k, v in kwargs.items() if v is not None and info and k not in info.keywords]
    if info is not None and bad:  # (NumPy's own keywords the language lacks)
        takes = ", ".join(f"`{k}=`" for k in info.keywords) or "no keywords"
        trace_error(
            f"`np.{name}` with `{bad[0]}=` is not supported when traced (the language's "
            f"`{name}` takes {takes})"
        )
    return name, args


def split_results(name: str, qualified: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> int:
    """How many arrays NumPy's function ``name`` returns: the parts of a split, else one."""
    if name not in ("split", "array_split"):
        return 1
    sections: Any = args[1] if len(args) > 1 else kwargs.get("indices_or_sections")
    if isinstance(sections, int | np.integer):
        return int(cast(int, sections))
    if isinstance(sections, tuple | list):
        return len(cast(Sequence[Any], sections)) + 1
    trace_error(f"`{qualified}` takes a number of sections or a sequence of indices")


def bool_operand(value: Any, python: bool = False) -> str | None:
    """A Python or NumPy bool as an operand of the language (which writes ``True`` only as
    a keyword's value): a strong bool, as NumPy's ``x * True`` and ``m & True`` compute
    it (a bool never widens the other operand); in Python's arithmetic on Python numbers
    (``python``), a Python ``bool`` a comparison of literals makes, which it takes as an
    int (``s * True`` is ``s``, weak); None for any other value."""
    if python and isinstance(value, bool):
        return "(1 > 0)" if value else "(0 > 1)"
    if isinstance(value, bool | np.bool_):
        return f"astype({1 if value else 0}, bool)"
    if not python and getattr(value, "weak", False) and getattr(value, "dtype", None) == np.bool_:
        # (a traced Python bool, `s < 0`, to a NumPy function: a NumPy bool, as NumPy
        # takes it: `np.abs(s < 0)` is `np.True_`, where Python's `abs` gives 1)
        return f"astype({value.name}, bool)"
    return None


def literal(value: Any) -> str:
    """A Python or NumPy number as a literal of the language (``inf``, ``(-inf)``, ``nan``
    too); a ``uint64`` beyond int64 as the int64 of its bits, which ``astype(...,
    uint64)`` gives back (the literal is an int64)."""
    if isinstance(value, np.generic):
        big = isinstance(value, np.uint64) and int(value) >> 63
        value = int(value) - (1 << 64) if big else value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return "nan" if np.isnan(value) else ("inf" if value > 0 else "(-inf)")
    return repr(value)


def operand(text: str) -> str:
    """``text`` as an operand of an operator: a negative literal in parentheses
    (``(-4.5) ** n``; written ``-4.5 ** n``, it is ``-(4.5 ** n)``, which lost its
    sign; found by fuzzing)."""
    return f"({text})" if text.startswith("-") else text


DATA_DEPENDENT = frozenset(
    {"nonzero", "argwhere", "flatnonzero", "unique", "extract", "compress", "trim_zeros"}
)
"""Functions whose result's shape depends on the values (no kernel has a static one)."""


SCALAR_RESULTS = frozenset(
    {"all", "any", "argmax", "argmin", "max", "min", "mean", "prod", "std", "var", "sum"}
    | {"logsumexp", "matmul", "einsum", "take", "clip", "round"}
)
"""The language's functions (as NumPy names them, after ``FUNCTION_NAMES``) whose 0-d
result NumPy gives as a NumPy scalar, not a 0-d array: reductions, contractions, a
``take`` of one element, and the element-wise ones that are not ufuncs."""

ARRAY_COMPOSED = frozenset(
    {"np.copy", "np.empty_like", "np.full_like", "np.ones_like", "np.zeros_like"}
    | {"np.select", "np.tensordot", "np.roll", "np.pad", "np.tile"}
)
"""The functions a trace writes as others (``COMPOSED``) whose 0-d result NumPy gives as a
0-d array; every other one's is a NumPy scalar (``np.nanmax``, ``np.linalg.norm``)."""

KEEP_SCALAR = frozenset(("astype", "reshape", "squeeze", "transpose", "swapaxes", "moveaxis"))
"""Those whose 0-d result is a NumPy scalar where their operand is one (``x.sum().astype(
np.float32)``), a 0-d array where it is one."""


__all__ = [
    "ARRAY_COMPOSED",
    "COMPARISON_METHODS",
    "DATA_DEPENDENT",
    "FUNCTION_NAMES",
    "KEEP_SCALAR",
    "NO_VALUES",
    "SCALAR_RESULTS",
    "UFUNC_NAMES",
    "UFUNC_OPERATORS",
    "WEAK_ARITHMETIC",
    "WEAK_OPERATORS",
    "WEAK_OPERATOR_METHODS",
    "ZERO_DIVISORS",
    "bool_operand",
    "literal",
    "missing_hint",
    "not_static",
    "numpy_call",
    "operand",
    "spell_dtype",
    "split_results",
    "static_ints",
    "strong_numbers",
    "subscripts_first",
    "trace_error",
    "traced_argument",
    "ufunc_inputs",
    "ufunc_operand",
    "user_location",
]
