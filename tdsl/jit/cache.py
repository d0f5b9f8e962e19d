"""The kernel cache: a thread-safe LRU, and the normalized keys it is looked up by.

Kernels are cached on (source text, shapes, dtypes, kernel name, filename,
options).  Shapes and dtypes are normalized first, so that equal meanings make
one key: ``{"A": [4, 4]}`` and ``{"A": (4, 4)}``, ``"f32"`` and ``np.float32``,
no dtypes and ``"f64"``.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, Generic, NamedTuple, TypeAlias, TypeVar, cast

import numpy as np

from tdsl.dtypes import AMBIGUOUS_CODES, DTYPES
from tdsl.errors import TdslOptionError
from tdsl.jit.compiled import ELEMENT_NAMES
from tdsl.jit.options import JitOptions

ShapesLike: TypeAlias = Mapping[str, Sequence[int] | int]
"""Input shapes by name: ``{"A": (8, 16), "b": (16,)}`` (an int ``n`` means ``(n,)``)."""

DTypeLike: TypeAlias = str | np.dtype[Any] | type[Any]
"""A dtype spelled ``"f32"``, ``"float32"``, ``np.float32`` or ``np.dtype("f4")``."""

DTypesLike: TypeAlias = Mapping[str, DTypeLike] | DTypeLike
"""One dtype for every input, or a dtype per input name (missing names are float64).

The Python type ``float`` declares a weak scalar input of an expression (a Python
float, typed like a literal); a strong float64 is ``np.float64`` or ``"f64"``.  The
Python type ``int`` declares a weak integer (a Python int), a strong int64 is
``np.int64`` or ``"i64"``."""


class CacheInfo(NamedTuple):
    """Statistics of a kernel cache, like :func:`functools.lru_cache`'s."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


V = TypeVar("V")


