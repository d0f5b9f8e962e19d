# pyright: reportUnknownVariableType=false, reportUnknownArgumentType=false
# (a traced function takes and returns any nesting of Python values)
"""``tdsl.trace``: a plain NumPy function compiled unchanged, like ``jax.jit``.

```python
import numpy as np
import tdsl

@tdsl.trace
def mlp(x, w, b):
    h = np.maximum(x @ w + b, 0)
    return h / np.sqrt(h.shape[-1])

y = mlp(x, w, b)                 # traced for these shapes and dtypes, compiled, run
print(mlp.program(x, w, b))      # the .tdsl program the trace wrote
kernel = mlp.compile(x, w, b)    # its CompiledKernel (.ir, .to_dot(), ...)
```

Per signature the function runs once, on :class:`~tdsl.jit.tracer.Tracer`
arrays: NumPy hands each ufunc and array function called on them to tdsl
(``__array_ufunc__``, ``__array_function__``), and each becomes one line of a
``.tdsl`` program, typed by tdsl's frontend as it is recorded.  Python's own
control flow runs then, on shapes and dtypes; what needs values is an error.  The
program is compiled like any kernel (the JIT's cache keys it on its text) and
called with the arguments' arrays.

**The cache key** of a call is the function; the structure of its arguments
(nested tuples, lists and dicts: a *pytree*); the shape and dtype of each array
(NumPy arrays and NumPy scalars, and the arrays of other libraries kernels take,
such as Dask's: the kernel then runs on them as any kernel does); whether each
Python number among the arguments is an ``int`` or a ``float``, not its value: it
is a weak 0-d input of the kernel (``s: float``), typed as NumPy 2 types a Python
number where it meets an array, so a new value runs the same kernel; the values
of the ``static_argnames`` arguments (and of Python bools and ``None``); and the
options.

**Arrays the function reads from elsewhere** (a global, a closure, the result of
``np.tri(n)``) become inputs of the kernel, named ``c1``, ``c2``..., never
literals in its source: each call passes the array object the trace met, so its
values are read at the call.
"""

from __future__ import annotations

import functools
import inspect
import keyword
import math
import re
import types
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from tdsl.array_types import array_type_of
from tdsl.dtypes import SHORT_NAMES
from tdsl.errors import SourceLocation, TdslCallError, TdslIndexError, TdslOptionError
from tdsl.jit.api import JITTensorKernel, default_jit
from tdsl.jit.arg_inference import check_dtype
from tdsl.jit.cache import KernelCache
from tdsl.jit.calls import unlike_an_array
from tdsl.jit.compiled import CompiledKernel
from tdsl.jit.decorator import jit_options
from tdsl.jit.options import JitOptions
from tdsl.jit.trace_names import holds_traced
from tdsl.jit.trace_places import at_user_line, at_user_lines
from tdsl.jit.tracer import Trace, Tracer


def _weak(value: Any) -> bool:
    """A Python ``int`` or ``float`` (not a ``bool``): a weak scalar input."""
    return isinstance(value, int | float) and not isinstance(value, bool | np.generic)


def _identifier(text: str) -> str:
    """``text`` (a parameter's path) as a name of the language, whose names are ASCII:
    accents dropped, a Greek letter spelled (``θ`` is ``theta``), anything else ``_``."""
    name = "".join(
        c if c.isascii() else _ascii_letter(c)
        for c in unicodedata.normalize("NFKD", text)
        if not unicodedata.combining(c)
    )
    name = re.sub(r"\W", "_", name)
    return name if name and not name[0].isdigit() else f"a_{name}"


def _ascii_letter(c: str) -> str:
    word = unicodedata.name(c, "").rsplit(" ", 1)[-1].lower()
    return (
        word if word.isascii() and word.isalpha() and "LETTER" in unicodedata.name(c, "") else "_"
    )


