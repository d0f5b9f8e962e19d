"""``@tdsl.function``: a Python function whose body is tdsl, compiled per call like ``jax.jit``.

```python
import tdsl
from tdsl.lang import f32, relu, softmax

@tdsl.function
def layer(x, w: f32[32, 16], b):
    h = relu(x @ w + b)
    return softmax(h)

y = layer(x, w, b)                  # compiled for these shapes and dtypes, then run
kernel = layer.compile(x, w, b)     # the CompiledKernel of that call (.ir, .to_dot(), ...)
reference = layer.python(x, w, b)   # the body run eagerly by Python, with tdsl.lang
```

The body is never run by Python: the decorator reads the function's source
(:func:`inspect.getsource`), keeps its body and parses it with tdsl's parser,
so it is tdsl language: bindings, then ``return``, with the language's
functions, operators and literals (``True``/``False``, which are Python too).
Errors point at the file and line of the function.  The source must be in a
file: a function typed at the REPL or given to ``python -c`` has none, and
decorating it is a :class:`~tdsl.errors.TdslError` that says so.

Each parameter is untyped, and then its shape and dtype come from each call
(an array or a NumPy scalar; a Python number needs an annotation: ``s: float``
or ``n: int`` makes it a weak scalar, typed as NumPy 2 types a Python number), or
typed as in a
``.tdsl`` signature, in one of three spellings that are all valid Python:
``x: f32[4, 8]`` with ``f32`` from :mod:`tdsl.lang` (pyright checks it; mypy
refuses integer subscripts), ``x: Annotated[Array, "f32[4, 8]"]`` (every type
checker), or the string ``x: "f32[4, 8]"``.  ``f32[()]`` and ``"f32[]"`` are
0-d; ``bool_[4]`` (or ``"bool[4]"``) is boolean.  A bare ``x: f32`` fixes the
dtype and takes the shape from the call.  Any other annotation (``x: Array``,
for a type checker in strict mode) is Python's alone: the parameter is untyped.

To a type checker, calling the decorated function takes any arguments (their
shapes and dtypes are checked at the call) and returns what the body returns.

Each call builds the kernel's ``.tdsl`` signature from the annotations and the
arguments and compiles the program through a :class:`~tdsl.jit.JITTensorKernel`
(the default one, or ``jit=``), so kernels are cached by the JIT's cache on
their source text and options; the last kernel is tried first, as one-shot
JIT calls do.  The decorated object's :meth:`Function.compile` returns the
:class:`~tdsl.jit.CompiledKernel` of a call without running it.
"""

from __future__ import annotations

import ast
import functools
import inspect
import io
import textwrap
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar, cast, overload

from tdsl.dtypes import WEAK_PARAMS
from tdsl.errors import (
    SourceLocation,
    TdslCallError,
    TdslError,
    TdslNameError,
    TdslOptionError,
    TdslSyntaxError,
)
from tdsl.jit.api import JITTensorKernel, default_jit
from tdsl.jit.arg_inference import infer
from tdsl.jit.cache import KernelCache
from tdsl.jit.compiled import CompiledKernel, type_str
from tdsl.jit.options import JitOptions, default_target, default_threads
from tdsl.jit.trace_names import holds_traced

P = ParamSpec("P")
R = TypeVar("R")

DTYPE_NAMES = {
    "f16": "f16",
    "f32": "f32",
    "f64": "f64",
    "i32": "i32",
    "i64": "i64",
    "u8": "u8",
    "u64": "u64",
    "bool_": "bool",
    "bool": "bool",
}
"""The Python names of the dtypes an annotation may subscript -> the language's names."""


@dataclass(frozen=True)
class _Source:
    """What the decorator takes from a function's source."""

    name: str
    filename: str
    params: tuple[str, ...]
    declared: dict[str, str]
    """Parameter -> its type in the language (``f32[4, 8]``), or its dtype alone
    (``f32``), for the parameters annotated so."""
    prefix: str
    """Blank lines up to the ``def`` line, so that line numbers are the file's."""
    header_lines: int
    """How many lines the ``def`` header spans."""
    body: str
    """The body's lines as written (docstring blanked), columns as in the file."""

    def program(self, types: dict[str, str]) -> str:
        """The ``.tdsl`` program for parameter types ``types`` (name -> ``f32[4, 8]``)."""
        signature = ", ".join(f"{name}: {types[name]}" for name in self.params)
        return f"{self.prefix}def {self.name}({signature}):" + "\n" * self.header_lines + self.body


def _error(kind: type[TdslError], message: str, filename: str, line: int, text: str) -> TdslError:
    return kind(message, SourceLocation(filename, line, 1, max(1, len(text.strip())), text))


