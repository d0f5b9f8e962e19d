"""The JIT API: compile a tensor expression (or a ``.tdsl`` kernel) to NumPy, cache it, call it.

```python
from tdsl import JITTensorKernel, jit_tensor
jit = JITTensorKernel(memory_budget=1_000_000)         # also tile_size=, tile_sizes=, threads=
fn = jit.compile("matmul(A,relu(B))+softmax(C)",
                 shapes={"A": (8, 16), "B": (16, 8), "C": (8, 8)})   # dtypes= default float64
out = fn(A=A, B=B, C=C)                                # or fn(A, B, C), in signature order
out = jit("relu(A)+B", A=a, B=b)                       # one-shot: shapes and dtypes from the arrays
out = jit_tensor("relu(A)+B", {"A": (4,), "B": (4,)}, A=a, B=b)
```

Compiling runs the whole pipeline in-process, on IR objects (never printing and
re-parsing): the frontend (``parse`` and ``lower``, as ``to_tensordsl`` does),
``fuse`` under the memory budget, ``tile``, and the NumPy target, whose Python
source is exec'd.  Of a program, only the chosen kernel is compiled.  The
result is a :class:`CompiledKernel`: callable, and showing what was done
(``.source``, ``.ir``, ``.groups``, ``.fusion_report``).

Source text may be a bare expression (its inputs are the names it uses, with
``shapes=`` and ``dtypes=``), or a ``.tdsl`` program of ``def`` kernels whose
signatures give the shapes and dtypes.  From a program with several kernels,
``kernel="name"`` picks one; without it the program's only kernel, or else its
last one, is compiled (the last kernel is the program's "main" by convention,
as helpers are usually written first).

Kernels are cached per :class:`JITTensorKernel` on (source text, shapes,
dtypes, kernel name, filename, options) in a thread-safe LRU cache
(:meth:`JITTensorKernel.cache_info`).  A one-shot call ``jit(source, **arrays)``
first tries the kernel that source last ran with (its own argument check says
whether the arrays fit), so a repeated call costs a few microseconds on top of
the kernel; other arrays go through the cache.  Compilation itself is
serialized by one process-wide lock: xDSL's IR construction is not documented
as thread-safe, and the cache means each kernel compiles once anyway.

A compiled kernel checks its arguments on every call (one generated comparison
per operand: class, shape, dtype).  A missing or unexpected argument, a wrong
shape or dtype, or a value that is not a NumPy array raises
:class:`~tdsl.errors.TdslCallError` naming the argument, what was expected and
what came.  A kernel with one result returns an array; with several, a tuple.

This module imports only NumPy and the standard library; xDSL and the pipeline
load on the first compilation, so ``import tdsl`` stays light.
"""

from __future__ import annotations

import builtins
import functools
import keyword
import operator
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias, cast

import numpy as np

from tdsl.defaults import DEFAULT_MEMORY_BUDGET
from tdsl.errors import TdslCallError, TdslError, TdslNameError, TdslOptionError

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp
    from xdsl.ir import Attribute

    from tdsl.frontend.ast import Expression, Program
    from tdsl.lowering.fuse import FusionReport

__all__ = [
    "CacheInfo",
    "CompiledKernel",
    "GroupInfo",
    "JITTensorKernel",
    "JitOptions",
    "compile",
    "default_jit",
    "jit_tensor",
]

ShapesLike: TypeAlias = Mapping[str, Sequence[int] | int]
"""Input shapes by name: ``{"A": (8, 16), "b": (16,)}`` (an int ``n`` means ``(n,)``)."""

DTypeLike: TypeAlias = str | np.dtype[Any] | type[Any]
"""A dtype spelled ``"f32"``, ``"float32"``, ``np.float32`` or ``np.dtype("f4")``."""

DTypesLike: TypeAlias = Mapping[str, DTypeLike] | DTypeLike
"""One dtype for every input, or a dtype per input name (missing names are float64)."""

_ELEMENT_NAMES: dict[str, str] = {"float16": "f16", "float32": "f32", "float64": "f64"}
_DTYPE_OF: dict[str, np.dtype[Any]] = {
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}

# Serializes every compilation in the process (see the module docstring).
_COMPILE_LOCK = threading.RLock()


# --------------------------------------------------------------------------- options