def _flatten(
    value: Any, path: str, leaves: list[tuple[str, Any]], within: frozenset[int] = frozenset()
) -> Any:
    """The structure of ``value`` (arrays replaced by their index in ``leaves``); the
    containers it is inside are ``within`` (their ids: one holding itself is an error)."""
    if isinstance(value, tuple | list | dict) and id(value) in within:
        raise TdslCallError(
            f"argument `{path}` holds itself (a {type(value).__name__} inside itself): a "
            "traced function takes tuples, lists and dicts without cycles"
        )
    if isinstance(value, tuple | list):
        inner = within | {id(value)}
        kind = _sequence_kind(value)
        items = tuple(_flatten(v, f"{path}_{i}", leaves, inner) for i, v in enumerate(value))
        return (kind, items)
    if isinstance(value, dict):
        inner, keys = within | {id(value)}, tuple(value)
        items = tuple(_flatten(value[k], f"{path}_{k}", leaves, inner) for k in keys)
        return ("dict", keys, items)
    unlike = unlike_an_array(value, path)
    if unlike is not None:
        raise TdslCallError(f"argument `{path}` {unlike}")
    if isinstance(value, np.ndarray | np.generic) or array_type_of([value]) is not None:
        leaves.append((path, value))
        return ("leaf", len(leaves) - 1)
    if isinstance(value, int | float) and not isinstance(value, bool):
        leaves.append((path, value))  # a weak scalar input
        return ("leaf", len(leaves) - 1)
    if isinstance(value, bool) or value is None:
        return ("const", type(value).__name__, value)
    raise TdslCallError(
        f"argument `{path}` is a {type(value).__name__}: a traced function takes NumPy "
        "arrays and scalars, Python numbers, and tuples, lists and dicts of them (or make "
        "it static: static_argnames=...)"
    )


def _typed(value: Any) -> Any:
    """The types in ``value`` (static arguments), nested in tuples, lists and
    frozensets: ``1``, ``1.0``, ``True`` and ``np.float64(1)`` are equal and hash alike,
    but NumPy types what they meet differently, so each is a kernel of its own; so is
    each sign of a float (``0.0 == -0.0``, but ``np.copysign`` tells them apart)."""
    if isinstance(value, tuple | list):
        return (type(value), tuple(_typed(v) for v in cast(tuple[Any, ...], value)))
    if isinstance(value, frozenset):
        return (type(value), frozenset(_typed(v) for v in cast(frozenset[Any], value)))
    if isinstance(value, float | np.floating):  # (0.0 == -0.0, but copysign tells them apart)
        return (type(value), math.copysign(1.0, value) < 0)
    return type(value)


def _sequence_kind(value: tuple[Any, ...] | list[Any]) -> Any:
    """How a sequence of the arguments or the result is rebuilt: ``"list"``, ``"tuple"``,
    or a named tuple's class (rebuilt from its fields)."""
    if isinstance(value, list):
        return "list"
    return type(value) if hasattr(type(value), "_fields") else "tuple"


def _shape_dtype(path: str, value: Any) -> tuple[tuple[int, ...], np.dtype[Any], bool]:
    """The shape and dtype of an array leaf (a NumPy array or scalar, or an array of a
    registered library, whose values are not read), and whether it is a NumPy scalar
    (returned as it is, or through ``astype``, it is one again, as in NumPy)."""
    registered = array_type_of([value])
    if registered is not None:
        return tuple(registered.shape(path, value)), np.dtype(value.dtype), False
    array = np.asarray(value)
    return tuple(array.shape), array.dtype, isinstance(value, np.generic)


def _rebuild(tree: Any, leaves: Sequence[Any]) -> Any:
    kind = tree[0]
    if kind == "leaf":
        leaf = leaves[tree[1]]
        if len(tree) > 2 and tree[2] and isinstance(leaf, np.ndarray) and not leaf.shape:
            # (NumPy's scalar, where NumPy gives one: `np.sum(x)`; Python's number for
            # Python's arithmetic on Python numbers, `s * 2`)
            return leaf.item() if tree[2] == "python" else leaf[()]
        return leaf
    if kind == "const":
        return tree[2]
    if kind == "array":  # (a constant array returned: a new copy at each call, as NumPy's)
        return tree[1].copy()
    if kind == "dict":
        return {k: _rebuild(t, leaves) for k, t in zip(tree[1], tree[2], strict=True)}
    items = [_rebuild(t, leaves) for t in tree[1]]
    if kind == "list":
        return items
    return tuple(items) if kind == "tuple" else kind(*items)  # (a named tuple's class)


def _outputs(value: Any, found: list[Tracer], where: str) -> Any:
    """The structure of the function's result (tracers replaced by their index; a
    constant returned as it is, an array as a copy at each call)."""
    if isinstance(value, Tracer):
        found.append(value)
        python = value.weak and not value.shape and value.dtype.kind in "fi"
        return ("leaf", len(found) - 1, "python" if python else value.scalar)
    if isinstance(value, tuple | list):
        parts = (_outputs(v, found, f"{where}[{i}]") for i, v in enumerate(value))
        return (_sequence_kind(value), tuple(parts))
    if isinstance(value, dict):
        parts = (_outputs(v, found, f"{where}[{k!r}]") for k, v in value.items())
        return ("dict", tuple(value), tuple(parts))
    if value is None or isinstance(value, bool | int | float | complex | str | np.generic):
        return ("const", type(value).__name__, value)
    if isinstance(value, np.ndarray):
        return ("array", np.array(value))
    raise TdslCallError(
        f"{where} is a value of type {type(value).__name__}: a traced function returns "
        "arrays, numbers, strings and None, in tuples, lists and dicts"
    )