class KernelCache(Generic[V]):
    """A small thread-safe LRU map (of kernels, or of what holds them); counts hits and
    (optionally) misses."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self.lock = threading.Lock()
        self.data: OrderedDict[Any, V] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: Any) -> V | None:
        with self.lock:
            kernel = self.data.get(key)
            if kernel is not None:
                self.data.move_to_end(key)
                self.hits += 1
            return kernel

    def put(self, key: Any, kernel: V, maxsize: int | None = None) -> None:
        """Keep ``kernel`` under ``key``, the least recently used going first past
        ``maxsize`` (given: from now on; a traced function keeps its JIT's size)."""
        with self.lock:
            if maxsize is not None:
                self.maxsize = maxsize
            self.data[key] = kernel
            self.data.move_to_end(key)
            while len(self.data) > self.maxsize:
                self.data.popitem(last=False)

    def values(self) -> tuple[V, ...]:
        with self.lock:
            return tuple(self.data.values())

    def clear(self) -> None:
        with self.lock:
            self.data.clear()
            self.hits = self.misses = 0


def dtype_key(dtype: object) -> object:
    """``"bool"``/``"f16"``/``"f32"``/``"f64"`` for a supported dtype spelling; the value
    itself otherwise.

    The Python types ``float`` and ``int`` (weak scalar inputs) stay themselves: they
    are not float64 and int64.  Unsupported spellings go to the frontend unchanged,
    which reports them.
    """
    if dtype is float or dtype is int:
        return dtype
    if isinstance(dtype, str) and (dtype in DTYPES or dtype in AMBIGUOUS_CODES):
        return dtype  # (the frontend refuses `i8`, NumPy's int64 and MLIR's 8-bit integer)
    try:
        resolved = np.dtype(cast(Any, dtype))
    except (TypeError, ValueError):
        return dtype
    if not resolved.isnative:
        return dtype  # (the frontend refuses `>f4`: kernels compute in native byte order)
    return ELEMENT_NAMES.get(resolved.name, dtype)


def shape_of(name: str, shape: object) -> tuple[int, ...]:
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
    sizes = tuple(int(d) for d in dims)
    if math.prod(sizes) > MAX_ELEMENTS:
        raise TdslOptionError(
            f"the shape of `{name}`, {sizes}, has {math.prod(sizes)} elements: more than an "
            f"array can have (2**{MAX_ELEMENTS.bit_length() - 1}, whose bytes NumPy can count)"
        )
    return sizes


MAX_ELEMENTS = 1 << 59
"""The most elements an input may have: 8-byte elements then fill 2**62 bytes, within
NumPy's largest size."""


def normalize(
    shapes: ShapesLike | None, dtypes: DTypesLike | None
) -> tuple[dict[str, tuple[int, ...]] | None, object]:
    """Shapes as int tuples; dtypes as ``f16``/``f32``/``f64``, one or a dict by name.

    Float64 is the default, so ``None``, ``"f64"`` and a dict of float64 entries
    all become ``"f64"``, and float64 entries leave a dict: equal meanings, one key.
    """
    norm_shapes = None
    if shapes is not None:
        _check_names("shapes", "shapes", shapes)
        norm_shapes = {k: shape_of(k, v) for k, v in shapes.items()}
    if dtypes is None:
        return norm_shapes, "f64"
    if isinstance(dtypes, Mapping):
        per_name = cast(Mapping[str, object], dtypes)
        _check_names("dtypes", "dtypes (or one dtype for every input)", per_name)
        norm = {
            k: _hashable_dtype(k, key)
            for k, v in per_name.items()
            if (key := dtype_key(v)) != "f64"
        }
        return norm_shapes, norm or "f64"
    return norm_shapes, _hashable_dtype(None, dtype_key(dtypes))


def _check_names(argument: str, what: str, value: object) -> None:
    """``value`` must be a mapping from input names (strings), else :class:`TdslOptionError`."""
    if not isinstance(value, Mapping):
        raise TdslOptionError(
            f"{argument} must be a mapping of {what} by input name, "
            f"got a value of type `{type(value).__name__}`"
        )
    bad = next((k for k in cast(Mapping[object, object], value) if not isinstance(k, str)), None)
    if bad is not None:
        raise TdslOptionError(f"the keys of {argument} must be input names (str), got {bad!r}")


def _hashable_dtype(name: str | None, key: object) -> object:
    """An unsupported dtype spelling goes to the frontend, which names it; one that is
    not even hashable (a list) cannot be a cache key: :class:`TdslOptionError` here."""
    try:
        hash(key)
    except TypeError:
        where = "dtypes" if name is None else f"the dtype of `{name}`"
        raise TdslOptionError(
            f"{where} must be a dtype (bool, f16, f32, f64 or a NumPy dtype), got {key!r}"
        ) from None
    return key


def check_source(source: object, filename: object, kernel: object) -> None:
    """The source text, the file name and the kernel name of a compile must be strings
    (the kernel may be None), else :class:`TdslOptionError` naming the argument."""
    if not isinstance(source, str):
        note = "decode bytes first, e.g. source.decode()" if isinstance(source, bytes) else None
        raise TdslOptionError(
            "source must be a str (an expression or .tdsl program text), "
            f"got a value of type `{type(source).__name__}`",
            note=note,
        )
    if not isinstance(filename, str):
        raise TdslOptionError(
            f"filename must be a str, got a value of type `{type(filename).__name__}`"
        )
    if kernel is not None and not isinstance(kernel, str):
        raise TdslOptionError(
            f"kernel must be a kernel's name (str) or None, got a value of type "
            f"`{type(kernel).__name__}`"
        )


class Request(NamedTuple):
    """What one kernel is compiled from: the arguments of
    :meth:`~tdsl.jit.JITTensorKernel.compile`, shapes and dtypes normalized
    (:func:`normalize`).  Built on a cache miss only: a hit looks up its key."""

    source: str
    shapes: dict[str, tuple[int, ...]] | None
    dtypes: object
    kernel: str | None
    filename: str
    options: JitOptions


def freeze(value: object) -> object:
    """A hashable, order-independent form of a normalized shapes or dtypes argument."""
    if isinstance(value, dict):
        return tuple(sorted(cast(dict[str, object], value).items()))
    return value


__all__ = [
    "CacheInfo",
    "DTypeLike",
    "DTypesLike",
    "KernelCache",
    "Request",
    "ShapesLike",
    "check_source",
    "dtype_key",
    "freeze",
    "normalize",
    "shape_of",
]
