"""The cost model ``target="auto"`` chooses by: its counts, and the choice following its
predictions (the coefficients themselves are fitted by ``benchmarks/auto_cost.py``)."""

from __future__ import annotations

import re
import warnings
from typing import Any

import pytest

from tdsl.errors import TdslBudgetWarning
from tdsl.jit import JITTensorKernel, cost_model
from tdsl.jit.cost_model import (
    FREE_OPS,
    HEAVY_COST,
    HEAVY_OPS,
    NUMPY_CALLS,
    Features,
    features,
    predict,
)


@pytest.fixture(autouse=True)
def jit_target() -> str:
    """These tests pick their targets themselves."""
    return "numpy"


def tiled(source: str, shapes: dict[str, tuple[int, ...]], **options: Any) -> Any:
    return (
        JITTensorKernel(target="numpy", **options).compile(source, shapes, "f32").ir.module("tiled")
    )


def test_counts_of_a_program_worked_out_by_hand() -> None:
    # one group, one tile: exp (heavy), mul by a constant (free), the matmul's
    # multiply-adds, a row sum (along the last axis) and a column mean (across)
    module = tiled(
        "sum(exp(A @ W) * 2, axis=1, keepdims=True) + mean(A, axis=0)",
        {"A": (64, 32), "W": (32, 32)},
    )
    f = features(module, "native")
    # ops: matmul (64x32), exp (64x32), mul (64x32), sum (64x1), mean (32), add (64x32)
    assert f == Features(
        calls=3,
        reductions=2,
        products=1,
        work=3 * 64 * 32 + 64 + 32 + 64 * 32,
        heavy=64 * 32 * HEAVY_COST["native"].get("tensordsl.exp", 1.0),
        flops=64 * 32 * 32,
        across=64 * 32,
    )
    # the numpy target's mean is a sum and a division: two calls over its 32 elements
    g = features(module, "numpy")
    assert (g.calls, g.reductions, g.products) == (4, 2, 1)
    assert g.work == f.work + 32


def test_tiles_multiply_the_numpy_targets_calls() -> None:
    whole = features(tiled("exp(A) + B", {"A": (64, 64), "B": (64, 64)}), "numpy")
    tiles = features(
        tiled("exp(A) + B", {"A": (64, 64), "B": (64, 64)}, tile_sizes=[16, 64]), "numpy"
    )
    assert whole.calls == 2 and tiles.calls == 2 * 4
    assert whole.work == tiles.work == 2 * 64 * 64


def test_the_numpy_target_counts_erf_as_the_numpy_calls_it_makes() -> None:
    module = tiled("erf(A)", {"A": (8, 8)})
    calls, reductions = NUMPY_CALLS["tensordsl.erf"]
    assert (features(module, "numpy").calls, features(module, "numpy").reductions) == (101, 0)
    assert features(module, "numpy").work == (calls + reductions) * 64
    assert features(module, "native") == Features(
        calls=1,
        reductions=0,
        products=0,
        work=64,
        heavy=64 * HEAVY_COST["native"].get("tensordsl.erf", 1.0),
        flops=0,
        across=0,
    )


# each op the numpy target computes with several NumPy calls, as the language writes it
SEVERAL_CALLS = {
    "tensordsl.softmax": "softmax(A)",
    "tensordsl.log_softmax": "log_softmax(A)",
    "tensordsl.layernorm": "layernorm(A)",
    "tensordsl.mean": "mean(A, axis=1)",
    "tensordsl.sigmoid": "sigmoid(A)",
    "tensordsl.clip": "clip(A, 0.25, 0.75)",
    "tensordsl.where": "where(A, B, B)",
}


@pytest.mark.parametrize("op", sorted(SEVERAL_CALLS))
def test_the_numpy_targets_hook_counts_the_calls_its_code_makes(op: str) -> None:
    # the calls in the generated code of the op alone: a reduce, einsum or accumulate is
    # a reduction, any other NumPy or helper call an element-wise one
    source = SEVERAL_CALLS[op]
    names = sorted(set(re.findall(r"\b[AB]\b", source)))
    types = {n: "bool" if n == "A" and op == "tensordsl.where" else "f32" for n in names}
    kernel = JITTensorKernel(target="numpy").compile(source, dict.fromkeys(names, (8, 16)), types)
    tiled = kernel.ir.module("tiled").walk()
    ops = [o.name for o in tiled if o.name.startswith("tensordsl.") and o.name not in FREE_OPS]
    assert ops == [op]
    main = kernel.source.split("def main")[1]
    lines = [x.strip() for x in main.splitlines()]
    calls = [x for x in lines if re.match(r"(np\.\w|tdsl_)", x) and not x.startswith("np.empty")]
    reductions = [x for x in calls if re.search(r"\.reduce\(|\.accumulate\(|np\.einsum\(", x)]
    assert NUMPY_CALLS[op] == (len(calls) - len(reductions), len(reductions)), calls


