"""Interpreter implementations of the ``kernel`` ops.

``kernel.fused`` runs its body once on whole tensors.  ``kernel.tile`` runs
its body once per tile, in row-major order of the tile origins, on the slices
its input maps select, and writes each yielded tile into the slice of a
preallocated result that its output map selects.  Results are allocated
filled with ``nan``, so an element that no tile writes (a bug in a schedule)
shows up in a comparison instead of being left as uninitialized memory.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Attribute
from xdsl.utils.exceptions import InterpretationError

from tdsl.dialects.kernel import FusedOp, TileOp, YieldOp
from tdsl.dialects.tensordsl import NUMPY_DTYPES, fmt_shape, tensor_shape


def _region_name(op: FusedOp | TileOp) -> str:
    return op.name if op.group is None else f"{op.name} {op.group.data}"


@register_impls
class KernelFunctions(InterpreterFunctions):
    """NumPy implementations of ``kernel.fused``, ``kernel.tile`` and ``kernel.yield``."""

    @impl(FusedOp)
    def run_fused(self, interpreter: Interpreter, op: FusedOp, args: PythonValues) -> PythonValues:
        return interpreter.run_ssacfg_region(op.body, args, _region_name(op))

    @impl(TileOp)
    def run_tile(self, interpreter: Interpreter, op: TileOp, args: PythonValues) -> PythonValues:
        outputs: list[np.ndarray[Any, np.dtype[Any]]] = []
        for result in op.outputs:
            t = cast(TensorType[Attribute], result.type)
            dtype = NUMPY_DTYPES[type(t.get_element_type())]
            outputs.append(np.full(tensor_shape(result), np.nan, dtype=dtype))
        starts = op.tile_starts()  # a zero extent still runs one (empty) tile
        in_dims, out_dims = op.input_dims, op.output_dims
        name = _region_name(op)
        # The trailing Ellipsis keeps 0-d values as 0-d views rather than scalars.
        for start in starts:
            tile_args = tuple(
                arg[(*op.tile_slice(dims, start), ...)]
                for arg, dims in zip(args, in_dims, strict=True)
            )
            tile_results = interpreter.run_ssacfg_region(op.body, tile_args, name)
            for idx, (out, dims, value) in enumerate(
                zip(outputs, out_dims, tile_results, strict=True)
            ):
                window = out[(*op.tile_slice(dims, start), ...)]
                shape = tuple(np.shape(value))
                if shape != window.shape:
                    raise InterpretationError(
                        f"'{op.name}' tile at {list(start)} yielded result #{idx} of shape "
                        f"{fmt_shape(shape)}, but its slice of {op.outputs[idx].type} has "
                        f"shape {fmt_shape(window.shape)}"
                    )
                window[...] = value
        return tuple(outputs)

    @impl_terminator(YieldOp)
    def run_yield(
        self, interpreter: Interpreter, op: YieldOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()


__all__ = ["KernelFunctions"]
