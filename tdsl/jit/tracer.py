# pyright: reportUnknownVariableType=false, reportUnknownArgumentType=false
# pyright: reportUnknownMemberType=false
# (NumPy's protocols hand this module any Python values: it inspects them at run time)
"""The arrays :func:`tdsl.trace` runs a NumPy function on: :class:`Tracer`.

A tracer stands for an array of a known shape and dtype whose values exist only
when the compiled kernel runs.  NumPy hands every ufunc and array function called
on one to it, through its own protocols (``__array_ufunc__``, NEP 13, and
``__array_function__``, NEP 18); the operators come from NumPy's
``NDArrayOperatorsMixin``, so ``a + b`` is ``np.add(a, b)`` as for an ndarray.
Each call appends one line of tdsl to the :class:`Trace` (``v3 = exp(v2)``).

Each line is typed when it is recorded, by tdsl's own frontend (a program of the
one line, ~1 ms): the shape and dtype a tracer reports are the ones the kernel
computes, and a call tdsl refuses is a :class:`~tdsl.errors.TdslError` at the line
of the user's code that made it.  Nothing is computed: what needs values (``if
x.sum() > 0``, ``float(t)``, ``np.asarray(t)``) is an error that says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import numpy as np

from tdsl.dtypes import type_str
from tdsl.errors import SourceLocation, TdslCallError, TdslError
from tdsl.jit.trace_args import (
    NeedsValues,
    as_numpy_gives,
    by_name_dtype,
    list_operands,
    numpy_method,
    operator_method,
    python_comparison,
    python_division,
    python_operator,
    python_result_dtype,
    reshape_method,
    round_method,
    transpose_method,
    unary_operator,
)
from tdsl.jit.trace_compose import COMPOSED
from tdsl.jit.trace_names import (
    ARRAY_COMPOSED,
    COMPARISON_METHODS,
    DATA_DEPENDENT,
    FUNCTION_NAMES,
    KEEP_SCALAR,
    SCALAR_RESULTS,
    UFUNC_NAMES,
    UFUNC_OPERATORS,
    VALUE_HINTS,
    WEAK_ARITHMETIC,
    WEAK_OPERATOR_METHODS,
    bool_operand,
    literal,
    missing_hint,
    numpy_call,
    numpy_caller,
    operand,
    spell_dtype,
    split_results,
    static_ints,
    trace_error,
    ufunc_inputs,
    user_location,
    values_needed,
)
from tdsl.jit.trace_ufuncs import ufunc_method, ufunc_with_dtype


@dataclass
class Trace:
    """The program a traced function builds: its inputs, its lines, the arrays it
    captured (extra inputs, read at each call)."""

    inputs: list[tuple[str, tuple[int, ...], np.dtype[Any]]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list[str])
    places: list[SourceLocation | None] = field(default_factory=list[SourceLocation | None])
    """Where in the user's code each line was traced."""
    errstates: list[dict[str, str]] = field(default_factory=list[dict[str, str]])
    """``np.geterr()`` as each line was traced, in order (the function's ``np.errstate``)."""
    captured: list[tuple[str, np.ndarray[Any, Any]]] = field(default_factory=list)
    types: dict[str, tuple[tuple[int, ...], np.dtype[Any]]] = field(
        default_factory=dict[str, tuple[tuple[int, ...], np.dtype[Any]]]
    )
    """The shape and dtype of each value of the program, by name."""
    weak: dict[str, str] = field(default_factory=dict[str, str])
    """The weak scalar inputs, to ``float`` or ``int``."""
    operator: bool = False
    """Whether the next ufunc is a Python operator's (``s + 1``, not ``np.add(s, 1)``)."""
    done: bool = False
    """Whether the traced function has returned: its arrays compute nothing more."""
    _count: int = 0

    def fresh(self, prefix: str = "v") -> str:
        """A new name, never an input's (a parameter may be named ``v1``)."""
        self._count += 1
        while f"{prefix}{self._count}" in self.types:
            self._count += 1
        return f"{prefix}{self._count}"

    def input(
        self, name: str, shape: tuple[int, ...], dtype: np.dtype[Any], scalar: bool = False
    ) -> Tracer:
        """An array argument (``scalar``: a NumPy scalar one)."""
        self.inputs.append((name, shape, dtype))
        self.types[name] = (shape, np.dtype(dtype))
        return Tracer(self, name, shape, dtype, scalar=scalar)

    def weak_input(self, name: str, integer: bool) -> Tracer:
        """A Python ``int`` or ``float`` argument: a weak 0-d input (``n: int``)."""
        self.weak[name] = "int" if integer else "float"
        return self.input(name, (), np.dtype(np.int64 if integer else np.float64))

    def capture(self, array: np.ndarray[Any, Any]) -> Tracer:
        """An array the function reads from outside its arguments: an extra input."""
        dtype = array.dtype.newbyteorder("=")  # (a big-endian one is read as its values)
        for name, seen in self.captured:
            if seen is array:
                return Tracer(self, name, array.shape, dtype)
        spell_dtype(dtype)
        name = self.fresh("c")
        self.captured.append((name, array))
        self.types[name] = (tuple(array.shape), dtype)
        return Tracer(self, name, tuple(array.shape), dtype)

    def signature(self, names: Sequence[str]) -> str:
        return ", ".join(
            f"{n}: {self.weak[n] if n in self.weak else type_str(self.types[n][1], self.types[n][0])}"
            for n in names
        )

    def emit(self, expr: str, operands: Sequence[Tracer], results: int = 1) -> list[Tracer]:
        """Record ``names = expr`` (``results`` names): typed by the frontend now, a
        located error if tdsl refuses it."""
        from xdsl.dialects import func

        from tdsl.dialects.structured import numpy_dtype, tensor_shape
        from tdsl.frontend import to_tensordsl

        if self.done:
            trace_error(
                "a traced array is used after its traced function returned (kept in a "
                "list, a global or an attribute): it holds no values; return it instead",
                TdslCallError,
            )
        names = [self.fresh() for _ in range(results)]
        used = list(dict.fromkeys(n for t in operands for n in t.refs))
        where = user_location()
        check = (
            f"def traced({self.signature(used)}):\n"
            f"    {', '.join(names)} = {expr}\n"
            f"    return {', '.join(names)}\n"
        )
        try:
            module = to_tensordsl(check, filename="<trace>")
        except TdslError as err:
            raise type(err)(
                f"{err.message} (in the traced line `{', '.join(names)} = {expr}`)",
                where,
                note=err.note,
            ) from None
        fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
        outputs = fn.function_type.outputs.data
        self.lines.append(f"{', '.join(names)} = {expr}")
        self.places.append(where)
        self.errstates.append({k: str(v) for k, v in np.geterr().items()})
        tracers = [
            Tracer(self, n, tensor_shape(t), numpy_dtype(t))
            for n, t in zip(names, outputs, strict=True)
        ]
        for t in tracers:
            self.types[t.name] = (t.shape, t.dtype)
        return tracers

    def program(self, name: str, outputs: Sequence[Tracer]) -> str:
        """The ``.tdsl`` program of the trace, returning ``outputs``."""
        names = [n for n, _, _ in self.inputs] + [n for n, _ in self.captured]
        body = "".join(f"    {line}\n" for line in self.lines)
        returned = ", ".join(t.name for t in outputs)
        return f"def {name}({self.signature(names)}):\n{body}    return {returned}\n"


