"""Arrays of a static shape, as NumPy's creation functions make them: ``zeros``, ``ones``,
``full``, ``arange`` (of floats), ``tri`` and ``eye`` (each with NumPy's ``dtype=``:
float64 by default, or bool, float16, float32), and ``tril``/``triu``, which keep a
triangle of a tensor.

They are functions of the language without ops of their own
(:data:`CREATION`): the frontend writes them as ``tensordsl.constant`` ops (one value
stored once for ``zeros``, ``ones`` and ``full``; the values of ``arange``; the row and
column indices of ``tri`` and ``eye``, one 1-D constant each) and the element-wise
ops that compare the indices, so a ``tri(1024)`` mask is two constants of 1024 values
and a comparison that fuses with what reads it (see :mod:`tdsl.frontend.creation`).
Their values are NumPy's, and so are their dtypes: float64 unless ``dtype=`` says
otherwise (NumPy's ``arange`` and ``full`` of integers without a ``dtype`` make
integers, which the language does not have yet: a located error says to write a float
or give a ``dtype``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.ir import Operation, SSAValue

from tdsl.dialects.structured import LanguageFunction, Param


class _Created(LanguageFunction):
    """A function the frontend writes as constants and element-wise ops."""

    ARITY: ClassVar[int] = 0

    @classmethod
    def from_call(cls, operands: Sequence[SSAValue], params: Mapping[str, object]) -> Operation:
        raise NotImplementedError(f"{cls.FUNCTION} is written by tdsl.frontend.creation")


class _OfShape(_Created):
    """A creation function of a shape and a dtype."""

    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("shape", "shape", None, required=True),
        Param("dtype", "dtype", None),
    )
    POSITIONAL: ClassVar[int] = 2


class Zeros(_OfShape):
    """A float64 array of zeros of the given shape, as ``np.zeros(shape)``."""

    FUNCTION: ClassVar[str | None] = "zeros"


class Ones(_OfShape):
    """A float64 array of ones of the given shape, as ``np.ones(shape)``."""

    FUNCTION: ClassVar[str | None] = "ones"


class Full(_Created):
    """A float64 array of ``fill_value`` of the given shape, as ``np.full(shape, fill_value)``
    with a float ``fill_value``."""

    FUNCTION: ClassVar[str | None] = "full"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("shape", "shape", None, required=True),
        Param("fill_value", "number", None, required=True),
        Param("dtype", "dtype", None),
    )
    POSITIONAL: ClassVar[int] = 3


class Arange(_Created):
    """Evenly spaced float64 values in ``[start, stop)``, as ``np.arange(start, stop, step)``
    with a float among its arguments (``arange(5.0)``: ``0.0`` to ``4.0``)."""

    FUNCTION: ClassVar[str | None] = "arange"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("start", "number", None, required=True),
        Param("stop", "number", None),
        Param("step", "number", None),
        Param("dtype", "dtype", None),
    )
    POSITIONAL: ClassVar[int] = 4


class _Diagonal(_Created):
    """A creation function of an ``N`` by ``M`` grid split at its ``k``-th diagonal."""

    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("N", "size", None, required=True),
        Param("M", "size", None),
        Param("k", "int", 0),
        Param("dtype", "dtype", None),
    )
    POSITIONAL: ClassVar[int] = 4


class Tri(_Diagonal):
    """A float64 ``N`` by ``M`` array of ones at and below the ``k``-th diagonal and zeros
    above it, as ``np.tri(N, M, k)`` (``M`` defaults to ``N``)."""

    FUNCTION: ClassVar[str | None] = "tri"


class Eye(_Diagonal):
    """A float64 ``N`` by ``M`` array of ones on the ``k``-th diagonal and zeros elsewhere,
    as ``np.eye(N, M, k)`` (``M`` defaults to ``N``)."""

    FUNCTION: ClassVar[str | None] = "eye"


class _Triangle(_Created):
    """A triangle of a tensor's last two axes (of a 1-d tensor ``x`` of length n, the
    triangle of the n x n matrix whose rows are ``x``, as NumPy's)."""

    ARITY: ClassVar[int] = 1
    PARAMS: ClassVar[tuple[Param, ...]] = (Param("k", "int", 0),)


class Tril(_Triangle):
    """``x`` with zeros above the ``k``-th diagonal of its last two axes, as ``np.tril(x, k)``."""

    FUNCTION: ClassVar[str | None] = "tril"


class Triu(_Triangle):
    """``x`` with zeros below the ``k``-th diagonal of its last two axes, as ``np.triu(x, k)``."""

    FUNCTION: ClassVar[str | None] = "triu"


CREATION: tuple[type[LanguageFunction], ...] = (Zeros, Ones, Full, Arange, Tri, Eye, Tril, Triu)
"""The creation functions, which the frontend writes (:mod:`tdsl.frontend.creation`)."""

__all__ = ["CREATION", "Arange", "Eye", "Full", "Ones", "Tri", "Tril", "Triu", "Zeros"]