@dataclass(frozen=True)
class JitOptions:
    """The options a kernel is compiled with; part of the cache key."""

    memory_budget: int = DEFAULT_MEMORY_BUDGET
    """Elements of scratch one fused kernel may allocate at a time, all threads together."""
    tile_size: int | None = None
    """A cap on the tile size along every tiled dimension (None: only the budget decides)."""
    tile_sizes: tuple[int, ...] = ()
    """Explicit tile sizes, outermost dimension first (empty: chosen from the budget)."""
    threads: int = field(default_factory=lambda: default_threads())
    """Threads the generated code may run large tile loops on (1: none; default: one
    per core, at most 4).  Work is split only where each thread gets about 1 MiB."""

    def __post_init__(self) -> None:
        # Normalized here (NumPy integers become ints, a list of tile sizes a
        # tuple) so that equal options make equal, hashable cache keys.
        set_ = object.__setattr__
        set_(self, "memory_budget", _positive_int("memory_budget", self.memory_budget))
        set_(self, "threads", _positive_int("threads", self.threads))
        if self.tile_size is not None:
            set_(self, "tile_size", _positive_int("tile_size", self.tile_size))
        set_(self, "tile_sizes", tuple(_positive_int("tile_sizes", t) for t in self.tile_sizes))


@functools.cache
def default_threads() -> int:
    """The thread count kernels use unless told: one per core, at most 4."""
    return max(1, min(4, os.cpu_count() or 1))


def _positive_int(name: str, value: object) -> int:
    """``value`` as an int if it is a positive integer (not a bool), else TdslOptionError."""
    try:
        number = operator.index(cast(Any, value))
    except TypeError:
        number = 0
    if isinstance(value, bool) or number < 1:
        raise TdslOptionError(f"{name} must be a positive integer, got {value!r}")
    return number


