"""Long programs compile and compute NumPy's values (issue 17): no pass recurses as deep
as the program is long.  The programs are compiled under a stack of 150 frames beyond
the test's (:mod:`shallow_stack`), so that a recursion per op would fail on programs of
1,500 and 500 ops already; ``benchmarks/deep_programs.py`` compiles and times the
10,000-op (numpy) and 2,000-op (native) programs of the same kind (nothing is timed
here)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from deep_program_script import deep_programs
from shallow_stack import shallow_stack

import tdsl


@pytest.fixture(autouse=True)
def jit_target() -> str:
    """Each test names its target: they run once, not once per default target."""
    return "numpy"


SHAPE = (64, 32)


def _check(target: str, ops: int) -> Any:
    text, reference, count = deep_programs().program(ops, SHAPE)
    assert count >= ops
    with shallow_stack():
        kernel = tdsl.JITTensorKernel(target=target, threads=1).compile(text)
        # printing every stage, the fusion report and the plan's graph recurse no deeper
        assert all(kernel.ir[stage] for stage in kernel.ir)
        assert kernel.fusion_report.groups
        assert kernel.to_dot().startswith("digraph")
    # the program is as long as it says: its ops (literals aside) are all in the IR
    tensordsl = kernel.ir["tensordsl"]
    computed = re.findall(r"= tensordsl\.(\w+)", tensordsl)
    assert sum(1 for name in computed if name != "constant") == count
    assert {"mean", "sum", "tanh", "where", "greater", "maximum"} <= set(computed)
    rng = np.random.default_rng(17)
    x, z = rng.standard_normal((2, *SHAPE))
    y = rng.standard_normal(SHAPE[1])
    want = reference(x, y, z)
    assert np.abs(want).max() > 0.1  # the values stay of the inputs' order, not 0
    np.testing.assert_allclose(kernel(x=x, y=y, z=z), want, rtol=1e-9, atol=1e-12)
    return kernel


def test_long_programs_on_the_numpy_target() -> None:
    kernel = _check("numpy", 1_500)
    assert kernel.target == "numpy"


def test_long_programs_natively() -> None:
    from tdsl.runtime.compile import native_unavailable_reason

    reason = native_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    kernel = _check("native", 500)
    assert kernel.target == "native"
    assert kernel.ir["llvm"]


@pytest.mark.parametrize(("target", "operands"), [("numpy", 1500), ("native", 60)])
def test_a_join_of_many_operands_asks_for_its_offsets_once_per_pass(
    target: str, operands: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``concatenate`` of ``n`` operands compiles in time linear in ``n``: the passes ask
    for its operands' offsets once, not once per operand (which added up ``n**2``
    extents: 3,000 operands did not compile in 30 s; found by a fuzzer), and tell a
    value read only by the join without listing its ``n`` uses."""
    from tdsl.dialects.tensordsl import ConcatenateOp

    calls: list[int] = []
    offsets = ConcatenateOp.offsets

    def counted(self: ConcatenateOp) -> tuple[int, ...]:
        calls.append(1)
        return offsets(self)

    monkeypatch.setattr(ConcatenateOp, "offsets", counted)
    text = "concatenate((" + ", ".join(["A", "A", "exp(A)"] * (operands // 3)) + "), axis=0)"
    kernel = tdsl.JITTensorKernel(target=target, threads=1).compile(text, {"A": (2, 3)}, "float32")
    assert len(calls) <= 4
    a = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    want = np.concatenate([a, a, np.exp(a)] * (operands // 3))
    np.testing.assert_allclose(kernel(a), want, rtol=1e-6)  # (native exp: within 1 ulp)
