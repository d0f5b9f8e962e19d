"""Upstream MLIR's parser and verifiers accept the loops and llvm stages.

jaxlib ships MLIR's C++ parser with the ``func``, ``arith``, ``math``,
``scf``, ``memref``, ``cf`` and ``llvm`` dialects registered.  Where it is
installed (``pip install jax``: an optional test dependency), every program
below is compiled to the native target, and both stages, in custom and in
generic form, are parsed and verified by real MLIR: the loops stage is
ordinary upstream IR, not IR only xDSL reads, but for the three scalar ops of
``tdslmath`` (``remf``, ``hypot``, ``nextafter``: no op of xDSL 0.75's
``arith`` or ``math``), which MLIR parses as unregistered ops.  The llvm
stage is all upstream.  Without jaxlib the test skips.
"""

from __future__ import annotations

from typing import Any

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer

from tdsl.jit import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason

mlir = pytest.importorskip("jax._src.interpreters.mlir", reason="jaxlib (MLIR) not installed")
ir: Any = pytest.importorskip("jax._src.lib.mlir").ir

pytestmark = pytest.mark.skipif(
    native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
)

PROGRAMS: list[tuple[str, dict[str, tuple[int, ...]], str, int]] = [
    ("relu(A) + B * C - D", dict.fromkeys("ABCD", (37, 13)), "f32", 1_000_000),
    ("softmax(X) + log_softmax(X, axis=0)", {"X": (37, 13)}, "f64", 64),
    ("layernorm(X) * 2 - where(X > 0, X, -X) ** 2", {"X": (9, 17)}, "f32", 64),
    (
        "sum(exp(A) * B, axis=1) + prod(A, axis=1) - min(B, axis=1)",
        dict.fromkeys("AB", (33, 7)),
        "f64",
        64,
    ),
    (
        "mean(sin(A), axis=0, keepdims=True) + max(arctan2(A, B))",
        dict.fromkeys("AB", (5, 40)),
        "f32",
        4096,
    ),
    ("relu(x @ w + b)", {"x": (64, 32), "w": (32, 16), "b": (16,)}, "f32", 4096),
    ("transpose(tanh(A)) % 3 + hypot(B, B)", {"A": (6, 4), "B": (4, 6)}, "f16", 64),
    (
        "copysign(A, B) * (A != B) + sigmoid(floor(A))",
        dict.fromkeys("AB", (8, 8)),
        "f64",
        1_000_000,
    ),
]


def generic(module: ModuleOp) -> str:
    from io import StringIO

    out = StringIO()
    Printer(stream=out, print_generic_format=True).print_op(module)
    return out.getvalue()


@pytest.mark.parametrize(
    ("expr", "shapes", "dtype", "budget"), PROGRAMS, ids=[p[0] for p in PROGRAMS]
)
def test_loops_and_llvm_stages_verify_in_upstream_mlir(
    expr: str, shapes: dict[str, tuple[int, ...]], dtype: str, budget: int
) -> None:
    kernel = JITTensorKernel(memory_budget=budget, threads=2, target="native").compile(
        expr, shapes, dtype
    )
    assert kernel.target == "native"
    for stage in ("loops", "llvm"):
        module = kernel.ir.module(stage)
        ours = {op.name for op in module.walk() if op.name.startswith("tdslmath.")}
        assert stage == "loops" or not ours
        for form, text in (("custom", kernel.ir[stage]), ("generic", generic(module))):
            if ours and form == "custom":
                continue  # MLIR reads an unregistered op only in generic form
            with mlir.make_ir_context() as ctx:
                ctx.allow_unregistered_dialects = bool(ours)
                parsed = ir.Module.parse(text)
                assert parsed.operation.verify(), f"{stage} stage, {form} form"
