"""An op of another dialect that implements the structured-op interface takes part like a tensordsl op.

The dialect ``ext`` below is defined here, outside the ``tdsl`` package, the
way a downstream project would: an element-wise ``ext.sin`` from
:class:`~tdsl.dialects.structured.UnaryOp` and a reduction ``ext.min`` from
:class:`~tdsl.dialects.structured.ReductionOp`, each a few lines.  A function
mixing them with tensordsl ops must round-trip through print and parse, fuse
with the tensordsl ops (``tdsl-fuse``), tile (``tdsl-tile``, at a budget small
enough that the reduction accumulates over tiles and the element-wise ops are
recomputed in a second pass), run in the interpreter at every stage, and emit
and run in the NumPy target, all equal to NumPy.
"""

from __future__ import annotations

import io
from typing import Any, ClassVar

import numpy as np
import pytest
from matches_numpy import assert_matches
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.ir import Dialect, Operation
from xdsl.irdl import irdl_op_definition
from xdsl.parser import Parser
from xdsl.printer import Printer

from tdsl.backend.numpy.target import emit_numpy, load_numpy
from tdsl.dialects.kernel import FusedOp, Kernel, TileOp
from tdsl.dialects.kernel_plan import plan_scratch
from tdsl.dialects.structured import ReductionOp, ScalarOpBuilder, UnaryOp
from tdsl.dialects.tensordsl import TensorDSL
from tdsl.interpreters.run import run_function
from tdsl.interpreters.scalar import reference_evaluate
from tdsl.pipeline import build_pipeline
from tdsl.transforms.fuse import fusion_report

Array = np.ndarray[Any, Any]


@irdl_op_definition
class SinOp(UnaryOp):
    """``sin(x)`` element-wise.

    ```mlir
    %1 = ext.sin %0 : tensor<4x8xf32>
    ```
    """

    name = "ext.sin"
    NUMPY_UFUNC: ClassVar[str | None] = "sin"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.SinOp


@irdl_op_definition
class MinOp(ReductionOp):
    """Minimum over ``axis`` (all axes when absent); reducing zero elements is an error.

    ```mlir
    %1 = ext.min %0 axis = 1 keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
    """

    name = "ext.min"
    FUNCTION: ClassVar[str] = "min"
    NUMPY_UFUNC: ClassVar[str] = "minimum"
    IDENTITY: ClassVar[float] = float("inf")
    COMBINE_OP: ClassVar[ScalarOpBuilder] = arith.MinimumfOp
    NEEDS_ELEMENTS: ClassVar[bool] = True


Ext = Dialect("ext", [SinOp, MinOp], [])

PROGRAM = """
func.func @main(%x: tensor<37x300xf32>, %y: tensor<300xf32>) -> (tensor<37xf32>, tensor<37x1xf32>, tensor<300xf32>, tensor<f32>) {
  %0 = tensordsl.relu %x : tensor<37x300xf32>
  %1 = ext.sin %0 : tensor<37x300xf32>
  %2 = tensordsl.mul %1, %y : (tensor<37x300xf32>, tensor<300xf32>) -> tensor<37x300xf32>
  %3 = ext.min %2 axis = 1 keepdims : tensor<37x300xf32> -> tensor<37x1xf32>
  %4 = tensordsl.sub %2, %3 : (tensor<37x300xf32>, tensor<37x1xf32>) -> tensor<37x300xf32>
  %5 = ext.sin %4 : tensor<37x300xf32>
  %6 = tensordsl.sum %5 axis = 1 : tensor<37x300xf32> -> tensor<37xf32>
  %7 = ext.min %1 axis = 0 : tensor<37x300xf32> -> tensor<300xf32>
  %8 = ext.min %x : tensor<37x300xf32> -> tensor<f32>
  func.return %6, %3, %7, %8 : tensor<37xf32>, tensor<37x1xf32>, tensor<300xf32>, tensor<f32>
}
"""


def reference(x: Array, y: Array) -> tuple[Array, ...]:
    s = np.sin(np.maximum(x, 0))
    m = s * y
    row_min = m.min(axis=1, keepdims=True)
    return np.sin(m - row_min).sum(axis=1), row_min, s.min(axis=0), np.asarray(x.min())


def context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, TensorDSL, Kernel, Ext):
        ctx.load_dialect(dialect)
    return ctx


def parse(text: str) -> ModuleOp:
    module = Parser(context(), text).parse_module()
    module.verify()
    return module


def generic(module: ModuleOp) -> str:
    stream = io.StringIO()
    Printer(stream=stream, print_generic_format=True).print_op(module)
    return stream.getvalue()


