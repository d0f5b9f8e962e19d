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
