"""The native loops run the passes of a plan that cuts reduction dims
(``tdsl/backend/llvm/loops_passes.py``): for every mix of row and column statistics and
scans,
budget and thread count, the result is NumPy's, the loops keep the plan's scratch
(no ``TdslLoopsBudgetWarning``), and the call allocates no more than it allows."""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from peak_memory import measure_peak, numpy_buffers
from round_trips import assert_round_trips

from tdsl.errors import TdslBudgetWarning, TdslIRError, TdslLoopsBudgetWarning
from tdsl.jit import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason

pytestmark = pytest.mark.skipif(
    native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
)


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


TERMS = {
    "softmax(a, axis={k})": lambda a, b, k: _softmax(a, k),
    "log_softmax(b, axis={k})": lambda a, b, k: _log_softmax(b, k),
    "a - mean(a, axis={k}, keepdims=True)": lambda a, b, k: a - a.mean(axis=k, keepdims=True),
    "a * var(b, axis={k}, keepdims=True)": lambda a, b, k: a * b.var(axis=k, keepdims=True),
    "max(a * b, axis={k}, keepdims=True) + a": lambda a, b, k: (a * b).max(k, keepdims=True) + a,
    "sqrt(sum(a * a, axis={k}, keepdims=True)) + b": (
        lambda a, b, k: np.sqrt((a * a).sum(axis=k, keepdims=True)) + b
    ),
    "cumsum(b, axis={k})": lambda a, b, k: np.cumsum(b, axis=k),
    "cumsum(exp(a), axis={k}) / sum(exp(a), axis={k}, keepdims=True)": (
        lambda a, b, k: np.cumsum(np.exp(a), axis=k) / np.exp(a).sum(axis=k, keepdims=True)
    ),
    "a * cumsum(a, axis={k}) - max(b, axis={k}, keepdims=True)": (
        lambda a, b, k: a * np.cumsum(a, axis=k) - b.max(axis=k, keepdims=True)
    ),
    # (a chain of 10 ops read by two loop nests: the loops keep it in scratch)
    "{c} - mean({c}, axis={k}, keepdims=True)": lambda a, b, k: (
        _chain(a) - _chain(a).mean(axis=k, keepdims=True)
    ),
}
"""Terms of a program (``{k}`` its axis, ``{c}`` :data:`CHAIN`) and what NumPy computes
for them."""

CHAIN = "tanh(tanh(tanh(tanh(tanh(a * 0.9 + 0.1) * 0.9 + 0.1) * 0.9 + 0.1) * 0.9 + 0.1) * 0.9)"


def _chain(a: np.ndarray) -> np.ndarray:
    for _ in range(4):
        a = np.tanh(a * np.float32(0.9) + np.float32(0.1))
    return np.tanh(a * np.float32(0.9))


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    terms=st.lists(
        st.tuples(st.sampled_from(sorted(TERMS)), st.sampled_from([0, 1])), min_size=2, max_size=3
    ),
    rows=st.sampled_from([1, 7, 33, 128]),
    cols=st.sampled_from([3, 40, 160]),
    budget=st.sampled_from([16, 50, 200, 1000, 5000]),
    threads=st.sampled_from([1, 2]),
    seed=st.integers(0, 2**32 - 1),
)
def test_mixed_row_and_column_statistics_match_numpy_within_the_plan(
    terms: list[tuple[str, int]], rows: int, cols: int, budget: int, threads: int, seed: int
) -> None:
    # (a and b first: the kernel takes its inputs in the order the source names them)
    source = "0.0 * a + 0.0 * b + " + " + ".join(t.format(k=k, c=CHAIN) for t, k in terms)
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal((rows, cols)).astype(np.float32) for _ in range(2))
    with np.errstate(all="ignore"):
        want = sum(TERMS[t](a, b, k) for t, k in terms)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", TdslBudgetWarning)  # (no fusion plan fits: said)
        warnings.simplefilter("always", TdslLoopsBudgetWarning)  # (a subclass of it)
        kernel = JITTensorKernel(memory_budget=budget, target="native", threads=threads).compile(
            source, shapes={"a": a.shape, "b": b.shape}, dtypes="f32"
        )
    announced = any(issubclass(w.category, TdslLoopsBudgetWarning) for w in caught)
    planned = kernel.ir["planned"]
    cut = [
        (int(t), int(e))
        for line in planned.splitlines()
        if "kernel.tile" in line
        for t, e in zip(
            re.findall(r"\d+", re.search(r" tiles \[([\d, ]+)\]", line).group(1)),  # type: ignore[union-attr]
            re.findall(r"\d+", re.search(r" space \[([\d, ]+)\]", line).group(1)),  # type: ignore[union-attr]
            strict=True,
        )
        if int(t) < int(e)
    ]
    event("the plan cuts a dim" if cut else "the plan cuts no dim")
    event("the loops store values" if re.search(r"stored \[\d", planned) else "none stored")
    # (the loops took the cut dims whole: 2 x 160 column statistics where the plan
    # records fewer, with a TdslLoopsBudgetWarning; they now run the plan's passes)
    assert not announced, [str(w.message) for w in caught]
    peak, got = measure_peak(kernel, a, b)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * max(1.0, np.abs(want).max()))
    need = max(m.need for m in kernel.fusion_report.memory)
    assert peak - got.nbytes <= max(budget, need) * 4 + numpy_buffers(threads, 4)