def assert_round_trips(module: ModuleOp) -> None:
    text = str(module)
    assert str(parse(text)) == text
    assert str(parse(generic(module))) == text


def compile_stages(budget: int) -> dict[str, ModuleOp]:
    """The program as parsed, after ``tdsl-fuse`` and after ``tdsl-tile``, run as
    ``tdsl-opt -p`` runs them."""
    stages = {"tensordsl": parse(PROGRAM)}
    for name, spec in (("fused", f"tdsl-fuse{{memory-budget={budget}}}"), ("tiled", "tdsl-tile")):
        module = stages[list(stages)[-1]].clone()
        build_pipeline(spec).apply(context(), module)
        module.verify()
        stages[name] = module
    return stages


def inputs() -> tuple[Array, Array]:
    rng = np.random.default_rng(11)
    return (
        rng.uniform(-2, 2, (37, 300)).astype(np.float32),
        rng.uniform(-2, 2, (300,)).astype(np.float32),
    )


def ext_ops(op: Operation) -> list[str]:
    return [o.name for o in op.walk() if o.name.startswith("ext.")]


@pytest.mark.parametrize("budget", [64, 1_000_000])
def test_foreign_ops_fuse_and_tile_with_tensordsl_ops(budget: int) -> None:
    stages = compile_stages(budget)
    fused = [op for op in stages["fused"].walk() if isinstance(op, FusedOp)]
    assert sum(len(ext_ops(g)) for g in fused) == 5, "every ext op is inside a group"
    assert any(
        ext_ops(g) and any(o.name.startswith("tensordsl.") for o in g.body.block.ops) for g in fused
    ), "an ext op shares a group with tensordsl ops"
    if budget == 1_000_000:  # all but the min of an input, which has no producer to join
        assert [ext_ops(g) for g in fused] == [
            ["ext.sin", "ext.min", "ext.sin", "ext.min"],
            ["ext.min"],
        ]
    tiles = [op for op in stages["tiled"].walk() if isinstance(op, TileOp)]
    assert sum(len(ext_ops(t)) for t in tiles) == 5
    # where no plan fits the budget, the plan of least memory runs: scratch within its need
    need = max(m.need for m in fusion_report(stages["tensordsl"], budget).memory)
    for t in tiles:
        assert t.scratch_buffers == plan_scratch(t.schedule()).buffers
        assert t.scratch_value <= max(budget, need)
    passes = [t.schedule().describe() for t in tiles if t.schedule().reduction_loops]
    if budget == 64:  # rows of 300 do not fit: ext.min accumulates, ext.sin runs again
        assert any("recomputing" in p and "ext.sin" in p for p in passes), passes
    for module in stages.values():
        assert_round_trips(module)


@pytest.mark.parametrize("budget", [64, 1_000_000])
def test_foreign_ops_interpret_at_every_stage(budget: int) -> None:
    x, y = inputs()
    want = reference(x, y)
    for stage, module in compile_stages(budget).items():
        got = run_function(module, "main", x, y)
        assert len(got) == len(want), stage
        for g, w in zip(got, want, strict=True):
            assert_matches(g, w)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("budget", [64, 1_000_000])
def test_foreign_ops_run_in_the_numpy_target(budget: int, threads: int) -> None:
    source = emit_numpy(compile_stages(budget)["tiled"], threads)
    assert "np.sin(" in source and "np.minimum.reduce(" in source
    x, y = inputs()
    got = load_numpy(source)["main"](x, y)
    for g, w in zip(got, reference(x, y), strict=True):
        assert_matches(g, w)


def test_scalar_bodies_compute_what_numpy_computes() -> None:
    # the arith/math loop bodies the native target lowers: sin per element, min folded
    x, _ = inputs()
    module = parse(PROGRAM)
    for op in module.walk():
        if not isinstance(op, SinOp | MinOp):
            continue
        (got,) = reference_evaluate(op, x)  # every ext op here reads a 37x300 f32 tensor
        want = np.sin(x) if isinstance(op, SinOp) else op.evaluate(x)[0]
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("budget", [64, 1_000_000])
def test_foreign_ops_run_in_the_native_target(budget: int, threads: int) -> None:
    # the loops lowering and the LLVM lowering read only the interface too
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    from tdsl.runtime.native import NativeProgram

    program = NativeProgram.from_tiled(compile_stages(budget)["tiled"], threads)
    x, y = inputs()
    got = program.functions["main"](x, y)
    for g, w in zip(got, reference(x, y), strict=True):
        assert_matches(g, w)
