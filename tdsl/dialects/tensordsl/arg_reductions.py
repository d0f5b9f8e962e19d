"""``argmax`` and ``argmin``: the index of the first largest (smallest) element along an
axis, or in the flattened operand, as NumPy's (a ``nan`` is the extreme: the first one
wins).  They have no op of their own: :mod:`tdsl.frontend.arg_reductions` writes each as
a ``max`` (``min``), a comparison with it and a ``min`` of the indices where it holds,
which fuse into one group reading the operand twice, with nothing held but the extreme
of each row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.ir import Operation, SSAValue

from tdsl.dialects.structured import LanguageFunction, Param


class ArgReduction(LanguageFunction):
    """Base of ``argmax`` and ``argmin`` (language functions without an op)."""

    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("axis", "axis", None),
        Param("keepdims", "bool", False),
    )
    LARGEST: ClassVar[bool]
    """``argmax`` (True) or ``argmin``."""

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return np.dtype(np.int64)  # True is the larger, as in NumPy

    @classmethod
    def int_inputs_as(cls, dtype: np.dtype[Any]) -> np.dtype[Any] | None:
        return dtype

    @classmethod
    def from_call(cls, operands: Sequence[SSAValue], params: Mapping[str, object]) -> Operation:
        raise NotImplementedError(f"{cls.FUNCTION} is several ops: tdsl.frontend writes them")


class ArgMax(ArgReduction):
    """The index of the first largest element along ``axis`` (of the flattened operand
    when ``axis`` is None), an ``int64`` (``np.argmax``; the first ``nan`` if any)."""

    FUNCTION: ClassVar[str | None] = "argmax"
    LARGEST: ClassVar[bool] = True


class ArgMin(ArgReduction):
    """The index of the first smallest element along ``axis`` (of the flattened operand
    when ``axis`` is None), an ``int64`` (``np.argmin``; the first ``nan`` if any)."""

    FUNCTION: ClassVar[str | None] = "argmin"
    LARGEST: ClassVar[bool] = False


ARG_FUNCTIONS: tuple[type[ArgReduction], ...] = (ArgMax, ArgMin)

__all__ = ["ARG_FUNCTIONS", "ArgMax", "ArgMin", "ArgReduction"]