@pytest.mark.parametrize(
    ("shape", "budget"), [((2, 3, 8), 8), ((16, 5, 40), 32), ((16, 5, 40), 64)]
)
def test_no_value_is_staged_in_an_output_slice_by_a_step(
    shape: tuple[int, int, int], budget: int
) -> None:
    """``a - sum(a, axis=(1, 2)) + softmax(a, axis=1)``: the plan cuts d2; the loops
    staged softmax's ``exp`` in the output slice, in a sweep a step ran for all of d2
    at once, reading the max's accumulator of one tile out of its bounds (18 of 48
    elements wrong; found by fuzzing the passes).  In passes no value is staged so."""
    rows, mid, cols = shape
    source = (
        f"def main(a: f32[{rows}, {mid}, {cols}]):\n"
        "    return a - sum(a, axis=(1, 2), keepdims=True) + softmax(a, axis=1)\n"
    )
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    want = a - a.sum(axis=(1, 2), keepdims=True) + e / e.sum(axis=1, keepdims=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)  # (no fusion plan fits)
        warnings.simplefilter("error", TdslLoopsBudgetWarning)
        kernel = JITTensorKernel(memory_budget=budget, target="native").compile(source)
    assert re.search(r"loops tiles \[\d+, \d+, \d+\]", kernel.ir["planned"])
    for _ in range(3):  # (scratch read out of bounds changed from call to call)
        np.testing.assert_allclose(kernel(a), want, rtol=1e-4, atol=1e-4)


def _np_softmax_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _softmax(a, 1) @ b


MATMUL_PASSES = [
    # (a softmax feeding a matmul: a plan that cuts the rows read back as flash attention,
    # so the loops took the rows whole, 13,185 elements: only a cut of its keys does now)
    (
        "sum(a @ b, axis=0, keepdims=True) * (softmax(a) @ b)",
        {"a": (128, 100), "b": (100, 64)},
        1024,
        lambda x: (x["a"] @ x["b"]).sum(axis=0, keepdims=True) * _np_softmax_matmul(x["a"], x["b"]),
    ),
    # (`a @ e`, which BLAS writes whole into the output before the loops: no passes, all
    # 128 rows of relu(a) kept, 257 elements; the steps read it from the output now)
    (
        "cumsum(a @ e, axis=0) + (relu(a) @ c)",
        {"a": (128, 160), "c": (160, 64), "e": (160, 64)},
        256,
        lambda x: np.cumsum(x["a"] @ x["e"], axis=0) + np.maximum(x["a"], 0) @ x["c"],
    ),
    # (the loops first cut the contraction, the softmax's keys, and planned again without
    # the cut, and without passes either: 13,185 elements; the passes stay now)
    (
        "cumsum(tanh(a) @ e, axis=0) + (softmax(a) @ c)",
        {"a": (128, 100), "c": (100, 32), "e": (100, 32)},
        1024,
        lambda x: np.cumsum(np.tanh(x["a"]) @ x["e"], axis=0) + _np_softmax_matmul(x["a"], x["c"]),
    ),
]