def _base_name(node: ast.expr) -> str | None:
    """``f32`` for ``f32`` and ``lang.f32``."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _annotation_type(node: ast.expr) -> str | None:
    """The language type an annotation spells (``f32[4, 8]``, ``"f32[4, 8]"``,
    ``Annotated[..., "f32[4, 8]"]``), the dtype alone (``f32``, as ``"f32"``), or
    None for a Python annotation that is no tdsl type."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.strip()
    name = _base_name(node)
    if isinstance(node, ast.Name) and name in WEAK_PARAMS:  # a Python float or int: weak
        return name
    if name in DTYPE_NAMES:
        return DTYPE_NAMES[name]
    if isinstance(node, ast.Subscript):
        base_name = _base_name(node.value)
        if base_name == "Annotated" and isinstance(node.slice, ast.Tuple):
            for meta in node.slice.elts[1:]:
                if isinstance(meta, ast.Constant) and isinstance(meta.value, str):
                    return meta.value.strip()
        elif base_name in DTYPE_NAMES:
            dims = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if isinstance(node.slice, ast.Tuple) and not dims:
                return f"{DTYPE_NAMES[base_name]}[]"
            if all(isinstance(d, ast.Constant) and type(d.value) is int for d in dims):
                shape = ", ".join(str(getattr(d, "value", "")) for d in dims)
                return f"{DTYPE_NAMES[base_name]}[{shape}]"
            return f"{DTYPE_NAMES[base_name]}[{ast.unparse(node.slice)}]"  # the parser says why
    return None


def _header_end(source: str, def_line: int) -> int:
    """The 1-based line of the ``:`` that ends the ``def`` header starting at ``def_line``."""
    import tokenize

    depth = 0
    started = False
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.start[0] < def_line:
            continue
        if token.type == tokenize.NAME and token.string == "def":
            started = True
        elif started and token.type == tokenize.OP:
            if token.string in "([{":
                depth += 1
            elif token.string in ")]}":
                depth -= 1
            elif token.string == ":" and depth == 0:
                return token.start[0]
    raise AssertionError("a function definition without `:`")  # pragma: no cover


def read_source(fn: Callable[..., Any]) -> _Source:
    """Read ``fn``'s parameters, annotations and body from its source file."""
    if not inspect.isfunction(fn):
        raise TdslCallError(
            f"@tdsl.function takes a function defined with `def`, got {type(fn).__name__} "
            f"{fn!r}" + ("; to trace NumPy code, use tdsl.trace" if callable(fn) else "")
        )
    name = getattr(fn, "__name__", repr(fn))
    filename = getattr(getattr(fn, "__code__", None), "co_filename", "<unknown>")
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        raise TdslError(
            f"cannot read the source of `{name}` (defined in {filename}): @tdsl.function "
            "parses a function's body from its source file, and Python keeps none for a "
            "function typed at the REPL or given to `python -c`; define it in a file, or "
            "compile its body as text with tdsl.compile(...)"
        ) from None
    first = max(first, 1)
    dedented = textwrap.dedent("".join(lines))
    tree = ast.parse(dedented)
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef):
        kind = "an async function" if isinstance(node, ast.AsyncFunctionDef) else "not a `def`"
        raise _error(
            TdslSyntaxError,
            f"@tdsl.function takes a function defined with `def`; `{name}` is {kind}",
            filename,
            first,
            lines[0],
        )
    def_index = node.lineno - 1
    def_text = lines[def_index]
    where = (filename, first + def_index, def_text)
    args = node.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.defaults:
        raise _error(
            TdslSyntaxError,
            f"the parameters of `{name}` must be plain names: a kernel takes no defaults, "
            "*args, keyword-only arguments or **kwargs",
            *where,
        )
    params: list[str] = []
    declared: dict[str, str] = {}
    for arg in [*args.posonlyargs, *args.args]:
        params.append(arg.arg)
        declared_type = None if arg.annotation is None else _annotation_type(arg.annotation)
        if declared_type is not None:
            declared[arg.arg] = declared_type
    header_end = _header_end(dedented, node.lineno) - 1
    if node.body[0].lineno - 1 <= header_end:
        raise _error(
            TdslSyntaxError,
            f"the body of `{name}` must start on the line after its `def` header",
            *where,
        )
    body = list(lines[header_end + 1 :])
    first_statement = node.body[0]
    if (
        isinstance(first_statement, ast.Expr)
        and isinstance(first_statement.value, ast.Constant)
        and isinstance(first_statement.value.value, str)
    ):  # the docstring is Python's, not tdsl's: blank it, keeping the line count
        start = first_statement.lineno - 1 - (header_end + 1)
        end = (first_statement.end_lineno or first_statement.lineno) - (header_end + 1)
        body[start:end] = ["\n"] * (end - start)
    return _Source(
        name=name,
        filename=filename,
        params=tuple(params),
        declared=declared,
        prefix="\n" * (first - 1 + def_index),
        header_lines=header_end - def_index + 1,
        body="".join(body),
    )


