"""Array types of other libraries that compiled kernels accept: the JIT's call path asks
this registry, integrations fill it.

A compiled kernel takes NumPy arrays.  An integration (:mod:`tdsl.dask`) adds an
array type by registering an :class:`ArrayType`: the module that defines the type
and the type's name there, how to read a value's shape, and the call that takes
over when any argument is such an array.  The JIT (:mod:`tdsl.jit.calls`) never
imports an integration, nor the library it wraps: a registered type is looked up
in ``sys.modules`` only, since a value of it can exist only once its module is
loaded.

The registry sits in the ground layer so that the layers above can meet in it
without importing each other: the package root (:mod:`tdsl`) imports
:mod:`tdsl.dask`, which registers itself, so calling a kernel with a Dask array
needs no import beyond ``tdsl``.  See ``docs/architecture.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast


@dataclass(frozen=True)
class ArrayType:
    """An array type from another library that compiled kernels accept."""

    module: str
    """The module that defines the type (``dask.array``); the type is looked up only
    when that module is loaded."""
    name: str
    """The type's name in :attr:`module` (``Array``)."""
    shape: Callable[[str, Any], tuple[int, ...]]
    """``shape(argument_name, value)``: the value's shape, or a
    :class:`~tdsl.errors.TdslCallError` saying why the value cannot be used."""
    call: Callable[[Any, list[Any], Any], Any]
    """``call(kernel, arguments, out)``: the call of a compiled kernel whose arguments
    (in signature order) include at least one such array."""

    def loaded(self) -> type[Any] | None:
        """The type, if its module is loaded, else None."""
        module = sys.modules.get(self.module)
        return (
            None if module is None else cast("type[Any] | None", getattr(module, self.name, None))
        )


ARRAY_TYPES: list[ArrayType] = []
"""The registered array types, in the order they were registered."""


def register_array_type(array_type: ArrayType) -> None:
    """Add ``array_type`` to :data:`ARRAY_TYPES` (once: registering it again does nothing)."""
    if array_type not in ARRAY_TYPES:
        ARRAY_TYPES.append(array_type)


def array_type_of(values: Iterable[object]) -> ArrayType | None:
    """The registered type of the first value that is of one, else None."""
    loaded = [(t, cls) for t in ARRAY_TYPES if (cls := t.loaded()) is not None]
    if not loaded:
        return None
    for value in values:
        for array_type, cls in loaded:
            if isinstance(value, cls):
                return array_type
    return None


__all__ = ["ARRAY_TYPES", "ArrayType", "array_type_of", "register_array_type"]
