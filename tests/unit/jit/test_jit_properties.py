"""Random programs through the JIT, on both targets, equal NumPy.

The programs are those of ``tests/unit/random_expressions.py`` (NumPy's value
of each computed from its own expression tree), over f16, f32 and f64 inputs
mixed in one expression: NumPy's promotion puts casts inside groups, where an f32
value meets an f64 output (two native-target bugs hid there, found only by the
Dask tests until this test).  Budgets 16, 4096 and 1e6 group and tile the ops
differently; each kernel runs with 1 and 2 threads.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from random_expressions import Bin, Call, Case, Input, Neg, cases, check, random_inputs

from tdsl import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason

# the tests name their targets (JITS): the folder's default target (``jit_target``)
# takes one value here, not both, whose two runs were the same (the same examples
# under CI=1)
pytestmark = [
    pytest.mark.parametrize("jit_target", ["numpy"], indirect=True),
    # (strided inputs get their variants however small: the views run in variants)
    pytest.mark.usefixtures("variants_at_any_size"),
]

TARGETS = ("numpy",) if native_unavailable_reason() is not None else ("numpy", "native")
JITS = {
    (budget, target, threads): JITTensorKernel(memory_budget=budget, threads=threads, target=target)
    for budget in (16, 4096, 1_000_000)
    for target in TARGETS
    for threads in (1, 2)
}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=cases(dtypes=("f16", "f32", "f64"), max_dim=5),
    jit=st.sampled_from(sorted(JITS)),
    seed=st.integers(0, 2**16),
    fortran=st.integers(0, 2**10),
)
def test_random_programs_equal_numpy(
    case: Case, jit: tuple[int, str, int], seed: int, fortran: int
) -> None:
    note(f"{case.text}  shapes={case.shapes} dtypes={case.dtypes}")
    arrays = random_inputs(case, seed)
    # some inputs of two or more dims come transposed in memory (column-major): the
    # native target runs a variant compiled for their strides
    for k, name in enumerate(case.order):
        if arrays[name].ndim >= 2 and fortran >> (k % 10) & 1:
            arrays[name] = np.asfortranarray(arrays[name])
    kernel = JITS[jit].compile(case.text, case.shapes, case.dtypes)
    assert kernel.target == jit[1]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log of a value NumPy also logs
        got = kernel(**arrays)
    check(case, arrays, got)


FOUND_BY_DASK = [
    Case(
        "x1 + softmax(x0)",
        Bin("+", Input("x1"), Call("softmax", (Input("x0"),))),
        ["x1", "x0"],
        {"x0": (2, 1), "x1": ()},
        {"x0": "f32", "x1": "f64"},
    ),
    Case(
        "matmul(x0, -relu(matmul(x1, x2)))",
        Call(
            "matmul",
            (Input("x0"), Neg(Call("relu", (Call("matmul", (Input("x1"), Input("x2"))),)))),
        ),
        ["x0", "x1", "x2"],
        {"x0": (1, 1), "x1": (1, 2), "x2": (2, 1)},
        {"x0": "f64", "x1": "f32", "x2": "f32"},
    ),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("budget", [16, 1_000_000])
@pytest.mark.parametrize("case", FOUND_BY_DASK, ids=lambda c: c.text)
def test_mixed_dtype_programs_found_by_dask(case: Case, budget: int, target: str) -> None:
    """Two programs CI's Dask property test found wrong on the native target: an f32
    value staged, or written by BLAS, in an f64 output."""
    arrays = random_inputs(case, 0)
    jit = JITTensorKernel(memory_budget=budget, threads=1, target=target)
    check(case, arrays, jit(case.text, **arrays))
