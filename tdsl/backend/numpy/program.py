"""A group body as NumPy calls: the values of generated code, and the builder ops lower through.

Each op of a group lowers (:mod:`tdsl.backend.numpy.lowerings`) through
:class:`TileGen`, an implementation of :class:`NumpyTileBuilder`: it records one
:class:`Instr` per NumPy call, reading and writing :class:`Var` values.
Where a value lives (an input slice, an output slice, a scratch buffer, a
module constant, a view) comes from the scratch plan
(:mod:`tdsl.dialects.kernel_plan`), so the code allocates exactly what the
plan counts.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from tdsl.backend.numpy.layout import Axis, Layout
from tdsl.errors import TdslIRError
from tdsl.scalar_numpy import STRIDED_OUT_UNSAFE, tdsl_strided_safe


class NumpyValue(Protocol):
    """A value in generated NumPy code: an array (or a view, a constant) of one tile."""

    @property
    def shape(self) -> tuple[int, ...]:
        """Its shape in a full tile (a remainder tile is smaller along tiled dims)."""
        ...

    @property
    def dtype(self) -> np.dtype[Any]: ...


class NumpyTileBuilder(Protocol):
    """Writes the NumPy calls computing one tile of a group (what a lowering of
    :mod:`tdsl.backend.numpy.lowerings` sees; :class:`TileGen` implements it).

    Calls must write their result through ``out=`` into the given arrays and
    must not allocate: every buffer an op needs besides its results is a
    workspace the op declared with ``numpy_workspace``, so that the scratch model
    counts it.  Shapes are those of a full tile; code must not depend on them
    at run time, since a remainder tile is smaller.
    """

    def call(self, template: str, *operands: NumpyValue, out: NumpyValue, note: str = "") -> None:
        """Emit ``template`` formatted with ``{0}``, ``{1}``, ... for ``operands`` and
        ``{out}`` for ``out``: one NumPy call that writes ``out``."""
        ...

    def ufunc(self, name: str, *operands: NumpyValue, out: NumpyValue, note: str = "") -> None:
        """``np.<name>(operands..., out=out)``."""
        ...

    def scalar(self, value: float, dtype: np.dtype[Any]) -> NumpyValue:
        """A 0-d constant of ``dtype``."""
        ...

    def constant(self, value: np.ndarray[Any, Any]) -> NumpyValue:
        """A constant array (of its own dtype and shape, broadcasting like an operand)."""
        ...

    def fill(self, like: NumpyValue, value: float) -> NumpyValue:
        """A constant array shaped like ``like`` (NumPy's ``maximum`` is several times
        faster against an array than against a scalar)."""
        ...

    def workspace(self, index: int) -> NumpyValue:
        """The op's ``index``-th declared workspace buffer."""
        ...

    def constant_value(self, value: NumpyValue) -> np.ndarray[Any, Any] | None:
        """The value of a compile-time constant operand, else None."""
        ...


VarKind = Literal["input", "output", "buffer", "staged", "const", "fill", "view"]


@dataclass(eq=False)
class Var:
    """A value in generated code.

    ``input``: a group operand (``index`` into the group's inputs), sliced to the
    tile; ``output``: a group result (``index``), sliced to the tile;
    ``buffer``: scratch buffer ``index`` viewed with this var's layout;
    ``staged``: scratch buffer ``index`` holding the value whole along the tiled
    reduction dims, sliced to the tile;
    ``const``: a module-level constant (``name``); ``fill``: a constant block of
    ``fill_value`` in the var's tile shape; ``view``: ``template`` applied to
    ``base``.
    """

    layout: Layout
    dtype: np.dtype[Any]
    kind: VarKind
    tile: tuple[int, ...]
    """Its shape in a full tile of the code (what an op's lowering sees as ``shape``)."""
    index: int = -1
    name: str = ""
    base: Var | None = None
    template: str = "{0}"
    fill_value: float = 0.0

    @property
    def shape(self) -> tuple[int, ...]:
        return self.tile

    def root(self) -> Var:
        """The value whose memory this one reads (itself unless a view)."""
        v = self
        while v.base is not None:
            v = v.base
        return v


@dataclass(eq=False)
class Instr:
    """One NumPy call: ``code`` formats operands as ``{0}, {1}, ...`` and the result as ``{out}``."""

    code: str
    result: Var | None
    operands: tuple[Var, ...]
    note: str = ""


