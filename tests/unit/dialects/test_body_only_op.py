"""A new element-wise op defined outside ``tdsl/`` by its class and scalar body alone.

``ext.softsign`` (``x / (1 + |x|)``) names no NumPy ufunc and brings no
evaluation, NumPy code or loops of its own: the interpreter, the numpy
target and the native target all derive what it computes from its
``scalar_body``.  It fuses with tensordsl ops and tiles, and each path is
checked against a float64 reference written here, not against another
derived path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import irdl_op_definition
from xdsl.parser import Parser

from tdsl.backend.numpy.target import emit_numpy, load_numpy
from tdsl.dialects.kernel import FusedOp, Kernel
from tdsl.dialects.structured import UnaryOp, scalar_constant
from tdsl.dialects.tensordsl import TensorDSL
from tdsl.interpreters.run import run_function
from tdsl.pipeline import build_pipeline

Array = np.ndarray[Any, Any]


@irdl_op_definition
class SoftsignOp(UnaryOp):
    """``x / (1 + |x|)`` element-wise.

    ```mlir
    %1 = ext.softsign %0 : tensor<4x8xf32>
    ```
    """

    name = "ext.softsign"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        (x,) = args
        one = scalar_constant(b, 1.0, x.type)
        den = b.insert(arith.AddfOp(one, b.insert(xmath.AbsFOp(x)).result)).result
        return (b.insert(arith.DivfOp(x, den)).result,)


Ext = Dialect("ext", [SoftsignOp], [])


def program(dtype: str) -> str:
    t = f"tensor<37x300x{dtype}>"
    return f"""
func.func @main(%x: {t}, %y: {t}) -> {t} {{
  %0 = tensordsl.exp %x : {t}
  %1 = ext.softsign %0 : {t}
  %2 = tensordsl.sub %1, %y : ({t}, {t}) -> {t}
  %3 = ext.softsign %2 : {t}
  func.return %3 : {t}
}}
"""


def reference(x: Array, y: Array) -> Array:
    """In float64, rounded once to the inputs' dtype."""
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    s = np.exp(x64) / (1 + np.abs(np.exp(x64)))
    d = s - y64
    return (d / (1 + np.abs(d))).astype(x.dtype)


def context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, TensorDSL, Kernel, Ext):
        ctx.load_dialect(dialect)
    return ctx


def stages(dtype: str, budget: int) -> dict[str, Any]:
    module = Parser(context(), program(dtype)).parse_module()
    module.verify()
    out = {"tensordsl": module}
    for name, spec in (("fused", f"tdsl-fuse{{memory-budget={budget}}}"), ("tiled", "tdsl-tile")):
        module = module.clone()
        build_pipeline(spec).apply(context(), module)
        module.verify()
        out[name] = module
    return out


def inputs(dtype: str) -> tuple[Array, Array]:
    rng = np.random.default_rng(3)
    return (
        rng.uniform(-3, 3, (37, 300)).astype(dtype),
        rng.uniform(-1, 1, (37, 300)).astype(dtype),
    )


TOLERANCE = {"float16": 2 * 2.0**-11, "float32": 2 * 2.0**-24, "float64": 2 * 2.0**-53}
"""Two ulp of the largest results (in [0.5, 1)) of each dtype, absolute."""

DTYPES = [("f16", "float16"), ("f32", "float32"), ("f64", "float64")]


def check(out: Array | tuple[Array, ...], x: Array, y: Array) -> None:
    got = out[0] if isinstance(out, tuple) else out  # a function of one result returns it
    want = reference(x, y)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE[str(want.dtype)])


@pytest.mark.parametrize("budget", [64, 1_000_000])
@pytest.mark.parametrize(("short", "dtype"), DTYPES)
def test_a_body_only_op_fuses_with_tensordsl_ops(short: str, dtype: str, budget: int) -> None:
    fused = [op for op in stages(short, budget)["fused"].walk() if isinstance(op, FusedOp)]
    assert len(fused) == 1, "exp, both softsigns and the sub are one group"


@pytest.mark.parametrize("budget", [64, 1_000_000])
@pytest.mark.parametrize(("short", "dtype"), DTYPES)
def test_a_body_only_op_runs_on_the_interpreter(short: str, dtype: str, budget: int) -> None:
    x, y = inputs(dtype)
    for module in stages(short, budget).values():
        check(tuple(run_function(module, "main", x, y)), x, y)


@pytest.mark.parametrize("budget", [64, 1_000_000])
@pytest.mark.parametrize(("short", "dtype"), DTYPES)
def test_a_body_only_op_runs_on_the_numpy_target(short: str, dtype: str, budget: int) -> None:
    x, y = inputs(dtype)
    source = emit_numpy(stages(short, budget)["tiled"], 1)
    check(load_numpy(source)["main"](x, y), x, y)


@pytest.mark.parametrize("budget", [64, 1_000_000])
@pytest.mark.parametrize(("short", "dtype"), DTYPES)
def test_a_body_only_op_runs_on_the_native_target(short: str, dtype: str, budget: int) -> None:
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    from tdsl.runtime.native import NativeProgram

    x, y = inputs(dtype)
    native = NativeProgram.from_tiled(stages(short, budget)["tiled"], 1)
    check(native.functions["main"](x, y), x, y)
