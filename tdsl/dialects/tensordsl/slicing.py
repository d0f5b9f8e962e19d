"""Windows of a tensor: ``tensordsl.slice``, NumPy's basic slicing ``x[a:b:s, ...]``.

A slice computes nothing: its result is a strided window of its operand, an offset
and a step per axis (MLIR's ``tensor.extract_slice`` with static offsets and strides;
the sizes are the result's shape).  It is not structured: fusion leaves it between
groups, and every target reads the window in place (see
:class:`~tdsl.dialects.op_interfaces.StridedView`).  An integer index (``x[0]``) is a
slice of extent 1 and a ``squeeze``, ``None`` an ``expand_dims``: the frontend writes
them.

```mlir
%1 = tensordsl.slice %0 offsets [0, 1] strides [1, 2] : tensor<4x8xf32> -> tensor<4x4xf32>
%2 = tensordsl.slice %0 offsets [3, 0] strides [-1, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
```
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import I64, DenseArrayBase, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects.op_interfaces import StridedView
from tdsl.dialects.structured import (
    ElementConstr,
    StaticShapeConstr,
    element_type,
    fmt_shape,
    operand_value,
    tensor_shape,
    tensor_type,
)


def window_of(extent: int, index: slice) -> tuple[int, int, int]:
    """NumPy's window of a Python ``slice`` along an axis of ``extent``: its first index,
    its step and its length (an empty window starts at 0 with step 1, a window of one
    element has step 1: ``x[1::2**62]`` reads one row, whatever its step)."""
    start, stop, step = index.indices(extent)
    size = len(range(start, stop, step))
    return (start, step if size > 1 else 1, size) if size else (0, 1, 0)


def check_window(
    shape: Sequence[int], offsets: Sequence[int], steps: Sequence[int], sizes: Sequence[int]
) -> str | None:
    """Why a window does not lie in a tensor of ``shape``, or None when it does."""
    if not len(shape) == len(offsets) == len(steps) == len(sizes):
        return (
            f"has {len(offsets)} offsets and {len(steps)} strides for a rank-{len(shape)} "
            f"operand and a rank-{len(sizes)} result; give one per axis"
        )
    for axis, (n, o, s, k) in enumerate(zip(shape, offsets, steps, sizes, strict=True)):
        if s == 0:
            return f"has stride 0 along axis {axis}; a stride is nonzero"
        if abs(s) * math.prod(shape[axis + 1 :]) >= 2**63:
            return (
                f"has stride {s} along axis {axis}, whose step in elements does not fit in "
                "int64 (a window of one element along an axis takes stride 1)"
            )
        if k == 0:
            if (o, s) != (0, 1):
                return f"has an empty axis {axis} with offset {o} and stride {s}: write 0 and 1"
            continue
        last = o + (k - 1) * s
        if not (0 <= o < n and 0 <= last < n):
            return (
                f"reads indices {o} to {last} along axis {axis}, outside its extent {n} "
                f"(operand shape {fmt_shape(shape)})"
            )
    return None


@irdl_op_definition
class SliceOp(IRDLOperation, StridedView):
    """A strided window of its operand, as NumPy's ``x[a:b:s, ...]``: per axis, the
    offset of the first element and the stride (negative: backwards); the result's shape
    is the window's."""

    name = "tensordsl.slice"

    E: ClassVar = VarConstraint("E", ElementConstr)
    input = operand_def(TensorType.constr(E, shape=StaticShapeConstr))
    result = result_def(TensorType.constr(E, shape=StaticShapeConstr))
    offsets = prop_def(DenseArrayBase.constr(I64))
    strides = prop_def(DenseArrayBase.constr(I64))

    assembly_format = (
        "$input `offsets` $offsets `strides` $strides attr-dict `:` type($input) `->` type($result)"
    )
    traits = traits_def(Pure())

    def __init__(
        self,
        input: SSAValue | Operation,
        offsets: Sequence[int],
        strides: Sequence[int],
        sizes: Sequence[int],
    ) -> None:
        value = operand_value(self.name, input)
        props: dict[str, Attribute] = {
            "offsets": DenseArrayBase.from_list(i64, list(offsets)),
            "strides": DenseArrayBase.from_list(i64, list(strides)),
        }
        result = tensor_type(element_type(value), tuple(sizes))
        super().__init__(operands=[value], result_types=[result], properties=props)

    @classmethod
    def of(cls, input: SSAValue | Operation, index: Sequence[slice]) -> SliceOp:
        """The window of Python slices ``index``, one per axis (NumPy's rules)."""
        value = operand_value(cls.name, input)
        windows = [window_of(n, s) for n, s in zip(tensor_shape(value), index, strict=True)]
        return cls(value, *(tuple(w[i] for w in windows) for i in range(3)))

    def window(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Per axis of the operand, the index of the result's first element and the step
        (nonzero; negative steps read backwards)."""
        return tuple(self.offsets.get_values()), tuple(self.strides.get_values())

    def layout(
        self, shape: Sequence[int], strides: Sequence[int]
    ) -> tuple[int, tuple[int, ...]] | None:
        offsets, steps = self.window()
        offset = sum(o * s for o, s in zip(offsets, strides, strict=True))
        return offset, tuple(st * s for st, s in zip(steps, strides, strict=True))

    def index(self) -> tuple[slice, ...]:
        """The window as Python slices (``x[op.index()]`` is the result)."""
        out: list[slice] = []
        for o, s, k in zip(*self.window(), tensor_shape(self.result), strict=True):
            if k == 0:
                out.append(slice(0, 0, 1))
                continue
            stop = o + (k - 1) * s + (1 if s > 0 else -1)
            out.append(slice(o, None if stop < 0 else stop, s))
        return tuple(out)

    def index_text(self) -> str:
        """The window as NumPy's index text: ``[1:4, ::2]``."""

        def part(s: slice, n: int) -> str:
            start = "" if s.start in (0, None) and s.step > 0 else str(s.start)
            stop = "" if s.stop is None or (s.step > 0 and s.stop == n) else str(s.stop)
            step = "" if s.step == 1 else f":{s.step}"
            return f"{start}:{stop}{step}"

        shape = tensor_shape(self.input)
        return "[" + ", ".join(part(s, n) for s, n in zip(self.index(), shape, strict=True)) + "]"

    def evaluate_view(self, array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        return array[self.index()]

    def verify_(self) -> None:
        offsets, steps = self.window()
        why = check_window(tensor_shape(self.input), offsets, steps, tensor_shape(self.result))
        if why is not None:
            raise VerifyException(f"'{self.name}' op {why}")


__all__ = ["SliceOp", "check_window", "window_of"]