@dataclass(frozen=True)
class _Entry:
    kernel: CompiledKernel | None
    """None where no result depends on the arguments' values (each is a constant)."""
    names: tuple[str, ...]
    """The kernel's input of each array leaf of the arguments, in order."""
    captured: tuple[tuple[str, np.ndarray[Any, Any]], ...]
    result: Any
    program: str
    errstate: dict[str, str]
    """What the function's own ``np.errstate`` set for its lines (see :func:`_own_errstate`),
    set around each call: none for most functions."""
    places: tuple[str, tuple[str, ...], tuple[SourceLocation | None, ...]] = ("", (), ())
    """The program's file name, its lines and where each was traced: an error at call
    time (a gather's index out of range) is at the user's line."""


_LENIENT = ("ignore", "log", "call", "print", "warn", "raise")
"""NumPy's error modes from the most lenient: where a function's lines traced under
different modes, the most lenient of them holds for the kernel."""


def _own_errstate(outside: dict[str, str], lines: list[dict[str, str]]) -> dict[str, str]:
    """The floating-point error modes the kernel of a function must run with: per kind
    (``divide``, ``over``, ``under``, ``invalid``), where some line of the function was
    traced under another mode than the caller's (``outside``: a ``with np.errstate``
    in the function), the most lenient of its lines' modes.  The numpy target raises
    NumPy's warnings in the kernel, as one op; a warning NumPy would not give, in a
    line the function silenced, would otherwise reach the caller (an error under
    ``-W error``)."""
    own: dict[str, str] = {}
    for kind, mode in outside.items():
        seen = {line[kind] for line in lines}
        if seen and seen != {mode}:
            own[kind] = min(seen, key=lambda m: _LENIENT.index(m) if m in _LENIENT else 0)
    return own