@dataclass
class ConstPool:
    """Module-level constant arrays, deduplicated; the code generator emits them."""

    arrays: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict[str, np.ndarray[Any, Any]])
    _keys: dict[tuple[str, tuple[int, ...], bytes], str] = field(
        default_factory=dict[tuple[str, tuple[int, ...], bytes], str]
    )

    functions: dict[str, str] = field(default_factory=dict[str, str])
    """Module-level helper functions by name: their source (NumPy functions the
    interpreter's table defines where NumPy has none, such as ``erf``)."""

    def function(self, name: str, source: str) -> str:
        """The name of a module-level function ``name`` defined by ``source``."""
        known = self.functions.setdefault(name, source)
        if known != source:
            raise TdslIRError(f"numpy target: two helper functions named {name}")
        return name

    def add(self, array: np.ndarray[Any, Any]) -> str:
        """The name of a module constant holding ``array``."""
        key = (array.dtype.str, array.shape, array.tobytes())
        name = self._keys.get(key)
        if name is None:
            name = f"_C{len(self.arrays)}"
            self._keys[key] = name
            self.arrays[name] = array
        return name


class TileGen:
    """Collects the :class:`Instr` of one op's ``lower_numpy`` (a ``NumpyTileBuilder``).

    ``tile_shape`` gives a var's shape in a full tile of the schedule the code
    runs; ``workspaces`` are the op's declared workspace buffers, as vars.
    """

    def __init__(
        self,
        consts: ConstPool,
        tile_shape: Any,
        workspaces: Sequence[Var] = (),
        op_name: str = "",
    ) -> None:
        self.consts = consts
        self.instrs: list[Instr] = []
        self._tile_shape = tile_shape
        self._workspaces = list(workspaces)
        self._op_name = op_name

    def shape_of(self, v: Var) -> tuple[int, ...]:
        return tuple(self._tile_shape(v))

    # -- NumpyTileBuilder ---------------------------------------------------------

    def call(self, template: str, *operands: Any, out: Any, note: str = "") -> None:
        self.instrs.append(Instr(template, out, tuple(operands), note))

    def ufunc(self, name: str, *operands: Any, out: Any, note: str = "") -> None:
        args = ", ".join(f"{{{i}}}" for i in range(len(operands)))
        if name in STRIDED_OUT_UNSAFE:  # (NumPy's loop would skip most of a strided out)
            safe = self.function("tdsl_strided_safe", inspect.getsource(tdsl_strided_safe))
            self.call(f"{safe}(np.{name}, {args}, out={{out}})", *operands, out=out, note=note)
            return
        self.call(f"np.{name}({args}, out={{out}})", *operands, out=out, note=note)

    def function(self, name: str, source: str) -> str:
        """A helper function defined in the generated module by ``source`` (a function
        called like a ufunc); its name."""
        return self.consts.function(name, source)

    def scalar(self, value: float, dtype: np.dtype[Any]) -> Var:
        return self.constant(np.array(value, dtype=dtype))

    def constant(self, value: np.ndarray[Any, Any]) -> Var:
        array = np.asarray(value)
        return Var(
            tuple(Axis(n) for n in array.shape),
            array.dtype,
            "const",
            array.shape,
            name=self.consts.add(array),
        )

    def fill(self, like: Any, value: float) -> Var:
        v: Var = like
        # (a Python int or float, not float(): an integer beyond 2**53 stays exact)
        return Var(v.layout, v.dtype, "fill", v.tile, fill_value=np.asarray(value).item())

    def workspace(self, index: int) -> Var:
        if not 0 <= index < len(self._workspaces):
            raise TdslIRError(
                f"numpy target: '{self._op_name}' uses workspace {index} but declared "
                f"{len(self._workspaces)} (numpy_workspace)"
            )
        return self._workspaces[index]

    def constant_value(self, value: Any) -> np.ndarray[Any, Any] | None:
        v: Var = value
        if v.kind == "const":
            return self.consts.arrays[v.name]
        if v.kind == "fill":
            return np.array(v.fill_value, dtype=v.dtype)
        return None


__all__ = ["ConstPool", "Instr", "TileGen", "Var", "VarKind"]