@contextmanager
def _suggest_trace(name: str) -> Generator[None]:
    """A name or an attribute the language lacks (a module's function, a global
    constant) gets a note: ``@tdsl.trace`` runs the body as Python and NumPy."""
    try:
        yield
    except (TdslSyntaxError, TdslNameError) as err:
        if "is not in the language" not in err.message and "unknown name" not in err.message:
            raise
        note = (
            f"the body of a @tdsl.function is tdsl, not Python; to compile `{name}` as the "
            "NumPy code it is (modules, globals, Python control flow), decorate it with "
            "@tdsl.trace instead"
        )
        raise type(err)(err.message, err.location, note=note) from None


class Function(Generic[P, R]):
    """A ``@tdsl.function``: callable like the Python function, compiled per call.

    ``python`` is the undecorated function (run it for an eager reference, with
    :mod:`tdsl.lang`); ``name``, ``filename`` and ``params`` describe it;
    :meth:`compile` gives the :class:`~tdsl.jit.CompiledKernel` of a call;
    ``kernels`` the kernels compiled so far.
    """

    python: Callable[P, R]
    name: str
    filename: str
    params: tuple[str, ...]

    def __init__(
        self,
        fn: Callable[P, R],
        jit: JITTensorKernel | None = None,
        options: JitOptions | None = None,
    ) -> None:
        self._source = read_source(fn)
        self.python = fn
        self.name = self._source.name
        self.filename = self._source.filename
        self.params = self._source.params
        functools.update_wrapper(self, fn, updated=())  # __name__, __doc__, __wrapped__ ...
        self._jit = jit
        self._options = options
        self._kernels: KernelCache[CompiledKernel] = KernelCache(1)  # (sized by its JIT)
        self._last: CompiledKernel | None = None
        # parse once now, so a syntax error shows at decoration, not at the first call
        from tdsl.frontend.parser import parse

        types = {
            name: (d if d is not None and ("[" in d or d in WEAK_PARAMS) else f"{d or 'f64'}[]")
            for name in self.params
            for d in [self._source.declared.get(name)]
        }
        with _suggest_trace(self.name):
            parse(self._source.program(types), self.filename)

    @property
    def kernels(self) -> tuple[CompiledKernel, ...]:
        """The kernels this function keeps, one per signature: as many as its JIT's
        ``cache_size`` (the least recently called go first)."""
        return self._kernels.values()

    def _values(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if not kwargs and len(args) == len(self.params):
            return dict(zip(self.params, args, strict=True))
        values = dict(zip(self.params, args, strict=False))
        if len(args) > len(self.params):
            raise TdslCallError(
                f"`{self.name}` takes {len(self.params)} argument(s) "
                f"({', '.join(self.params)}), but {len(args)} were given"
            )
        for key, value in kwargs.items():
            if key not in self.params:
                raise TdslCallError(
                    f"`{self.name}` has no parameter `{key}`; its parameters are "
                    f"{', '.join(self.params)}"
                )
            if key in values:
                raise TdslCallError(f"`{self.name}` got argument `{key}` twice")
            values[key] = value
        missing = [p for p in self.params if p not in values]
        if missing:
            raise TdslCallError(f"missing argument `{missing[0]}` of `{self.name}`")
        return values

    def _types(self, values: dict[str, Any]) -> dict[str, str]:
        types: dict[str, str] = {}
        for name in self.params:
            declared = self._source.declared.get(name)
            if declared is not None and ("[" in declared or declared in WEAK_PARAMS):
                types[name] = declared
                continue
            shape, dtype = infer(name, values[name])
            if dtype is float:
                raise TdslCallError(
                    f"argument `{name}` of `{self.name}` is a Python number: an untyped "
                    "parameter takes a NumPy array or scalar, whose shape and dtype the "
                    f"kernel is compiled for; annotate it `{name}: float` (or `int`) to pass "
                    "Python numbers as NumPy 2 types them (weak: `x * s` keeps x's dtype), "
                    f'or `{name}: "f64[]"` to convert them to that dtype'
                )
            spelled = type_str(dtype, shape)  # pyright: ignore[reportArgumentType]
            if declared is not None and not spelled.startswith(declared + "["):
                raise TdslCallError(
                    f"argument `{name}` of `{self.name}` is declared {declared}, got an array "
                    f"of {spelled}"
                )
            types[name] = spelled
        return types

    def _kernel(self, values: dict[str, Any]) -> CompiledKernel:
        types = self._types(values)
        key = tuple(types[name] for name in self.params)
        kernel = self._kernels.get(key)
        if kernel is None:
            jit = self._jit or default_jit()
            with _suggest_trace(self.name):
                kernel = jit.compile(
                    self._source.program(types),
                    kernel=self.name,
                    filename=self.filename,
                    options=self._options,
                )
            # (as many as its JIT keeps, the least recently called going first)
            self._kernels.put(key, kernel, jit.cache_size)
        return kernel

    def compile(self, *args: Any, **kwargs: Any) -> CompiledKernel:
        """The :class:`~tdsl.jit.CompiledKernel` a call with these arguments runs
        (compiled and cached if needed, not run)."""
        return self._kernel(self._values(args, kwargs))

    def __call__(self, *args: Any, **kwargs: Any) -> R:
        values = self._values(args, kwargs)
        last = self._last
        if last is not None:
            result = last.try_call(values, None)
            if result is not NotImplemented:
                return result
        if holds_traced(args, kwargs):
            raise TdslCallError(
                f"`{self.name}` (a @tdsl.function, whose body is tdsl) is called inside a "
                "traced function, which takes NumPy code only: call it outside, or write it "
                "with NumPy and decorate it with @tdsl.trace (a traced function called inside "
                "another joins its trace)"
            )
        kernel = self._kernel(values)
        self._last = kernel
        return kernel(**values)

    def __repr__(self) -> str:
        return f"<tdsl.function {self.name} of {self.filename}: {len(self.kernels)} kernel(s)>"

    def __reduce__(self) -> str:
        """Pickled by reference, as a function is: by its module and qualified name (so
        a worker process imports it; its kernels are not pickled)."""
        return self.__qualname__


def jit_options(
    jit: JITTensorKernel | None,
    memory_budget: int | None,
    tile_size: int | None,
    tile_sizes: Sequence[int],
    threads: int | None,
    target: str | None,
) -> JitOptions | None:
    """The options a decorator's keywords give (the others from ``jit``'s, or the
    defaults); None when it gives none (the JIT's own options apply).  A ``jit`` that is
    not a :class:`~tdsl.jit.JITTensorKernel` is an error here, when decorating."""
    if jit is not None and not isinstance(jit, JITTensorKernel):  # pyright: ignore[reportUnnecessaryIsInstance]
        hint = f"; for a target, give target={jit!r}" if isinstance(jit, str) else ""
        raise TdslOptionError(
            "jit= must be a tdsl.JITTensorKernel (or None: the default JIT), got "
            f"{type(jit).__name__} {jit!r}{hint}"
        )
    if (memory_budget, tile_size, threads, target) == (None, None, None, None) and not tile_sizes:
        return None
    base = jit.options if jit is not None else None
    return JitOptions(
        memory_budget if memory_budget is not None else (base.memory_budget if base else None),
        tile_size,
        cast(Any, tile_sizes),  # (checked and made a tuple by JitOptions)
        threads if threads is not None else (base.threads if base else default_threads()),
        target if target is not None else (base.target if base else default_target()),
    )


@overload
def function(fn: Callable[P, R], /) -> Function[P, R]: ...


@overload
def function(
    *,
    jit: JITTensorKernel | None = None,
    memory_budget: int | None = None,
    tile_size: int | None = None,
    tile_sizes: Sequence[int] = (),
    threads: int | None = None,
    target: str | None = None,
) -> Callable[[Callable[P, R]], Function[P, R]]: ...


def function(
    fn: Callable[P, R] | None = None,
    /,
    *,
    jit: JITTensorKernel | None = None,
    memory_budget: int | None = None,
    tile_size: int | None = None,
    tile_sizes: Sequence[int] = (),
    threads: int | None = None,
    target: str | None = None,
) -> Function[P, R] | Callable[[Callable[P, R]], Function[P, R]]:
    """Compile a function whose body is tdsl, per call (see the module docstring).

    ``@tdsl.function`` compiles with the default JIT and its options;
    ``@tdsl.function(memory_budget=..., tile_size=..., tile_sizes=..., threads=...,
    target=...)`` with those options (the others from ``jit``'s, or the defaults),
    and ``jit=`` with a given :class:`~tdsl.jit.JITTensorKernel` (and its cache).
    """
    options = jit_options(jit, memory_budget, tile_size, tile_sizes, threads, target)

    def decorate(f: Callable[P, R]) -> Function[P, R]:
        return Function(f, jit, options)

    return decorate if fn is None else decorate(fn)


__all__ = ["Function", "function", "jit_options", "read_source"]