class Traced:
    """A function :func:`trace` compiles (see the module docstring): call it like the
    function; :meth:`compile` gives the :class:`~tdsl.jit.CompiledKernel` of a call,
    :meth:`program` its ``.tdsl`` program; ``kernels`` those it keeps (as many as its JIT's
    ``cache_size``; the least recently called go first)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        static_argnames: Sequence[str] = (),
        jit: JITTensorKernel | None = None,
        options: JitOptions | None = None,
        static_argnums: Sequence[int] = (),
    ) -> None:
        if not callable(fn):
            raise TdslCallError(f"tdsl.trace takes a function, got {type(fn).__name__} {fn!r}")
        self.python = fn
        functools.update_wrapper(self, fn, updated=())  # __name__, __doc__, __wrapped__ ...
        self.name = _name_of(fn)
        """The function's name (a partial's: of the function it wraps)."""
        self.signature = inspect.signature(fn)
        unknown = [n for n in static_argnames if n not in self.signature.parameters]
        if unknown:
            raise TdslCallError(
                f"static_argnames names `{unknown[0]}`, which is not a parameter of "
                f"`{self.name}` ({', '.join(self.signature.parameters)})"
            )
        by_position = _positional_names(self.signature, static_argnums, self.name)
        self.static_argnames = tuple(dict.fromkeys((*static_argnames, *by_position)))
        self._jit = jit
        self._options = options
        self._entries: KernelCache[_Entry] = KernelCache(1)  # (sized by its JIT: _entry)

    @property
    def kernels(self) -> tuple[CompiledKernel, ...]:
        return tuple(e.kernel for e in self._entries.values() if e.kernel is not None)

    def _key(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, list[tuple[str, Any]], list[Any]]:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as err:
            raise TdslCallError(f"`{self.name}`: {err}") from None
        # (defaults not passed stay the function's own: constants of the trace, as in
        # jax.jit, not inputs; a default used as an axis or a size needs no static_argnames)
        static: list[tuple[str, Any]] = []
        leaves: list[tuple[str, Any]] = []
        trees: list[tuple[str, Any]] = []
        for name, value in bound.arguments.items():
            if name in self.static_argnames:
                static.append((name, value))
            else:
                trees.append((name, _flatten(value, name, leaves)))
        arrays = [v for _, v in leaves]
        types = tuple(
            ("weak", type(v).__name__) if _weak(v) else _shape_dtype(path, v) for path, v in leaves
        )
        try:
            key = (tuple(trees), types, tuple(static), _typed(static))
            hash(key)
        except TypeError:
            raise TdslCallError(
                "a static argument of a traced function must be hashable (its value is part "
                "of the cache key)"
            ) from None
        return key, leaves, arrays

    def _trace(self, key: Any, leaves: list[tuple[str, Any]]) -> _Entry:
        """Trace the function for ``key`` (see :meth:`_key`: the trees, the leaves' types,
        the static values), whose array leaves are ``leaves``."""
        from tdsl.frontend.functions import CONSTANTS, FUNCTIONS

        trace = Trace()
        names: list[str] = []
        tracers: list[Tracer] = []
        for (path, value), kind in zip(leaves, key[1], strict=True):
            name = _identifier(path)
            while (
                name in names or name in FUNCTIONS or name in CONSTANTS or keyword.iskeyword(name)
            ):
                name = f"{name}_"
            names.append(name)
            if _weak(value):
                tracers.append(trace.weak_input(name, isinstance(value, int)))
                continue
            shape, dtype, scalar = kind
            if dtype.name not in SHORT_NAMES:
                raise TdslCallError(
                    f"argument `{path}` is an array of {dtype}, which tdsl does not have "
                    f"({', '.join(SHORT_NAMES)})"
                )
            check_dtype(path, dtype)  # (byte order)
            tracers.append(trace.input(name, shape, dtype, scalar))
        arguments: dict[str, Any] = {}
        for name, tree in key[0]:
            arguments[name] = _rebuild(tree, tracers)
        arguments.update(dict(key[2]))
        # (as bound: a *args parameter's tuple and a **kwargs one's dict spread again)
        call = inspect.BoundArguments(self.signature, OrderedDict(arguments))
        outside = {k: str(v) for k, v in np.geterr().items()}
        result = self.python(*call.args, **call.kwargs)
        outputs: list[Tracer] = []
        structure = _outputs(result, outputs, f"what `{self.name}` returned")
        trace.done = True  # (a traced array the function kept computes nothing more)
        if not outputs:  # (constant for these shapes: returned as it is, no kernel)
            return _Entry(None, tuple(names), (), structure, "", {})
        kernel_name = _identifier(self.name.rsplit(".", 1)[-1])
        if kernel_name in FUNCTIONS or keyword.iskeyword(kernel_name):
            kernel_name = f"traced_{kernel_name}"
        program = trace.program(kernel_name, outputs)
        jit = self._jit or default_jit()
        filename = f"<trace of {self.name}>"
        with at_user_lines(filename, trace.lines, trace.places):
            kernel = jit.compile(
                program, kernel=kernel_name, filename=filename, options=self._options
            )
        errstate = _own_errstate(outside, trace.errstates)
        captured = tuple(
            (n, a.astype(a.dtype.newbyteorder("="), copy=False)) for n, a in trace.captured
        )
        places = (filename, tuple(trace.lines), tuple(trace.places))
        return _Entry(kernel, tuple(names), captured, structure, program, errstate, places)

    def _entry(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[_Entry, list[Any]]:
        key, leaves, arrays = self._key(args, kwargs)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._trace(key, leaves)
            # (as many as its JIT keeps, the least recently called going first)
            self._entries.put(key, entry, (self._jit or default_jit()).cache_size)
        return entry, arrays

    def compile(self, *args: Any, **kwargs: Any) -> CompiledKernel:
        """The :class:`~tdsl.jit.CompiledKernel` a call with these arguments runs."""
        return self._compiled(args, kwargs)[1]

    def _compiled(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[_Entry, CompiledKernel]:
        """The entry of a call with these arguments and its kernel; an error where the
        trace compiled none."""
        entry = self._entry(args, kwargs)[0]
        if entry.kernel is None:
            raise TdslCallError(
                f"`{self.name}` computes nothing from its arguments' values for these "
                "shapes (its result is constant, as NumPy computed it while tracing), so "
                "no kernel was compiled: a call returns that result"
            )
        return entry, entry.kernel

    def program(self, *args: Any, **kwargs: Any) -> str:
        """The ``.tdsl`` program the trace of a call with these arguments wrote."""
        return self._compiled(args, kwargs)[0].program

    @property
    def ir(self) -> Any:
        """The IR of the kernel compiled last (see :attr:`CompiledKernel.ir`)."""
        kernels = self.kernels
        if not kernels:
            raise TdslCallError("nothing is compiled yet: call the function, or `.compile(...)`")
        return kernels[-1].ir

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if holds_traced(args, kwargs):  # called inside another traced function: inlined
            return self.python(*args, **kwargs)
        entry, arrays = self._entry(args, kwargs)
        if entry.kernel is None:
            return _rebuild(entry.result, [])
        values = dict(zip(entry.names, arrays, strict=True))
        values.update(entry.captured)
        try:
            if entry.errstate:
                with np.errstate(
                    **cast(Any, entry.errstate)
                ):  # (the function's own, see _own_errstate)
                    out = entry.kernel(**values)
            else:
                out = entry.kernel(**values)
        except TdslIndexError as err:  # (at the traced line of the gather)
            raise at_user_line(err, *entry.places) from None
        results = list(out) if isinstance(out, tuple) else [out]
        return _rebuild(entry.result, results)

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        """As a method, bound to ``instance`` as a function is: ``instance`` is the first
        argument (name it in ``static_argnames`` unless it is an array)."""
        return self if instance is None else types.MethodType(self, instance)

    def __repr__(self) -> str:
        return f"<tdsl.trace of {self.name}: {len(self.kernels)} kernel(s)>"

    def __reduce__(self) -> str:
        """Pickled by reference, as a function is: by its module and qualified name (so
        a worker process imports it; its kernels are not pickled)."""
        return self.__qualname__


def _name_of(fn: Callable[..., Any]) -> str:
    """``fn``'s qualified name; a partial's is the wrapped function's (any other callable
    without one: its type's)."""
    while isinstance(fn, functools.partial):
        fn = cast(Callable[..., Any], fn.func)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return name if isinstance(name, str) else type(fn).__name__