def test_each_target_weighs_its_heavy_functions_against_its_exp() -> None:
    for target in ("numpy", "native"):
        assert set(HEAVY_COST[target]) <= HEAVY_OPS
        assert HEAVY_COST[target]["tensordsl.exp"] == 1.0
        assert all(w >= 0 for w in HEAVY_COST[target].values())
    # the numpy target's erf counts as its 101 calls, not again as heavy elements
    assert HEAVY_COST["numpy"]["tensordsl.erf"] == 0.0


def test_predictions_are_the_fitted_linear_model() -> None:
    f = Features(calls=3, reductions=2, products=1, work=1000, heavy=10, flops=50, across=7)
    c = cost_model.COEFFICIENTS["native"]
    want = (
        c["overhead"]
        + 3 * c["calls"]
        + 2 * c["reductions"]
        + 1 * c["products"]
        + 1000 * c["work"]
        + 10 * c["heavy"]
        + 50 * c["flops"]
        + 7 * c["across"]
    )
    assert predict(f, "native") == pytest.approx(want)


@pytest.mark.parametrize("faster", ["numpy", "native"])
def test_auto_runs_the_target_the_model_predicts_faster(
    faster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    slow = {**dict.fromkeys(cost_model.TERMS, 0.0), "overhead": 1.0}
    fast = dict.fromkeys(cost_model.TERMS, 0.0)
    other = "native" if faster == "numpy" else "numpy"
    monkeypatch.setattr(cost_model, "COEFFICIENTS", {faster: fast, other: slow})
    source = f"exp(A) + {1 if faster == 'numpy' else 2}"  # not one cached kernel for both
    kernel = JITTensorKernel(target="auto").compile(source, {"A": (4, 4)}, "f32")
    assert kernel.target == faster, kernel.target_reason
    reason = kernel.target_reason or ""
    assert "the cost model (tdsl.jit.cost_model) predicts " in reason
    if faster == "numpy":
        assert reason.endswith("where the numpy target is faster")
        assert "1e+03 ms a call natively against 0 us on the numpy target" in reason
    else:
        assert reason.startswith("auto: native code runs here")
        assert "0 us a call natively against 1e+03 ms on the numpy target" in reason


def test_auto_counts_the_blas_calls_of_the_native_loops_plan() -> None:
    """At budget 1024 the native loops run ``cumsum(softmax(a) @ b, axis=0) + ((a -
    mean(a, axis=1, keepdims=True)) @ c)`` (16x300 by 300x128) in tiles of one row by two
    columns: 2,048 BLAS calls, where the tile op's tiles (which the model's counts are
    read from) make few.  ``auto`` took native code (1.36 ms a call here, against 0.15 ms
    on the numpy target); it now adds ``LOOPS_BLAS_CALL`` for each call the loops make
    more, and says so.  Where the loops make few calls (the budget's default), native."""
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    text = "cumsum(softmax(a) @ b, axis=0) + ((a - mean(a, axis=1, keepdims=True)) @ c)"
    shapes = {"a": (16, 300), "b": (300, 128), "c": (300, 128)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)  # (no fusion plan fits 1024)
        tight = JITTensorKernel(target="auto", memory_budget=1024, threads=1)
        kernel = tight.compile(text, shapes, "f32")
        native = JITTensorKernel(target="native", memory_budget=1024, threads=1)
        planned = native.compile(text, shapes, "f32").ir["planned"]
    assert "loops tiles [1, 2, 300]" in planned
    assert kernel.target == "numpy", kernel.target_reason
    assert "natively (its loops' 2048 BLAS calls)" in (kernel.target_reason or "")
    roomy = JITTensorKernel(target="auto", threads=1).compile(text, shapes, "f32")
    assert roomy.target == "native", roomy.target_reason