class CacheInfo(NamedTuple):
    """Statistics of a kernel cache, like :func:`functools.lru_cache`'s."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class GroupInfo:
    """One fusion group of a compiled kernel, as the tiled IR records it."""

    name: str
    """The group's name (``g0``, ``g1``, ... in the IR and the generated code)."""
    ops: tuple[str, ...]
    """The ops the group runs, in order (``tensordsl.relu``, ...)."""
    inputs: tuple[str, ...]
    """Types of the values the group reads, as ``f32[8, 16]``."""
    outputs: tuple[str, ...]
    """Types of the values the group materializes."""
    space: tuple[int, ...] | None
    """The extent of each iteration dimension (None if the group was not tiled)."""
    tiles: tuple[int, ...] | None
    """The tile size along each iteration dimension (None if not tiled)."""
    scratch: int | None
    """Elements one tile allocates for intermediate values (None if not tiled)."""
    budget: int | None
    """The memory budget (elements) the group was fused and tiled under."""

    @property
    def num_tiles(self) -> int:
        """How many tiles the loop runs (1 if untiled)."""
        if self.space is None or self.tiles is None:
            return 1
        count = 1
        for extent, size in zip(self.space, self.tiles, strict=True):
            count *= -(-extent // size) if size > 0 else 1
        return count

    def __str__(self) -> str:
        ops = ", ".join(op.removeprefix("tensordsl.") for op in self.ops)
        text = f"{self.name}: [{ops}] ({', '.join(self.inputs)}) -> ({', '.join(self.outputs)})"
        if self.tiles is not None:
            text += f" tiles {list(self.tiles)} of {list(self.space or ())} scratch {self.scratch}"
        return text


@dataclass(frozen=True)
class ArgSpec:
    """One argument of a compiled kernel: its name, shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]

    def __str__(self) -> str:
        return f"{self.name}: {_type_str(self.dtype, self.shape)}"


def _type_str(dtype: np.dtype[Any], shape: Sequence[int]) -> str:
    """``f32[8, 16]``: the language's own spelling of a tensor type (``>f4[2]`` if swapped)."""
    name = _ELEMENT_NAMES.get(dtype.name, dtype.name) if dtype.isnative else dtype.str
    return f"{name}[{', '.join(str(d) for d in shape)}]"


class _LazyIR(Mapping[str, str]):
    """Stage name -> IR text, printed on first access from the modules kept."""

    def __init__(self, modules: dict[str, ModuleOp]) -> None:
        self._modules = modules
        self._text: dict[str, str] = {}

    def __getitem__(self, stage: str) -> str:
        text = self._text.get(stage)
        if text is None:
            text = str(self._modules[stage])
            self._text[stage] = text
        return text

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __repr__(self) -> str:
        return f"<IR stages {', '.join(self._modules)}>"


class _Missing:
    """The default of an argument the caller did not pass."""

    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


class CompiledKernel:
    """A compiled tensor kernel: call it with NumPy arrays, read what was done.

    Call with keyword arguments by input name or positionally in signature order
    (``.args``).  One result comes back as an array, several as a tuple.

    Attributes: ``name`` (the kernel function), ``args`` (:class:`ArgSpec` per
    input), ``results`` (``(shape, dtype)`` per result), ``options``
    (:class:`JitOptions`), ``expression`` (the source text compiled),
    ``source`` (the generated Python), ``function`` (the generated function:
    positional arrays, no checks), ``ir`` (stage name -> IR text for
    ``"tensordsl"``, ``"fused"`` and ``"tiled"``, printed on first access),
    ``groups`` (:class:`GroupInfo` per fusion group), ``try_call`` (given a dict
    of arrays by name, runs the kernel if they fit exactly, else returns
    ``NotImplemented``: no errors).
    """

    name: str
    args: tuple[ArgSpec, ...]
    results: tuple[tuple[tuple[int, ...], np.dtype[Any]], ...]
    options: JitOptions
    expression: str
    source: str
    function: Callable[..., Any]
    ir: Mapping[str, str]
    groups: tuple[GroupInfo, ...]
    _modules: dict[str, ModuleOp]
    try_call: Callable[..., Any]

    def __init__(
        self,
        *,
        name: str,
        args: Sequence[ArgSpec],
        results: Sequence[tuple[tuple[int, ...], np.dtype[Any]]],
        options: JitOptions,
        expression: str,
        source: str,
        function: Callable[..., Any],
        modules: dict[str, ModuleOp],
        groups: Sequence[GroupInfo],
    ) -> None:
        self.name = name
        self.args = tuple(args)
        self.results = tuple(results)
        self.options = options
        self.expression = expression
        self.source = source
        self.function = function
        self._modules = modules
        self.ir = _LazyIR(modules)
        self.groups = tuple(groups)

    @property
    def arg_names(self) -> tuple[str, ...]:
        """The input names, in signature (positional) order."""
        return tuple(a.name for a in self.args)

    @property
    def signature(self) -> str:
        """``main(A: f32[8, 16], B: f32[16, 8]) -> f32[8, 8]``."""
        outs = ", ".join(_type_str(dtype, shape) for shape, dtype in self.results)
        if len(self.results) != 1:
            outs = f"({outs})"
        return f"{self.name}({', '.join(str(a) for a in self.args)}) -> {outs}"

    @property
    def fusion_report(self) -> FusionReport:
        """The fusion report of the fused IR (groups, their members, materialized values)."""
        from tdsl.lowering.fuse import fusion_report

        return fusion_report(self._modules["tensordsl"], self.options.memory_budget)

    def explain(self) -> str:
        """Why the ops were grouped as they were: the fusion remarks, with source locations."""
        from tdsl.lowering.fuse import explain_fusion

        return explain_fusion(self._modules["tensordsl"], self.options.memory_budget)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Each kernel gets a subclass whose generated __call__ has the fast checks
        # (see _make_call); this generic path is the fallback.
        return _call_generic(self, args, kwargs)

    def __repr__(self) -> str:
        groups = len(self.groups)
        return (
            f"<CompiledKernel {self.signature}: {groups} group{'s' if groups != 1 else ''}, "
            f"memory_budget={self.options.memory_budget}, threads={self.options.threads}>"
        )


# --------------------------------------------------------------------------- call checks


def _describe(value: object) -> str:
    if isinstance(value, np.ndarray):
        array = cast(np.ndarray[Any, Any], value)
        return _type_str(array.dtype, array.shape)
    return f"a value of type `{type(value).__qualname__}`"


def _check_args(kernel: CompiledKernel, given: Sequence[Any]) -> list[np.ndarray[Any, Any]]:
    """The arrays to run ``kernel`` on, or :class:`TdslCallError` for the first bad one."""
    arrays: list[np.ndarray[Any, Any]] = []
    for spec, value in zip(kernel.args, given, strict=True):
        expected = _type_str(spec.dtype, spec.shape)
        where = f"argument `{spec.name}` of kernel `{kernel.name}`"
        if value is _MISSING:
            raise TdslCallError(f"missing {where}: expected an array of {expected}")
        if not isinstance(value, np.ndarray):
            raise TdslCallError(
                f"{where} must be a NumPy array of {expected}, got {_describe(value)}"
            )
        array = cast(np.ndarray[Any, Any], value)
        if array.shape != spec.shape:
            raise TdslCallError(
                f"{where} has the wrong shape: expected {expected}, got {_describe(array)}"
            )
        if array.dtype != spec.dtype:
            raise TdslCallError(
                f"{where} has the wrong dtype: expected {expected}, got {_describe(array)}"
            )
        arrays.append(np.asarray(array))
    return arrays


def _call_checked(
    kernel: CompiledKernel, given: Sequence[Any], more: Sequence[Any], extra: Mapping[str, Any]
) -> Any:
    """The slow call path: precise errors, or a call after the careful check passes.

    The fast path bails out here for any irregularity: an error, but also a
    subclass of ndarray or an equal but non-canonical dtype object, which are fine.
    """
    names = kernel.arg_names
    if extra:
        unexpected = next(iter(extra))
        raise TdslCallError(
            f"kernel `{kernel.name}` got an unexpected argument `{unexpected}`; "
            f"its arguments are {_name_list(names)}"
        )
    if more:
        raise TdslCallError(
            f"kernel `{kernel.name}` takes {len(names)} argument{'s' if len(names) != 1 else ''} "
            f"({_name_list(names)}), got {len(names) + len(more)}"
        )
    return kernel.function(*_check_args(kernel, given))


def _call_generic(kernel: CompiledKernel, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """Bind positional and keyword arguments by hand, then take the checked path."""
    names = kernel.arg_names
    given: list[Any] = list(args[: len(names)]) + [_MISSING] * max(0, len(names) - len(args))
    extra: dict[str, Any] = {}
    for key, value in kwargs.items():
        try:
            index = names.index(key)
        except ValueError:
            extra[key] = value
            continue
        if index < len(args):
            raise TdslCallError(
                f"kernel `{kernel.name}` got two values for argument `{key}` "
                "(positional and keyword)"
            )
        given[index] = value
    return _call_checked(kernel, given, args[len(names) :], extra)


def _name_list(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "none"


def _fast_names_ok(names: Sequence[str]) -> bool:
    """Whether the input names can be the generated ``__call__``'s parameter names."""
    return all(
        n.isidentifier() and not keyword.iskeyword(n) and not n.startswith("_tdsl") for n in names
    ) and len(set(names)) == len(names)


def _make_calls(kernel: CompiledKernel) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Generate the kernel's ``__call__`` and ``try_call``: parameters named like the inputs.

    Per operand the check is ``x.__class__ is ndarray and x.shape == S and x.dtype is D``
    (three attribute reads and a tuple compare); anything else (an error, or an
    ndarray subclass, or an equal but distinct dtype object) makes ``__call__``
    take the slow path, which raises the precise error or calls after the careful
    check.  ``try_call`` (no ``self``; a dict of arrays by name) runs the kernel if
    the arrays fit exactly and returns ``NotImplemented`` otherwise: the one-shot
    ``jit(...)`` path, which has its arrays in a dict already.  Python
    itself binds positional and keyword arguments; a value passed both ways makes
    Python raise its usual ``TypeError``.
    """
    names = kernel.arg_names
    if not _fast_names_ok(names):

        def call(self: CompiledKernel, *args: Any, **kwargs: Any) -> Any:
            return _call_generic(self, args, kwargs)

        def attempt(arrays: Mapping[str, Any]) -> Any:
            try:
                return _call_generic(kernel, (), arrays)
            except TdslCallError:
                return NotImplemented

        return call, attempt
    namespace: dict[str, Any] = {
        "_tdsl_M": _MISSING,
        "_tdsl_NO": NotImplemented,
        "_tdsl_nd": np.ndarray,
        "_tdsl_fn": kernel.function,
        "_tdsl_slow": _call_checked,
        # the inputs' names are locals of the generated code and may shadow builtins
        "_tdsl_len": len,
    }
    checks = ["_tdsl_more", "_tdsl_extra"]
    for i, spec in enumerate(kernel.args):
        namespace[f"_tdsl_s{i}"] = spec.shape
        namespace[f"_tdsl_d{i}"] = spec.dtype
        n = spec.name
        checks.append(
            f"{n}.__class__ is not _tdsl_nd or {n}.shape != _tdsl_s{i} or {n}.dtype is not _tdsl_d{i}"
        )
    params = "".join(f"{n}=_tdsl_M, " for n in names)
    operands = ", ".join(names)
    given = f"({operands},)" if names else "()"
    condition = "\n            or ".join(checks)
    lookups = "".join(f"    {n} = _tdsl_d.get({n!r}, _tdsl_M)\n" for n in names)
    code = (
        f"def __call__(_tdsl_self, {params}*_tdsl_more, **_tdsl_extra):\n"
        f"    if ({condition}):\n"
        f"        return _tdsl_slow(_tdsl_self, {given}, _tdsl_more, _tdsl_extra)\n"
        f"    return _tdsl_fn({operands})\n"
        f"\n"
        f"def _try(_tdsl_d):\n"
        f"    _tdsl_more = _tdsl_len(_tdsl_d) != {len(names)}\n"
        f"    _tdsl_extra = False\n"
        f"{lookups}"
        f"    if ({condition}):\n"
        f"        return _tdsl_NO\n"
        f"    return _tdsl_fn({operands})\n"
    )
    exec(builtins.compile(code, f"<tdsl call {kernel.name}>", "exec"), namespace)
    return (
        cast(Callable[..., Any], namespace["__call__"]),
        cast(Callable[..., Any], namespace["_try"]),
    )


def _finish(kernel: CompiledKernel) -> CompiledKernel:
    """Give ``kernel`` a class of its own whose ``__call__`` is the generated fast path.

    Special methods are looked up on the type, and one Python frame per call
    matters at 64x64 (a call costs ~0.1 us, a kernel a few us).
    """
    call, attempt = _make_calls(kernel)
    cls = type(
        "CompiledKernel",
        (CompiledKernel,),
        {"__call__": call, "__module__": __name__, "__doc__": CompiledKernel.__doc__},
    )
    kernel.__class__ = cls
    kernel.try_call = attempt
    return kernel


# --------------------------------------------------------------------------- cache


class _LRU:
    """A small thread-safe LRU map; counts hits and (optionally) misses."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self.lock = threading.Lock()
        self.data: OrderedDict[Any, CompiledKernel] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: Any) -> CompiledKernel | None:
        with self.lock:
            kernel = self.data.get(key)
            if kernel is not None:
                self.data.move_to_end(key)
                self.hits += 1
            return kernel

    def put(self, key: Any, kernel: CompiledKernel) -> None:
        with self.lock:
            self.data[key] = kernel
            self.data.move_to_end(key)
            while len(self.data) > self.maxsize:
                self.data.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.data.clear()
            self.hits = self.misses = 0


def _dtype_key(dtype: object) -> object:
    """``"f16"``/``"f32"``/``"f64"`` for a supported dtype spelling; the value itself otherwise.

    Unsupported spellings go to the frontend unchanged, which reports them.
    """
    if isinstance(dtype, str) and dtype in _DTYPE_OF:
        return dtype
    try:
        name = np.dtype(cast(Any, dtype)).name
    except (TypeError, ValueError):
        return dtype
    return _ELEMENT_NAMES.get(name, dtype)


def _shape_of(name: str, shape: object) -> tuple[int, ...]:
    if isinstance(shape, int | np.integer) and not isinstance(shape, bool):
        return (int(cast(int, shape)),)
    try:
        dims = tuple(cast(Sequence[Any], shape))
    except TypeError:
        dims = None
    if dims is None or not all(
        isinstance(d, int | np.integer) and not isinstance(d, bool) and d >= 0 for d in dims
    ):
        raise TdslOptionError(
            f"the shape of `{name}` must be a sequence of non-negative integers, got {shape!r}"
        )
    return tuple(int(d) for d in dims)


def _normalize(
    shapes: ShapesLike | None, dtypes: DTypesLike | None
) -> tuple[dict[str, tuple[int, ...]] | None, object]:
    """Shapes as int tuples; dtypes as ``f16``/``f32``/``f64``, one or a dict by name.

    Float64 is the default, so ``None``, ``"f64"`` and a dict of float64 entries
    all become ``"f64"``, and float64 entries leave a dict: equal meanings, one key.
    """
    norm_shapes = None if shapes is None else {k: _shape_of(k, v) for k, v in shapes.items()}
    if dtypes is None:
        return norm_shapes, "f64"
    if isinstance(dtypes, Mapping):
        per_name = cast(Mapping[str, object], dtypes)
        norm = {k: key for k, v in per_name.items() if (key := _dtype_key(v)) != "f64"}
        return norm_shapes, norm or "f64"
    return norm_shapes, _dtype_key(dtypes)


def _freeze(value: object) -> object:
    """A hashable, order-independent form of a normalized shapes or dtypes argument."""
    if isinstance(value, dict):
        return tuple(sorted(cast(dict[str, object], value).items()))
    return value


# --------------------------------------------------------------------------- compile


def _tensor_spec(t: Attribute) -> tuple[tuple[int, ...], np.dtype[Any]]:
    from xdsl.dialects.builtin import TensorType

    from tdsl.dialects.tensordsl import numpy_dtype

    assert isinstance(t, TensorType)
    tensor = cast(TensorType[Any], t)
    return tuple(tensor.get_shape()), numpy_dtype(tensor.element_type)


def _type_text(t: Attribute) -> str:
    shape, dtype = _tensor_spec(t)
    return _type_str(dtype, shape)


def _pick_function(module: ModuleOp, name: str) -> FuncOp:
    from xdsl.dialects.func import FuncOp

    for op in module.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == name:
            return op
    raise TdslError(f"the frontend produced no function `{name}`")  # pragma: no cover


def _signature_names(tree: Expression | Program, kernel: str | None) -> tuple[str, list[str]]:
    """The kernel to compile and its input names, in the frontend's argument order.

    An expression becomes ``main`` with the names it uses in order of first use;
    a program's kernel has its parameters.  (IR name hints cannot serve: xDSL
    drops a ``_<digits>`` suffix from them.)
    """
    from tdsl.frontend.ast import Name, Program, walk

    if not isinstance(tree, Program):
        names: dict[str, None] = {}
        for node in walk(tree.body):
            if isinstance(node, Name):
                names.setdefault(node.id)
        if kernel is not None and kernel != "main":
            raise TdslNameError(
                f"no kernel named `{kernel}`: an expression compiles to one kernel, `main`"
            )
        return "main", list(names)
    if kernel is None:
        chosen = tree.kernels[-1]
    else:
        found = [k for k in tree.kernels if k.name == kernel]
        if not found:
            defined = ", ".join(f"`{k.name}`" for k in tree.kernels)
            raise TdslNameError(f"no kernel named `{kernel}`; the source defines {defined}")
        chosen = found[0]
    return chosen.name, [p.name for p in chosen.params]


def _groups(fused: ModuleOp, tiled: ModuleOp, func_name: str) -> list[GroupInfo]:
    from xdsl.dialects.func import FuncOp

    from tdsl.dialects.kernel import FusedOp, TileOp, YieldOp

    def function(module: ModuleOp) -> FuncOp | None:
        for op in module.ops:
            if isinstance(op, FuncOp) and op.sym_name.data == func_name:
                return op
        return None

    budgets: dict[str, int | None] = {}
    fused_func = function(fused)
    if fused_func is not None:
        for op in fused_func.walk():
            if isinstance(op, FusedOp) and op.group is not None:
                budgets[op.group.data] = op.budget_value
    out: list[GroupInfo] = []
    tiled_func = function(tiled)
    if tiled_func is None:
        return out
    for op in tiled_func.walk():
        if not isinstance(op, TileOp | FusedOp):
            continue
        name = op.group.data if op.group is not None else f"#{len(out)}"
        ops = tuple(inner.name for inner in op.body.block.ops if not isinstance(inner, YieldOp))
        inputs = tuple(_type_text(v.type) for v in op.inputs)
        outputs = tuple(_type_text(r.type) for r in op.outputs)
        if isinstance(op, TileOp):
            info = GroupInfo(
                name,
                ops,
                inputs,
                outputs,
                op.space_value,
                op.tiles_value,
                op.scratch_value,
                budgets.get(name),
            )
        else:
            info = GroupInfo(name, ops, inputs, outputs, None, None, None, op.budget_value)
        out.append(info)
    return out


def _build(
    source: str,
    shapes: dict[str, tuple[int, ...]] | None,
    dtypes: object,
    kernel: str | None,
    filename: str,
    options: JitOptions,
) -> CompiledKernel:
    """Run the pipeline on IR objects and load the generated Python."""
    from tdsl.frontend import lower, parse
    from tdsl.lowering.fuse import fuse
    from tdsl.lowering.numpy_target import emit_numpy, load_numpy
    from tdsl.lowering.tile import tile

    tree = parse(source, filename)
    name, arg_names = _signature_names(tree, kernel)
    module = lower(tree, shapes, cast(Any, dtypes))
    func_op = _pick_function(module, name)
    if len(module.body.block.ops) > 1:
        # Only the chosen kernel goes down the pipeline (and shows in ``.ir``).
        from xdsl.dialects.builtin import ModuleOp

        func_op.detach()
        module = ModuleOp([func_op])
    fused = fuse(module, options.memory_budget)
    tiled = tile(
        fused,
        memory_budget=options.memory_budget,
        tile_size=options.tile_size,
        tile_sizes=options.tile_sizes,
    )
    python = emit_numpy(tiled, threads=options.threads)
    functions = load_numpy(python)
    if name not in functions:
        raise TdslError(f"the NumPy target produced no function `{name}`")  # pragma: no cover
    args = [
        ArgSpec(arg_name, *_tensor_spec(arg_type))
        for arg_name, arg_type in zip(arg_names, func_op.function_type.inputs.data, strict=True)
    ]
    results = [_tensor_spec(t) for t in func_op.function_type.outputs.data]
    compiled = CompiledKernel(
        name=name,
        args=args,
        results=results,
        options=options,
        expression=source,
        source=python,
        function=functions[name],
        modules={"tensordsl": module, "fused": fused, "tiled": tiled},
        groups=_groups(fused, tiled, name),
    )
    return _finish(compiled)


# --------------------------------------------------------------------------- the JIT


class JITTensorKernel:
    """Compiles tensor expressions to NumPy, with a cache of compiled kernels.

    ``memory_budget`` (elements) bounds the scratch one fused kernel allocates at
    a time, all threads together; ``tile_size`` caps tile sizes; ``tile_sizes``
    fixes them; ``threads`` runs large tile loops on that many threads (default:
    one per core, at most 4; ``threads=1`` turns threads off); ``cache_size`` is
    the number of compiled kernels kept (least recently used go first).
    """

    options: JitOptions

    def __init__(
        self,
        memory_budget: int = DEFAULT_MEMORY_BUDGET,
        *,
        tile_size: int | None = None,
        tile_sizes: Sequence[int] = (),
        threads: int | None = None,
        cache_size: int = 256,
    ) -> None:
        self.options = JitOptions(
            memory_budget,
            tile_size,
            tuple(tile_sizes),
            default_threads() if threads is None else threads,
        )
        self._kernels = _LRU(_positive_int("cache_size", cache_size))
        # source -> the kernel a one-shot call last ran it with
        self._last: dict[str, CompiledKernel] = {}

    @property
    def memory_budget(self) -> int:
        return self.options.memory_budget

    @property
    def threads(self) -> int:
        return self.options.threads

    def compile(
        self,
        source: str,
        shapes: ShapesLike | None = None,
        dtypes: DTypesLike | None = None,
        *,
        kernel: str | None = None,
        filename: str = "<expr>",
        options: JitOptions | None = None,
    ) -> CompiledKernel:
        """Compile ``source`` (cached) and return the callable kernel.

        ``shapes`` maps each input of an expression to its shape; ``dtypes`` is
        one dtype for all inputs or a dtype per input (default float64).  For
        ``.tdsl`` program text the signatures give both; ``kernel`` picks a
        kernel by name (default: the only one, or else the last).  ``filename``
        names the source in error messages and IR locations.  ``options``, if
        given, replaces this JIT's options for this kernel.  Errors in the
        source raise :class:`~tdsl.errors.TdslError` subclasses pointing at it.
        """
        if options is None:
            options = self.options
        norm_shapes, norm_dtypes = _normalize(shapes, dtypes)
        key = (source, _freeze(norm_shapes), _freeze(norm_dtypes), kernel, filename, options)
        cache = self._kernels
        compiled = cache.get(key)
        if compiled is not None:
            return compiled
        with _COMPILE_LOCK:
            with cache.lock:  # another thread may have compiled it while we waited
                compiled = cache.data.get(key)
                if compiled is None:
                    cache.misses += 1
                else:
                    cache.hits += 1
            if compiled is None:
                compiled = _build(source, norm_shapes, norm_dtypes, kernel, filename, options)
                cache.put(key, compiled)
        return compiled

    def __call__(self, source: str, /, **arrays: Any) -> Any:
        """Compile ``source`` for the arrays' shapes and dtypes (cached) and run it.

        The last kernel each source ran with is tried first, with the kernel's own
        argument check; a different signature looks the kernel cache up.
        """
        last = self._last.get(source)
        if last is not None:
            out = last.try_call(arrays)
            if out is not NotImplemented:
                cache = self._kernels
                with cache.lock:
                    cache.hits += 1
                return out
        for name, value in arrays.items():
            _check_one_shot(name, value)
        compiled = self.compile(
            source,
            shapes={n: a.shape for n, a in arrays.items()},
            dtypes={n: a.dtype for n, a in arrays.items()},
        )
        with self._kernels.lock:
            if len(self._last) >= self._kernels.maxsize:
                self._last.clear()
            self._last[source] = compiled
        return compiled(**arrays)

    def cache_info(self) -> CacheInfo:
        """Hits, misses, the maximum size and the current size of the kernel cache.

        A one-shot call that finds its kernel counts as a hit, like a
        :meth:`compile` that finds it.
        """
        cache = self._kernels
        with cache.lock:
            return CacheInfo(cache.hits, cache.misses, cache.maxsize, len(cache.data))

    def cache_clear(self) -> None:
        """Forget every compiled kernel and reset the statistics."""
        with self._kernels.lock:
            self._last.clear()
        self._kernels.clear()

    def __repr__(self) -> str:
        o = self.options
        extra = ""
        if o.tile_size is not None:
            extra += f", tile_size={o.tile_size}"
        if o.tile_sizes:
            extra += f", tile_sizes={o.tile_sizes}"
        return f"JITTensorKernel(memory_budget={o.memory_budget}{extra}, threads={o.threads})"


def _check_one_shot(name: str, value: object) -> None:
    """One-shot inputs must be float arrays: the kernel is compiled for their types."""
    if not isinstance(value, np.ndarray):
        raise TdslCallError(f"argument `{name}` must be a NumPy array, got {_describe(value)}")
    dtype = cast(np.ndarray[Any, Any], value).dtype
    if dtype.name not in _ELEMENT_NAMES:
        raise TdslCallError(
            f"argument `{name}` has dtype {dtype}; tdsl computes on float16, float32 or float64"
        )
    if not dtype.isnative:
        raise TdslCallError(
            f"argument `{name}` has non-native byte order ({dtype.str}); convert it with "
            f"`.astype(np.{dtype.name})`"
        )


@dataclass
class _Default:
    jit: JITTensorKernel | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


_DEFAULT = _Default()


def default_jit() -> JITTensorKernel:
    """The shared :class:`JITTensorKernel` behind :func:`compile` and :func:`jit_tensor`."""
    jit = _DEFAULT.jit
    if jit is None:
        with _DEFAULT.lock:
            if _DEFAULT.jit is None:
                _DEFAULT.jit = JITTensorKernel()
            jit = _DEFAULT.jit
    return jit


def compile(
    source: str,
    shapes: ShapesLike | None = None,
    dtypes: DTypesLike | None = None,
    *,
    kernel: str | None = None,
    filename: str = "<expr>",
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    tile_size: int | None = None,
    tile_sizes: Sequence[int] = (),
    threads: int | None = None,
) -> CompiledKernel:
    """Compile ``source`` with the given options, cached in :func:`default_jit`'s cache.

    The same as ``JITTensorKernel(memory_budget, ...).compile(source, shapes, dtypes)``
    except that every option combination shares one cache.
    """
    options = JitOptions(
        memory_budget,
        tile_size,
        tuple(tile_sizes),
        default_threads() if threads is None else threads,
    )
    return default_jit().compile(
        source, shapes, dtypes, kernel=kernel, filename=filename, options=options
    )


def jit_tensor(source: str, shapes: ShapesLike, /, **arrays: Any) -> Any:
    """Compile ``source`` for ``shapes`` (dtypes from the arrays) and run it on ``arrays``."""
    dtypes: dict[str, DTypeLike] = {}
    for name, value in arrays.items():
        _check_one_shot(name, value)
        dtypes[name] = value.dtype
    return default_jit().compile(source, shapes, dtypes)(**arrays)