def _positional_names(
    signature: inspect.Signature, positions: Sequence[int], name: str
) -> tuple[str, ...]:
    """The parameters at ``positions`` among the positional ones (``static_argnums``, as
    jax.jit's: negative ones count from the last)."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p.name for p in signature.parameters.values() if p.kind in kinds]
    names: list[str] = []
    for k in positions:
        if not -len(positional) <= k < len(positional):
            raise TdslCallError(
                f"static_argnums gives {k}, but `{name}` has {len(positional)} positional "
                f"parameter(s) ({', '.join(positional) or 'none'}): name a parameter of "
                "*args or **kwargs in static_argnames"
            )
        names.append(positional[k])
    return tuple(names)


def trace(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    static_argnames: Sequence[str] | str = (),
    static_argnums: Sequence[int] | int = (),
    jit: JITTensorKernel | None = None,
    memory_budget: int | None = None,
    tile_size: int | None = None,
    tile_sizes: Sequence[int] = (),
    threads: int | None = None,
    target: str | None = None,
) -> Any:
    """Compile the NumPy function ``fn`` by tracing it (see the module docstring):
    ``tdsl.trace(fn)``, ``@tdsl.trace`` or ``@tdsl.trace(static_argnames=..., ...)``,
    with the options of ``@tdsl.function``.  ``static_argnums`` names static parameters
    by position, as jax.jit's does."""
    names = cast(object, static_argnames)  # (what a caller gave, typed or not)
    if not isinstance(names, str) and not (
        isinstance(names, Sequence) and all(isinstance(n, str) for n in names)
    ):
        raise TdslOptionError(
            f"static_argnames must be a parameter name or a sequence of them, got {names!r}"
        )
    statics = (names,) if isinstance(names, str) else tuple(cast(Sequence[str], names))
    numbers = cast(object, static_argnums)
    is_int = lambda n: isinstance(n, int) and not isinstance(n, bool)  # noqa: E731
    if not is_int(numbers) and not (
        isinstance(numbers, Sequence) and not isinstance(numbers, str) and all(map(is_int, numbers))
    ):
        raise TdslOptionError(
            f"static_argnums must be a position or a sequence of them, got {numbers!r}"
        )
    positions = (numbers,) if isinstance(numbers, int) else tuple(cast(Sequence[int], numbers))
    options = jit_options(jit, memory_budget, tile_size, tile_sizes, threads, target)

    def decorate(f: Callable[..., Any]) -> Traced:
        return Traced(f, statics, jit, options, positions)

    return decorate if fn is None else decorate(fn)


__all__ = ["Traced", "trace"]
