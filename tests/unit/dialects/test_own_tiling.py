"""An op of another dialect brings its own tiling through ``carried_loops``.

``ext.running_max`` (``np.maximum.accumulate`` along the last axis) is defined
here from ``IRDLOperation``, the structured-op interface and the
:class:`~tdsl.dialects.op_interfaces.Scan` interface alone, not from
:class:`~tdsl.dialects.structured.ScanOp`: it says which loop dim it tiles
itself (``carried_loops``: tiles in order, a state of one value per row, its
start) and how one tile runs from the state on each target (``evaluate_scan``,
``lower_numpy_scan``, ``scalar_scan``).  Nothing in the planners or targets
knows it: it fuses with tensordsl ops, ``tdsl-tile`` cuts its axis under a
small budget, and the interpreter, the NumPy target and the native target
compute NumPy's result.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pytest
from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import IRDLOperation, VarConstraint, irdl_op_definition, operand_def, result_def
from xdsl.parser import Parser

from tdsl.backend.numpy.program import NumpyTileBuilder, NumpyValue
from tdsl.backend.numpy.target import emit_numpy, load_numpy
from tdsl.dialects.kernel import Kernel, TileOp
from tdsl.dialects.structured import (
    CarriedLoop,
    FloatTensorConstr,
    IteratorType,
    Scan,
    StructuredOpInterface,
    identity_map,
    numpy_dtype,
    tensor_shape,
)
from tdsl.dialects.tensordsl import TensorDSL
from tdsl.interpreters.run import run_function
from tdsl.pipeline import build_pipeline

Array = np.ndarray[Any, Any]


@irdl_op_definition
class RunningMaxOp(IRDLOperation, StructuredOpInterface, Scan):
    """The running maximum along the last axis (``np.maximum.accumulate(x, axis=-1)``).

    ```mlir
    %1 = ext.running_max %0 : tensor<4x8xf32>
    ```
    """

    name = "ext.running_max"
    T: ClassVar = VarConstraint("T", FloatTensorConstr)
    input = operand_def(T)
    result = result_def(T)
    assembly_format = "$input attr-dict `:` type($input)"

    def _rank(self) -> int:
        return len(tensor_shape(self.input))

    def loop_extents(self) -> tuple[int, ...]:
        return tensor_shape(self.input)

    def iterator_types(self) -> tuple[IteratorType, ...]:
        rank = self._rank()
        return tuple(
            IteratorType.SCAN if i == rank - 1 else IteratorType.PARALLEL for i in range(rank)
        )

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        return (identity_map(self._rank()), identity_map(self._rank()))

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        return (operand_types[0],)

    def evaluate(self, *args: Array) -> tuple[Array, ...]:
        return (np.maximum.accumulate(args[0], axis=-1),)

    def lower_numpy(
        self, g: NumpyTileBuilder, args: Sequence[NumpyValue], results: Sequence[NumpyValue]
    ) -> None:
        g.call("np.maximum.accumulate({0}, axis=-1, out={out})", args[0], out=results[0])

    # -- its own tiling of the last axis ---------------------------------------------

    def carried_loops(self) -> tuple[CarriedLoop, ...]:
        return (CarriedLoop(self._rank() - 1, -math.inf, numpy_dtype(self.result.type)),)

    def evaluate_scan(self, carry: Array | None, *args: Array) -> tuple[Array, Array]:
        (x,) = args
        if carry is None:
            carry = np.full((*x.shape[:-1], 1), -np.inf, dtype=x.dtype)
        value = np.maximum.accumulate(np.concatenate([carry, x], axis=-1), axis=-1)[..., 1:]
        return value, value[..., -1:]

    def lower_numpy_scan(
        self,
        g: NumpyTileBuilder,
        args: Sequence[NumpyValue],
        results: Sequence[NumpyValue],
        carry: NumpyValue,
    ) -> None:
        (x,), (out,) = args, results
        g.call("np.maximum({1}, {0}[..., 0:1], out={out}[..., 0:1])", x, carry, out=out)
        g.call("np.copyto({out}[..., 1:], {0}[..., 1:])", x, out=out)
        g.call("np.maximum.accumulate({out}, axis=-1, out={out})", out=out)
        g.call("np.copyto({out}, {0}[..., -1:])", out, out=carry)

    def scalar_scan(self, b: Builder, carry: SSAValue, args: Sequence[SSAValue]) -> SSAValue:
        return b.insert(arith.MaximumfOp(carry, args[0])).result

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (args[0],)


Ext = Dialect("ext", [RunningMaxOp], [])

PROGRAM = """
func.func @main(%x: tensor<6x500xf32>) -> tensor<6x500xf32> {
  %0 = tensordsl.exp %x : tensor<6x500xf32>
  %1 = ext.running_max %0 : tensor<6x500xf32>
  %2 = tensordsl.cumsum %x axis = 1 : tensor<6x500xf32> -> tensor<6x500xf32>
  %3 = tensordsl.sub %1, %2 : (tensor<6x500xf32>, tensor<6x500xf32>) -> tensor<6x500xf32>
  func.return %3 : tensor<6x500xf32>
}
"""


def context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, TensorDSL, Kernel, Ext):
        ctx.load_dialect(dialect)
    return ctx


def tiled(budget: int) -> ModuleOp:
    module = Parser(context(), PROGRAM).parse_module()
    build_pipeline(f"tdsl-fuse{{memory-budget={budget}}},tdsl-tile").apply(context(), module)
    module.verify()
    return module


def inputs() -> Array:
    return np.random.default_rng(4).standard_normal((6, 500)).astype(np.float32)


def reference(x: Array) -> Array:
    return np.maximum.accumulate(np.exp(x), axis=-1) - np.cumsum(x, axis=1)


@pytest.mark.parametrize("budget", [64, 1_000_000])
def test_an_op_with_its_own_tiling_fuses_and_tiles(budget: int) -> None:
    tiles = [op for op in tiled(budget).walk() if isinstance(op, TileOp)]
    assert len(tiles) == 1
    assert tiles[0].iterator_types == ("parallel", "scan")
    if budget == 64:
        assert tiles[0].tiles_value[1] < 500  # the carried dim is cut
        assert sum(b.elements for b in tiles[0].scratch_buffers) <= 64


@pytest.mark.parametrize("budget", [64, 1_000_000])
def test_an_op_with_its_own_tiling_runs_on_the_interpreter_and_numpy(budget: int) -> None:
    x = inputs()
    module = tiled(budget)
    (got,) = run_function(module, "main", x)
    np.testing.assert_array_equal(got, reference(x))
    got = load_numpy(emit_numpy(module, 1))["main"](x)
    np.testing.assert_array_equal(got, reference(x))


@pytest.mark.parametrize("budget", [64, 1_000_000])
def test_an_op_with_its_own_tiling_runs_natively(budget: int) -> None:
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    from tdsl.runtime.native import NativeProgram

    program = NativeProgram.from_tiled(tiled(budget), 1)
    x = inputs()
    got = program.functions["main"](x)
    np.testing.assert_allclose(got, reference(x), rtol=1e-6, atol=1e-5)