class Tracer(NeedsValues, np.lib.mixins.NDArrayOperatorsMixin):
    """An array of a traced function (see the module docstring)."""

    __array_priority__ = 1000

    def __init__(
        self,
        trace: Trace,
        name: str,
        shape: tuple[int, ...],
        dtype: Any,
        refs: tuple[str, ...] = (),
        scalar: bool | str = False,
    ) -> None:
        self._trace = trace
        self.name = name
        """The value in the program: a name, or the text of weak arithmetic (``(s + 1)``)."""
        self.refs = refs or (name,)
        """The names of the program it reads."""
        self.scalar = False if shape else scalar
        """Whether NumPy gives this 0-d value as a NumPy scalar (a ufunc's or a reduction's,
        ``np.sum(x)``), not a 0-d array (``np.where``'s), or ``"python"``, Python's
        ``bool`` (``s > 0`` of a Python number): a call returns it as NumPy would."""
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)

    def __setattr__(self, name: str, value: Any) -> None:
        if "dtype" in self.__dict__:  # (made: `t.shape = ...` would change it in place)
            trace_error(
                f"assigning `.{name}` of a traced array changes it in place, which a traced "
                "function cannot do: build the new array (`np.reshape`, `.astype`)"
            )
        object.__setattr__(self, name, value)

    # -- attributes -------------------------------------------------------------

    @property
    def weak(self) -> bool:
        """Whether this is a weak scalar (a Python number given at run time, or Python's
        arithmetic on such numbers): it takes the dtype of the arrays it meets."""
        return all(n in self._trace.weak for n in self.refs)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def T(self) -> Tracer:
        return np.transpose(self)  # pyright: ignore[reportReturnType]

    def __repr__(self) -> str:
        return f"Tracer({self.name}: {type_str(self.dtype, self.shape)})"

    # -- NumPy's protocols --------------------------------------------------------

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        # (a ufunc's 0-d result, and its reduce's, is a NumPy scalar; Python's comparison
        # of Python numbers, `s > 0`, a Python bool)
        python = self._trace.operator and python_comparison(ufunc.__name__, inputs)
        result = self._ufunc(ufunc, method, *inputs, **kwargs)
        return as_numpy_gives(result, "python" if python else True)

    def _ufunc(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = ufunc.__name__
        operator, self._trace.operator = self._trace.operator, False
        for key in ("out", "where"):
            if key in kwargs:
                trace_error(
                    f"`{key}=` of `np.{name}` writes into an array in place, which a traced "
                    "function cannot do: use the returned value"
                    if key == "out"
                    else f"`where=` of `np.{name}` leaves elements unset: use `np.where`"
                )
        if method != "__call__":  # (`np.add.reduce`: a sum along axis 0, ...)
            return ufunc_method(name, method, inputs, kwargs)
        if set(kwargs) == {"dtype"}:  # (the loop of that dtype)
            return ufunc_with_dtype(ufunc, inputs, kwargs["dtype"])
        if kwargs:
            trace_error(f"`np.{name}` with `{'`, `'.join(kwargs)}` is not supported when traced")
        composed = COMPOSED.get(f"np.{name}")  # (a ufunc written as others)
        inputs = ufunc_inputs(name, inputs, composed is not None)
        if operator and (python := python_division(name, inputs)) is not NotImplemented:
            return python  # (Python's `divmod(s, 2)`; `s // 0` refused)
        if composed and (done := composed(*inputs)) is not NotImplemented:
            return done
        trace = self._trace
        operands = [x for x in map(lambda v: as_operand(trace, v), inputs) if x is not None]
        # (a NumPy scalar operand is strong: `np.float32(2.5) * s` is a float32)
        strong = any(isinstance(x, np.generic) for x in inputs)
        weak_only = all(t.weak for t in operands) and not strong
        weak_operator = (spelled := python_operator(name)) is not None
        weak = (name in WEAK_ARITHMETIC or weak_operator) and operator and weak_only
        args = [operand(bool_operand(x, python=weak) or spell(trace, x)) for x in inputs]
        if name in UFUNC_OPERATORS and len(args) == 2:
            expr = f"({args[0]} {UFUNC_OPERATORS[name]} {args[1]})"
        else:
            expr = f"{UFUNC_NAMES.get(name, name)}({', '.join(args)})"
        floats = (
            name in ("divide", "true_divide")
            or any(t.dtype.kind == "f" for t in operands)
            or any(isinstance(x, float) for x in inputs)
        )
        if weak:
            # Python's arithmetic on Python numbers gives a Python number: weak, written
            # into the lines that use it (the frontend types it where it meets an array)
            if name in ("negative", "invert"):  # (Python's `-s`, `~s`)
                expr = f"({'-' if name == 'negative' else '~'}{args[0]})"
            elif weak_operator:
                expr = f"({args[0]} {spelled} {args[1]})"
            refs = tuple(dict.fromkeys(n for t in operands for n in t.refs))
            return Tracer(trace, expr, (), python_result_dtype(name, inputs, floats), refs)
        if operands and weak_only and (name in UFUNC_OPERATORS or name == "absolute"):
            # a ufunc called by name on Python numbers gives a NumPy scalar (np.add(s, 1)
            # is an int64), where the operator's spelling alone would be weak again
            expr = f"astype({expr}, {by_name_dtype(ufunc, inputs, floats)})"
        return trace.emit(expr, operands)[0]

    def __pow__(self, other: Any) -> Any:
        # NumPy's `**` takes sqrt for a Python float 0.5, float16 too, where `np.power`
        # computes pow (`sqrt(-0) = -0`, `pow(-0, 0.5) = 0`): the operator, as written
        if type(other) is float and other == 0.5 and self.dtype == np.float16:
            operand = as_operand(self._trace, self)
            expr = f"({spell(self._trace, self)} ** 0.5)"
            return self._trace.emit(expr, [] if operand is None else [operand])[0]
        self._trace.operator = True
        return np.power(self, other)

    def __pos__(self) -> Any:
        # (Python's `+` of a Python number is that number, weak, of a Python bool the int
        # it is; np.positive's is strong)
        if self.weak:
            return self if self.dtype != np.bool_ else 0 + self
        return np.positive(self)

    def __array_function__(
        self, func: Callable[..., Any], types: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return call_function(self._trace, func, args, kwargs)

    def __array__(self, *args: Any, **kwargs: Any) -> NoReturn:
        values_needed()  # (NumPy converts where its dispatch does not see the traced array)

    def __len__(self) -> int:
        if not self.shape:
            trace_error("`len()` of a 0-d traced array (NumPy's error: len() of unsized object)")
        return self.shape[0]

    def __iter__(self) -> NoReturn:
        trace_error(
            "iterating over a traced array is not supported: index it (`x[i]` for a Python "
            "int `i`), or use `np.split` / `np.unstack`-style calls that tdsl has (`np.split`)"
        )

    def __setitem__(self, key: Any, value: Any) -> NoReturn:
        trace_error(
            "assigning into a traced array (`t[i] = v`) updates it in place, which a traced "
            "function cannot do: build the new array (`np.where`, `np.concatenate`)"
        )

    def __getitem__(self, key: Any) -> Tracer:
        return subscript(self, key)

    # -- methods: NumPy's functions ---------------------------------------------------

    def dot(self, other: Any, out: Any = None) -> Any:
        return np.dot(self, other, out=out)

    def conj(self) -> Any:
        # (the method keeps a 0-d array one, where the ufunc gives a scalar)
        return as_numpy_gives(np.conjugate(self), bool(self.scalar))

    conjugate = conj

    @property
    def mT(self) -> Any:
        return np.swapaxes(self, -1, -2)

    @property
    def real(self) -> Tracer:
        return self  # tdsl's dtypes are real

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __getattr__(self, name: str) -> NoReturn:
        # an ndarray attribute not above: tdsl's error (NumPy's `__array_*__` probes: none)
        if not name.startswith("_") and hasattr(np.ndarray, name):
            trace_error(
                f"`x.{name}` of an array is not supported when traced "
                "(docs/from-numpy.md lists what a traced function may call)"
            )
        raise AttributeError(name)

    def astype(self, dtype: Any, **kwargs: Any) -> Any:
        # (`copy`: a traced value is never shared; its arrays are row-major: NumPy's cast)
        known = {"copy": None, "order": ("C", "K", "A"), "casting": ("unsafe",)}
        if bad := [k for k, v in kwargs.items() if k not in known or v not in (known[k] or (v,))]:
            trace_error(f"`astype` with `{'`, `'.join(bad)}` is not supported when traced")
        cast = self._trace.emit(f"astype({self.name}, {spell_dtype(dtype)})", [self])[0]
        return as_numpy_gives(cast, bool(self.scalar))  # (a NumPy scalar's is one)


# x.sum(...) is np.sum(x, ...), as for an ndarray
for _name in ("sum", "mean", "max", "min", "prod", "var", "std", "argmax", "argmin", "any",
              "all", "cumsum", "clip", "cumprod", "repeat", "round", "ravel", "take", "squeeze",
              "swapaxes"):  # fmt: skip
    setattr(Tracer, _name, numpy_method(getattr(np, _name)))
Tracer.transpose, Tracer.reshape = transpose_method, reshape_method  # type: ignore[method-assign]
# (x.copy() of a NumPy scalar is one, where np.copy gives a 0-d array)
Tracer.copy = lambda self, *a, **k: as_numpy_gives(np.copy(self, *a, **k), bool(self.scalar))  # type: ignore[attr-defined]
Tracer.flatten = numpy_method(np.ravel)  # type: ignore[attr-defined]  # (a new array either way)
Tracer.__neg__, Tracer.__invert__ = unary_operator(np.negative), unary_operator(np.invert)
Tracer.__abs__, Tracer.__round__ = unary_operator(np.absolute), round_method  # type: ignore[method-assign]
for _name, _ufunc in WEAK_OPERATOR_METHODS.items():
    if _name != "pow":  # (Tracer.__pow__: float16's `** 0.5`)
        setattr(Tracer, f"__{_name}__", operator_method(_ufunc, reflected=False))
    setattr(Tracer, f"__r{_name}__", operator_method(_ufunc, reflected=True))
for _name, _ufunc in COMPARISON_METHODS.items():  # (Python reflects them itself: `0 < s`)
    setattr(Tracer, f"__{_name}__", operator_method(_ufunc, reflected=False))


def as_operand(trace: Trace, value: Any) -> Tracer | None:
    """The tracer ``value`` is (an ndarray is captured), or None for a Python value."""
    if isinstance(value, Tracer):
        if value._trace is not trace:  # pyright: ignore[reportPrivateUsage]
            trace_error("a traced array of another traced call is used here")
        return value
    if isinstance(value, np.ndarray):
        return trace.capture(value)
    return None


def spell(trace: Trace, value: Any) -> str:
    """``value`` as tdsl source: a tracer's name, a captured array's, a literal."""
    operand = as_operand(trace, value)
    if operand is not None:
        return operand.name
    if isinstance(value, bool | np.bool_):
        return "True" if value else "False"
    if isinstance(value, np.generic):  # a NumPy scalar: strong, of its dtype
        return f"astype({literal(value)}, {spell_dtype(value.dtype)})"
    if isinstance(value, int | float):
        return literal(value)
    if isinstance(value, tuple | list):
        parts = [spell(trace, v) for v in value]
        return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
    if value is None:
        return "None"
    if isinstance(value, np.dtype | type):  # (np.float32, and Python's: np.astype(x, bool))
        return spell_dtype(value)
    trace_error(f"a value of type {type(value).__name__} ({value!r}) cannot be traced")


# --------------------------------------------------------------------------- NumPy functions


def _operands(trace: Trace, values: Any) -> list[Tracer]:
    """The tracers among ``values`` (nested in tuples, lists and dicts)."""
    found: list[Tracer] = []
    stack = [values]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple | list):
            stack.extend(reversed(v))
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        else:
            operand = as_operand(trace, v)
            if operand is not None:
                found.append(operand)
    return found


def _spell_arg(trace: Trace, value: Any) -> str:
    if isinstance(value, str):
        if '"' in value or "\\" in value or "\n" in value:
            trace_error(f"the string {value!r} cannot be written in tdsl")
        return f'"{value}"'
    return spell(trace, value)


def call_function(
    trace: Trace, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``func(*args, **kwargs)`` of NumPy on tracers: its line of tdsl."""
    module = getattr(func, "__module__", "") or ""
    name = func.__name__
    qualified = (
        f"np.{name}"
        if module in ("numpy", "numpy._core.fromnumeric")
        else (f"{module.replace('numpy', 'np', 1)}.{name}" if module.startswith("numpy") else name)
    )
    if name in DATA_DEPENDENT or (name == "where" and len(args) + len(kwargs) == 1):
        trace_error(
            f"`{qualified}` gives an array whose shape depends on the values, and a compiled "
            "kernel has static shapes: use `np.where(mask, x, y)` to choose between values",
            TdslCallError,
        )
    for key in ("out", "where"):
        if kwargs.get(key) is not None and not (key == "where" and kwargs[key] is True):
            trace_error(
                f"`{key}=` of `{qualified}` "
                + (
                    "writes into an array in place, which a traced function cannot do: use "
                    "the returned value"
                    if key == "out"
                    else "leaves elements out: use `np.where` first"
                )
            )
        kwargs.pop(key, None)
    args = list_operands(name, args, kwargs)  # (`np.where(c, [1, 2], 0)`)
    if name in ("ravel", "copy") and len(args) == 2:  # (`x.ravel("C")`: order by position)
        args, kwargs["order"] = args[:1], args[1]
    order = kwargs.pop("order", None)
    if order not in (None, "C", "K", "A"):
        trace_error(f"`order={order!r}` of `{qualified}`: tdsl's arrays are row-major (`'C'`)")
    if (
        qualified in COMPOSED
        and (done := COMPOSED[qualified](*args, **kwargs)) is not NotImplemented
    ):  # (NumPy calls that came back here; a 0-d result as the function gives it)
        return as_numpy_gives(done, qualified not in ARRAY_COMPOSED)
    from tdsl.frontend.functions import FUNCTIONS

    if module.startswith("numpy.") and not module.startswith(("numpy._core", "numpy.lib")):
        known = False  # np.linalg, np.fft, np.random ...: not the language's
    else:
        name = FUNCTION_NAMES.get(name, name)
        if name == "dot":
            name = "matmul"
        known = name in FUNCTIONS
    if not known:
        if numpy_caller() in VALUE_HINTS:  # (`np.full(shape, x, dtype=...)`: its `np.copyto`)
            values_needed()
        top = module == "numpy" or module.startswith(("numpy._core", "numpy.lib"))
        why = missing_hint(name) if top else None
        trace_error(
            f"`{qualified}` is not supported by tdsl"
            + (f": {why}" if why else "")
            + " (docs/from-numpy.md lists the NumPy functions a traced function may call)",
            TdslCallError,
        )
    asked, (name, args) = name, numpy_call(name, args, kwargs)  # (`clip(x, 0, None)`: maximum)
    results = split_results(name, qualified, args, kwargs)
    parts = [bool_operand(a) or _spell_arg(trace, a) for a in args]  # (np.clip(x, True, 5))
    parts += [f"{k}={_spell_arg(trace, v)}" for k, v in kwargs.items() if v is not None]
    expr = f"{name}({', '.join(parts)})"
    if name in ("split", "array_split") and results == 1:
        expr += "[0]"  # one part (picoGPT's heads at n_head=1): the tuple's item, not the tuple
    out = trace.emit(expr, _operands(trace, (args, kwargs)), results)
    if name in ("split", "array_split"):
        return out
    first = args[0] if args else None
    kept = name in KEEP_SCALAR and isinstance(first, Tracer) and first.scalar
    return as_numpy_gives(out[0], asked in SCALAR_RESULTS or kept)


def _index_part(trace: Trace, item: Any) -> tuple[str, Tracer | None]:
    if item is None:
        return "None", None
    if item is Ellipsis:
        return "...", None
    if isinstance(item, slice):
        bounds = static_ints([item.start, item.stop, item.step])
        parts = ["" if p is None else spell(trace, p) for p in bounds]
        return ":".join(parts[:2]) + (f":{parts[2]}" if item.step is not None else ""), None
    if isinstance(item, bool | np.bool_):
        trace_error("indexing with a Python bool is not supported when traced")
    if isinstance(item, int | np.integer):
        return str(int(item)), None
    if isinstance(item, range):  # the language's arange, not a constant array
        made = trace.emit(f"arange({item.start}, {item.stop}, {item.step})", [])[0]
        return made.name, made
    if isinstance(item, list):  # NumPy's: an empty list is an empty integer index
        item = np.asarray(item, dtype=np.intp if not item else None)
    operand = as_operand(trace, item)
    if operand is None:
        trace_error(f"a traced array cannot be indexed by {item!r}")
    if operand.dtype == np.bool_:
        trace_error(
            "indexing by a boolean mask gives an array whose shape depends on the values, "
            "and a compiled kernel has static shapes: use `np.where(mask, x, 0)` to keep "
            "the shape",
            TdslCallError,
        )
    return operand.name, operand


def subscript(tracer: Tracer, key: Any) -> Tracer:
    """``tracer[key]``: NumPy's basic indexing and integer-array gathers."""
    trace = tracer._trace  # pyright: ignore[reportPrivateUsage]
    items = key if isinstance(key, tuple) else (key,)
    parts = [_index_part(trace, item) for item in items]
    operands = [tracer, *(t for _, t in parts if t is not None)]
    text = ", ".join(p for p, _ in parts) or "..."
    # (an element is a NumPy scalar, `x[0]`, `x[()]`; with `...` a 0-d array, `x[..., 0]`)
    element = trace.emit(f"{tracer.name}[{text}]", operands)[0]
    return as_numpy_gives(element, not any(item is Ellipsis for item in items))


__all__ = ["Trace", "Tracer", "as_operand", "call_function", "spell", "subscript"]
