"""A long loop body is outlined in parts (tdsl.backend.llvm.loops_outline): the parts are
functions called in order from where their loop nests were, and the kernel computes what
the whole body computed, bit for bit.  The thresholds are lowered here so that a program
of some dozens of ops is long; ``benchmarks/deep_programs.py`` compiles the 2,000-op one."""

from __future__ import annotations

import re
from collections import OrderedDict

import numpy as np
import pytest
from deep_program_script import deep_programs

import tdsl
from tdsl.backend.llvm import loops_outline
from tdsl.jit import stages
from tdsl.runtime.compile import native_unavailable_reason

pytestmark = pytest.mark.skipif(
    native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
)


@pytest.fixture(autouse=True)
def jit_target() -> str:
    return "native"


@pytest.mark.parametrize(("shape", "budget"), [((24, 20), None), ((40, 36), 256)])
def test_a_long_body_runs_in_parts_and_computes_the_same(
    shape: tuple[int, int], budget: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, reference, _ = deep_programs().program(60, shape)
    rng = np.random.default_rng(5)
    x, z = rng.standard_normal((2, *shape))
    y = rng.standard_normal(shape[1])

    def compile_() -> tdsl.CompiledKernel:
        jit = tdsl.JITTensorKernel(target="native", threads=1, memory_budget=budget)
        return jit.compile(text)

    whole = compile_()
    assert "_part0" not in whole.ir["loops"]
    monkeypatch.setattr(loops_outline, "OUTLINE_OPS", 200)
    monkeypatch.setattr(loops_outline, "PART_OPS", 60)
    monkeypatch.setattr(stages, "_LOWERED", OrderedDict())  # (the whole body's lowering)
    parts = compile_()
    loops = parts.ir["loops"]
    defined = re.findall(r"func\.func @(main_g\d+_part\d+)\(", loops)
    called = re.findall(r"func\.call @(main_g\d+_part\d+)\(", loops)
    assert len(defined) >= 3, defined
    assert called == defined  # each part once, in order, from its group's function
    assert loops.count('passthrough = ["noinline"]') >= len(defined) + 1
    want = reference(x, y, z)
    got = parts(x=x, y=y, z=z)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(got, whole(x=x, y=y, z=z))


def test_a_short_body_stays_whole() -> None:
    kernel = tdsl.JITTensorKernel(target="native").compile(
        "softmax(A) * 2 + 1", {"A": (16, 16)}, "float32"
    )
    assert "_part" not in kernel.ir["loops"]


def test_each_constant_is_made_once_per_function_and_signed_zeros_stay_apart() -> None:
    from xdsl.context import Context
    from xdsl.dialects import arith, builtin, func, memref, scf
    from xdsl.parser import Parser

    text = """
    func.func @f(%m: memref<4xf32>) {
      %a = arith.constant 0 : index
      %b = arith.constant 4 : index
      %c = arith.constant 1 : index
      scf.for %i = %a to %b step %c {
        %z = arith.constant 0.000000e+00 : f32
        %n = arith.constant -0.000000e+00 : f32
        %one = arith.constant 1 : index
        %j = arith.addi %i, %one : index
        %s = arith.addf %z, %n : f32
        memref.store %s, %m[%i] : memref<4xf32>
        %z2 = arith.constant 0.000000e+00 : f32
        memref.store %z2, %m[%j] : memref<4xf32>
      }
      func.return
    }
    """
    ctx = Context()
    for dialect in (arith.Arith, builtin.Builtin, func.Func, memref.MemRef, scf.Scf):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text).parse_module()
    loops_outline.unique_constants(module)
    module.verify()
    fn = next(iter(module.ops))
    assert isinstance(fn, func.FuncOp)
    top = [op for op in fn.body.block.ops if isinstance(op, arith.ConstantOp)]
    nested = [op for op in fn.walk() if isinstance(op, arith.ConstantOp) and op not in top]
    assert not nested
    shown = sorted(str(op.value) for op in top)
    assert shown == sorted(
        ["0 : index", "4 : index", "1 : index", "0.000000e+00 : f32", "-0.000000e+00 : f32"]
    )
    add = next(op for op in fn.walk() if isinstance(op, arith.AddfOp))
    assert add.lhs is not add.rhs  # 0.0 + -0.0 still adds two constants