def _run_within_the_plan(
    text: str, shapes: dict[str, tuple[int, int]], budget: int, numpy: object, seed: int
) -> Any:
    """Compile ``text`` natively under ``budget`` (a loops budget warning fails), check
    its result against ``numpy`` of the f64 inputs and its call's peak memory against
    the plan's scratch; the kernel."""
    rng = np.random.default_rng(seed)
    x = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    want = numpy({n: v.astype(np.float64) for n, v in x.items()})  # type: ignore[operator]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)
        warnings.simplefilter("error", TdslLoopsBudgetWarning)
        kernel = JITTensorKernel(memory_budget=budget, target="native", threads=1).compile(
            text, shapes=shapes, dtypes="f32"
        )
    # (the kernel's inputs, in the order the text names them)
    names = sorted(x, key=lambda n: re.search(rf"\b{n}\b", text).start())  # type: ignore[union-attr]
    peak, got = measure_peak(kernel, *(x[n] for n in names))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    need = max(m.need for m in kernel.fusion_report.memory)
    assert peak - got.nbytes <= max(budget, need) * 4 + numpy_buffers(1, 4)
    return kernel


@pytest.mark.parametrize(("text", "shapes", "budget", "numpy"), MATMUL_PASSES)
def test_matmuls_run_in_the_plans_passes_within_its_scratch(
    text: str, shapes: dict[str, tuple[int, int]], budget: int, numpy: object
) -> None:
    """The plan cuts the rows a column sum or scan runs along; the loops run its passes
    with the matmuls in them (BLAS a tile at a time, or whole into the output first),
    where they took the rows whole and broke the budget."""
    planned = _run_within_the_plan(text, shapes, budget, numpy, 1).ir["planned"]
    tiles = re.search(r"loops tiles \[(\d+),", planned)
    assert tiles is not None and int(tiles.group(1)) < 128  # (the rows, in the plan's tiles)


def _np_max_of_columns(x: np.ndarray) -> np.ndarray:
    return x.max(axis=1, keepdims=True)


def _np_layernorm(x: np.ndarray) -> np.ndarray:
    return (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)


SUMMED_PASSES = [
    # (the softmax's rows, stored by the stage before the pass over the scan's columns,
    # were dropped when that stage ended: the pass's matmul could not read them, and the
    # loops took the columns whole, 227 elements against the plan's 162)
    (
        "cumsum(a @ b, axis=1) + (softmax(a) @ e)",
        {"a": (128, 160), "b": (160, 64), "e": (160, 64)},
        64,
        2,
        lambda x: np.cumsum(x["a"] @ x["b"], axis=1) + _np_softmax_matmul(x["a"], x["e"]),
    ),
    # (the plan cuts the hidden dim: a pass for the row maximum of `a @ e`, then one for
    # `tanh(a) @ e`, less that maximum, times `d`, BLAS adding each tile's product; the
    # loops refused a matmul along a cut dim in a pass, 357 elements against 256)
    (
        "((tanh(a) @ e) - max(a @ e, axis=1, keepdims=True)) @ d",
        {"a": (16, 100), "e": (100, 128), "d": (128, 16)},
        256,
        3,
        lambda x: (np.tanh(x["a"]) @ x["e"] - _np_max_of_columns(x["a"] @ x["e"])) @ x["d"],
    ),
    (
        "((layernorm(a) @ b) - max(a @ b, axis=1, keepdims=True)) @ d",
        {"a": (64, 100), "b": (100, 128), "d": (128, 16)},
        64,
        3,
        lambda x: (_np_layernorm(x["a"]) @ x["b"] - _np_max_of_columns(x["a"] @ x["b"])) @ x["d"],
    ),
    # (three matmuls on one contraction, one on the input `a` that BLAS writes whole into
    # the output first: the plan cuts the contraction into tiles of 1, and the loops took
    # it whole, 304 elements against 256)
    (
        "(layernorm(a) @ c) * (exp(a / 4) @ e) + (a @ c)",
        {"a": (128, 300), "c": (300, 64), "e": (300, 64)},
        256,
        2,
        lambda x: (
            (_np_layernorm(x["a"]) @ x["c"]) * (np.exp(x["a"] / 4) @ x["e"]) + x["a"] @ x["c"]
        ),
    ),
    # (flash attention's key tiles inside a pass over the scan's rows, the scan's tile
    # stored for the matmul: the loops refused both in passes, and took the rows whole,
    # 20,736 elements against 4,096)
    (
        "cumsum(softmax(a) @ c, axis=0) @ d",
        {"a": (64, 300), "c": (300, 64), "d": (64, 16)},
        4096,
        0,
        lambda x: np.cumsum(_np_softmax_matmul(x["a"], x["c"]), axis=0) @ x["d"],
    ),
]


@pytest.mark.parametrize(("text", "shapes", "budget", "cut", "numpy"), SUMMED_PASSES)
def test_the_plans_passes_keep_stored_rows_and_add_up_a_cut_contraction(
    text: str, shapes: dict[str, tuple[int, int]], budget: int, cut: int, numpy: object
) -> None:
    """Steps of the plan's passes keep a stored value that runs along no cut dim for the
    later steps that read it, a pass over a matmul's contraction has BLAS add each
    tile's product into its result, and a pass runs flash attention's key tiles and
    stores a scan's tile for a matmul: the loops fit the plan's scratch, cutting dim
    ``cut`` as it does, where they took that dim whole and warned.  A plan whose passes
    cut a matmul's contraction records ``summed``, and round-trips."""
    kernel = _run_within_the_plan(text, shapes, budget, numpy, 2)
    planned = kernel.ir["planned"]
    # (each cut dim is a matmul's contraction, but the scan's columns)
    assert ("summed" in planned) == ("cumsum" not in text)
    assert_round_trips(kernel.ir.module("planned"))
    space = re.search(r" space \[([\d, ]+)\]", planned)
    loops = re.search(r"loops tiles \[([\d, ]+)\]", planned)
    assert space is not None and loops is not None
    extent = int(space.group(1).split(", ")[cut])
    assert int(loops.group(1).split(", ")[cut]) < extent  # (cut, as the plan cuts it)


@pytest.mark.parametrize(
    ("text", "shapes", "budget", "numpy"),
    [
        (
            "(cumsum(a, axis=1) / 8 @ relu(b)) @ d",
            {"a": (16, 50), "b": (50, 16), "d": (16, 8)},
            64,
            lambda x: (np.cumsum(x["a"], axis=1) / 8 @ np.maximum(x["b"], 0)) @ x["d"],
        ),
        (
            "(exp(a / 4) @ relu(b)) @ d",
            {"a": (16, 50), "b": (50, 64), "d": (64, 1)},
            1024,
            lambda x: (np.exp(x["a"] / 4) @ np.maximum(x["b"], 0)) @ x["d"],
        ),
    ],
)
def test_the_plans_passes_add_up_the_cut_contraction_of_a_matmul_in_loops(
    text: str, shapes: dict[str, tuple[int, int]], budget: int, numpy: object
) -> None:
    """A matmul the loops compute (its right operand computed in the group) whose
    contraction the plan cuts adds each tile's products in a pass, as a reduction's
    accumulator runs on, and the plan records ``summed``: the loops took the contraction
    whole and warned (found by fuzzing).  Read back without ``summed``, the plan is
    refused with a located error that names it."""
    kernel = _run_within_the_plan(text, shapes, budget, numpy, 3)
    planned = kernel.ir["planned"]
    assert re.search(r"blas \[\] summed", planned)
    assert_round_trips(kernel.ir.module("planned"))
    with pytest.raises(
        TdslIRError, match=r"run whole here .*where the plan records `summed`"
    ) as err:
        JITTensorKernel(target="native").compile_ir(planned.replace(" summed", ""))
    assert err.value.location is not None
