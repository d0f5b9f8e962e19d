"""NumPy's numbers on the native target (and the numpy target), element by element.

Regression tests for what the native target used to get wrong: fast-math flags on
element-wise code (fused multiply-adds and reassociation changed overflow, nan and
rounding), a float16 matmul rounding its running sum to float16, ``expm1`` of
subnormals, and the sign of the nans an op creates.  Then a differential property
test over special values (nan, ±inf, ±0, subnormals, magnitudes whose products
overflow or underflow) for float16, float32 and float64 that compares both targets
with NumPy element by element:

- the same nan positions, the same infinities (signs included);
- where the drawn expression is one op on inputs without nan, every nan is one the
  op creates: its sign bit is NumPy's (on this CPU: see ``numpy_nans``);
- expressions are trees of correctly rounded ops (``+ - * /``, ``sqrt``, ``abs``,
  ``floor``, ``maximum``, ``fmod``, ...), possibly ending with one inexact op
  (``exp``, ``power``, ...; only at the end, so that no later op amplifies its
  error) and then a reduction; correctly rounded ops and ``max``/``min``/``prod``
  of them give NumPy's result bit for bit, signed zeros included (no fast-math
  flag may change a rounding); the inexact op is within ``ULP_TOLERANCE`` ulp of
  NumPy's; ``sum`` and ``mean`` may add in another order, within ``sum_bound``;
- where both results are zero (outside a max/min/sum), the same sign of zero.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from tdsl.errors import TdslBudgetWarning
from tdsl.jit import JITTensorKernel
from tdsl.runtime.compile import host_info, native_unavailable_reason

NATIVE = pytest.mark.skipif(
    native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
)

Array = np.ndarray[Any, np.dtype[Any]]
DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def run(target: str, expr: str, **arrays: Array) -> Array:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(JITTensorKernel(target=target)(expr, **arrays))


def same_bits(got: Array, want: Array) -> bool:
    """Equal values, nan where NumPy has nan, signs of zeros and nans included."""
    return (
        got.dtype == want.dtype
        and np.array_equal(got, want, equal_nan=True)
        and np.array_equal(np.signbit(got), np.signbit(want))
    )


# --------------------------------------------------------------------------- regressions

INF = np.inf
FAST_MATH_CASES = [
    # (expression, inputs): the fused or reassociated form gives another result
    ("a * a - c", {"a": np.full(4, 2e19, np.float32), "c": np.full(4, 3e38, np.float32)}),
    ("x * y + z", {"x": [-INF, -15.0], "y": [55.5, -1.7e308], "z": [0.0, -INF]}),
    (
        "square(power(x, y))",
        {
            "x": np.array([-2, -1.5563743, 4], np.float32),
            "y": np.array([0.5, 1.5, 0.5], np.float32),
        },
    ),
    ("x * 2 * 0.5", {"x": [1e308, 800.0, -2.0, 3.0]}),
    ("x / y * y", {"x": [1e308, 800.0, -2.0, 3.0], "y": [-800.0, -800.0, 0.5, 1e-320]}),
    ("prod(x)", {"x": np.tile([1e200, 1e-200], 64)}),
    ("b * c - d", {"b": [1.0 + 2.0**-30], "c": [1.0 - 2.0**-30], "d": [1.0]}),
]


@NATIVE
@pytest.mark.parametrize("expr, values", FAST_MATH_CASES, ids=[c[0] for c in FAST_MATH_CASES])
def test_no_fast_math_changes_numpy_results(expr: str, values: dict[str, Any]) -> None:
    """Without ``contract`` no fused multiply-add (``a * a`` overflows, ``b * c - d``
    rounds twice); without ``reassoc`` nothing is folded or reordered."""
    arrays = {k: np.asarray(v) for k, v in values.items()}
    with np.errstate(all="ignore"):
        want = np.asarray(
            eval(expr, {"square": np.square, "power": np.power, "prod": np.prod}, arrays)
        )
    got = run("native", expr, **arrays)
    assert same_bits(got, want), f"{expr}: native {got}, NumPy {want}"


@NATIVE
@pytest.mark.skipif(not host_info().triple.startswith("x86_64"), reason="x86 assembly")
@pytest.mark.parametrize("expr", ["sum(A, axis=1)", "mean(A, axis=1)", "max(A, axis=1)", "min(A)"])
def test_reductions_still_vectorize(expr: str) -> None:
    """A sum's accumulator carries ``reassoc`` (and nothing else does): LLVM still
    vectorizes row sums; max and min vectorize without flags (``llvm.maximum``)."""
    kernel = JITTensorKernel(target="native", threads=1).compile(expr, {"A": (64, 256)}, "f32")
    from tdsl.runtime.native import NativeFunction

    function = kernel.function
    assert isinstance(function, NativeFunction)
    assembly = function.code.compiled.assembly()
    packed = re.findall(r"\tv(?:add|max|min|cmp\w*|blendv)ps\t.*%[xyz]mm", assembly)
    assert len(packed) >= 4, f"{expr}: no packed single-precision arithmetic"


@NATIVE
@pytest.mark.skipif(not host_info().triple.startswith("x86_64"), reason="x86 assembly")
@pytest.mark.parametrize("expr", ["sum(A, axis=1)", "layernorm(A, axis=1)"])
def test_a_sum_reorders_by_its_loops_hint_alone(expr: str) -> None:
    """The LLVM IR the native target compiles carries no fast-math flag: a sum's
    accumulator ``reassoc`` flag became its loop's vectorize hint.  After LLVM's
    pipeline only the lanes of the vectorized loop's partial sums are added with the
    flag, in a tree of packed adds: in order, 15 dependent scalar adds per f32 row made
    rows of 64 elements 1.8 times slower."""
    kernel = JITTensorKernel(target="native", threads=1).compile(expr, {"A": (64, 256)}, "f32")
    assert "reassoc" not in kernel.llvm_ir
    assert "llvm.loop.vectorize.enable" in kernel.llvm_ir
    from tdsl.runtime.native import NativeFunction

    function = kernel.function
    assert isinstance(function, NativeFunction)
    assembly = function.code.compiled.assembly()
    assert len(re.findall(r"\tvaddss\t", assembly)) < 8, "the lanes are added one by one"


@NATIVE
@pytest.mark.parametrize("n", [1, 2, 3, 4, 17])
def test_llvm_prints_nothing_of_a_short_sums_loop(
    n: int, capfd: pytest.CaptureFixture[str]
) -> None:
    """A sum along an axis of 2: LLVM, asked by the loop's hint to vectorize it, found no
    reduction there and printed ``remark: ... loop not vectorized`` and a warning that
    it could not (on the process's stderr, past Python; found by fuzzing).  Loops of
    fewer than ``loop_hints.MIN_TRIPS`` iterations get no hint."""
    a = np.arange(7.0 * n, dtype=np.float32).reshape(7, n)
    kernel = JITTensorKernel(target="native", threads=1).compile(
        "sum(a, axis=1)", {"a": a.shape}, "f32"
    )
    np.testing.assert_array_equal(kernel(a=a), a.sum(axis=1))
    printed = capfd.readouterr()
    assert "not vectorized" not in printed.err + printed.out


@NATIVE
def test_llvm_prints_nothing_of_a_sum_beside_an_online_state(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A mean's sum in the loop of ``logsumexp``'s online state (its operand reads a
    column maximum, so it keeps one pass): the loop's hint asked LLVM to vectorize it,
    LLVM found the online state no reduction and printed ``remark: ... loop not
    vectorized`` on the process's stderr (found by fuzzing).  Such a loop gets no hint."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 33))
    text = "logsumexp(x - max(x, axis=0, keepdims=True)) + mean(x * mean(x, axis=1, keepdims=True))"
    kernel = JITTensorKernel(target="native", threads=1).compile(text, {"x": x.shape}, "f64")
    y = x - x.max(axis=0, keepdims=True)
    m = y.max()
    want = m + np.log(np.exp(y - m).sum()) + np.mean(x * x.mean(axis=1, keepdims=True))
    np.testing.assert_allclose(kernel(x=x), want, rtol=1e-12)
    printed = capfd.readouterr()
    assert "not vectorized" not in printed.err + printed.out


@NATIVE
def test_llvm_prints_nothing_of_a_sum_beside_a_maximum_of_a_select(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A mean's sum and ``log_softmax``'s column maximum in one loop, the maximum's
    operand a quotient that is NaN where its divisor is infinite (``softmax(a) @ e``,
    ``e`` one column): InstCombine moved that select after the maximum, LLVM found no
    reduction there and printed ``remark: ... loop not vectorized`` on the process's
    stderr (found by fuzzing; so did ``max(where(a > 0, a, nan), axis=1) + sum(a,
    axis=1)``).  Such a loop gets no hint."""
    x = np.linspace(-2.0, 3.0, 7 * 64).reshape(7, 64)
    simple = JITTensorKernel(target="native", threads=1).compile(
        "max(where(x > 0, x, nan), axis=1) + sum(x, axis=1)", {"x": x.shape}, "f64"
    )
    np.testing.assert_allclose(
        simple(x=x), np.where(x > 0, x, np.nan).max(axis=1) + x.sum(axis=1), rtol=1e-12
    )
    assert "llvm.loop.vectorize.enable" not in simple.llvm_ir
    # (a select of 0, a relu's, stays put: the sum beside its maximum still vectorizes)
    relu = JITTensorKernel(target="native", threads=1).compile(
        "max(relu(x), axis=1) + sum(x, axis=1)", {"x": x.shape}, "f64"
    )
    assert "llvm.loop.vectorize.enable" in relu.llvm_ir
    rng = np.random.default_rng(4)
    a = rng.standard_normal((200, 300)).astype(np.float32)
    e = rng.standard_normal((300, 1)).astype(np.float32)
    text = (
        "mean(softmax(a) @ e, axis=0, keepdims=True) "
        "+ sum(log_softmax(softmax(a) @ e, axis=0), axis=0, keepdims=True)"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)  # (no fusion plan fits 4096)
        kernel = JITTensorKernel(target="native", threads=1, memory_budget=4096).compile(
            text, {"a": a.shape, "e": e.shape}, "f32"
        )
    s = np.exp(a - a.max(axis=1, keepdims=True))
    p = (s / s.sum(axis=1, keepdims=True)).astype(np.float64) @ e.astype(np.float64)
    m = p.max(axis=0, keepdims=True)
    log_softmax = p - m - np.log(np.exp(p - m).sum(axis=0, keepdims=True))
    want = p.mean(axis=0, keepdims=True) + log_softmax.sum(axis=0, keepdims=True)
    np.testing.assert_allclose(kernel(a=a, e=e), want, rtol=1e-4)
    printed = capfd.readouterr()
    assert "not vectorized" not in printed.err + printed.out


@NATIVE
def test_f16_matmul_accumulates_in_f32() -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(0, 1, (64, 2000)).astype(np.float16)
    b = rng.uniform(0, 1, (2000, 65)).astype(np.float16)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    got = run("native", "matmul(A, B)", A=a, B=b)
    assert got.dtype == np.float16
    error = float(np.max(np.abs(got - exact) / exact))
    numpy_error = float(np.max(np.abs(a @ b - exact) / exact))
    assert error <= 1.5 * numpy_error, f"max relative error {error:.2g}, NumPy's {numpy_error:.2g}"


@NATIVE
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, n", [(1, 1), (4, 1), (1, 4), (4, 4)])
def test_matmuls_of_vectors_call_numpys_blas_routines(m: int, n: int, dtype: Any) -> None:
    """NumPy's matmul calls ``?dot`` for a 1x1 result and ``?gemv`` where ``m`` or ``n``
    is 1, ``?gemm`` otherwise; OpenBLAS's ``gemm`` fuses multiply-adds and the others do
    not here, so ``[2, 2] @ [big, -big]`` overflows to ``inf - inf = nan`` in NumPy's
    vector routines and stays ``inf`` in ``gemm`` (native gave ``inf`` for all four shapes;
    found by fuzzing)."""
    big = np.finfo(dtype).max
    a = np.full((m, 2), 2, dtype)
    b = np.array([[big] * n, [-big] * n], dtype)
    with np.errstate(all="ignore"):
        want = a @ b
    got = run("native", "matmul(A, B)", A=a, B=b)
    np.testing.assert_array_equal(got, want)


@NATIVE
@pytest.mark.parametrize(
    "values, dtype",
    [
        ([1e-45, 4.2e-45, 1.7299e-41, -1e-45, -1.1e-38, 2.0**-26, -(2.0**-25)], np.float32),
        ([5e-324, -5e-324, 1e-310, -2.2e-308, 2.0**-55], np.float64),
        ([6e-8, -6e-8, 3e-5], np.float16),
    ],
)
@pytest.mark.parametrize("fn", ["expm1", "log1p", "tanh", "sinh", "arcsinh", "arctanh", "sin"])
def test_tiny_arguments_of_odd_functions_give_x(fn: str, values: list[float], dtype: Any) -> None:
    """``f(x) = x`` for subnormal and tiny ``x`` (and ``f(±0) = ±0``): ``expm1`` used to
    lose them in its range reduction (``expm1(y) / 0`` was nan instead of inf)."""
    x = np.array([0.0, -0.0, *values], dtype)
    want = getattr(np, fn)(x)
    got = run("native", f"{fn}(x)", x=x)
    assert same_bits(got, want), f"{fn}: native {got}, NumPy {want}"
    if fn == "expm1":
        y = run("native", "expm1(x) / (x - x)", x=x[2:])
        assert np.all(np.isinf(y)), y


NAN_CREATING = [
    ("log(x)", [-1.0, -0.5, -INF]),
    ("log1p(x)", [-2.0, -INF]),
    ("log2(x)", [-1.0, -INF]),
    ("log10(x)", [-1.0, -INF]),
    ("sqrt(x)", [-1.0, -INF]),
    ("arcsin(x)", [2.0, -2.0, INF]),
    ("arccos(x)", [2.0, -2.0, -INF]),
    ("arccosh(x)", [0.5, -2.0]),
    ("arctanh(x)", [2.0, -2.0]),
    ("sin(x)", [INF, -INF]),
    ("cos(x)", [INF]),
    ("tan(x)", [-INF]),
    ("x / (x - x)", [0.0, -0.0]),
    ("x - x", [INF, -INF]),
    ("x * 0", [INF, -INF]),
    ("power(x, 0.5)", [-2.0, -0.5]),
    ("fmod(x, 0)", [1.0, -1.0, INF]),
    ("x % 0", [1.0, -1.0]),
    ("remainder(x, 1)", [INF, -INF]),
]


@pytest.mark.parametrize("target", ["numpy", pytest.param("native", marks=NATIVE)])
@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
@pytest.mark.parametrize("expr, values", NAN_CREATING, ids=[c[0] for c in NAN_CREATING])
def test_created_nans_have_numpys_sign(
    target: str, dtype: str, expr: str, values: list[float]
) -> None:
    """An op that makes a nan from operands that are not nan gives NumPy's nan, whose
    sign is what NumPy's loop makes on this CPU (``-nan`` mostly; ``+nan`` for an f64
    ``log`` on AVX2), whichever function computes it."""
    x = np.array(values, DTYPES[dtype])
    with np.errstate(all="ignore"):
        want = np.asarray(eval(expr, {**{n: getattr(np, n) for n in dir(np)}, "x": x}))
    assert np.all(np.isnan(want))
    got = run(target, expr, x=x)
    assert same_bits(got, want), f"{expr}: {target} {got} (sign bits {np.signbit(got)})"


@pytest.mark.parametrize("target", ["numpy", pytest.param("native", marks=NATIVE)])
@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
def test_negation_flips_the_sign_bit_of_every_value_as_numpy_does(target: str, dtype: str) -> None:
    """``-x`` is NumPy's ``negative``: the sign bit flipped, a nan's too (the numpy
    target multiplied by -1, which kept a nan's sign), in a tile of a fused group and
    on a strided input as on a whole one."""
    t = DTYPES[dtype]
    x = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -2.5], t)
    x = np.concatenate([x, np.finfo(t).smallest_subnormal * np.array([1, -1], t)])
    grid = np.tile(x, (3, 1))
    for budget, value in ((None, x), (None, x[::-3]), (4, grid), (4, grid[:, ::2].T)):
        for expr, want in (("-x", -value), ("-(x * 1)", -(value * 1))):
            got = np.asarray(JITTensorKernel(target=target, memory_budget=budget)(expr, x=value))
            assert same_bits(got, want), f"{expr} ({budget}): {target} {got}"


@pytest.mark.parametrize("target", ["numpy", pytest.param("native", marks=NATIVE)])
@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
def test_powers_of_a_nan_keep_numpys_sign(target: str, dtype: str) -> None:
    """``(-nan) ** y`` for odd, even and non-integer ``y``: the sign NumPy's loop gives
    the nan, bit for bit.  It differs by CPU and type: NumPy's AVX-512 loops keep the
    sign for an odd ``y`` on f32 and f64 and clear it on f16 (the C library's ``x * x``),
    which clears it on all three."""
    t = DTYPES[dtype]
    y = np.array([3.0, -1.0, 7.0, 2.0, -2.0, 0.5, 1.0, 0.0], t)
    x = np.full(len(y), -np.nan, t)
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    got = run(target, "power(x, y)", x=x, y=y)
    assert same_bits(got, want), f"{target} {got} (sign bits {np.signbit(got)})"


@pytest.mark.parametrize("target", ["numpy", pytest.param("native", marks=NATIVE)])
@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
def test_a_created_nans_sign_reaches_copysign(target: str, dtype: str) -> None:
    """The sign of the nan ``log`` creates is NumPy's as ``copysign`` reads it too.
    (It ran in each case of the test above, the same kernel on the same inputs.)"""
    d = np.array([-1.0, -0.5], DTYPES[dtype])
    signs = run(target, "copysign(2 + 0 * d, log(d))", d=d)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(signs, np.copysign(2 + 0 * d, np.log(d)))


@pytest.mark.parametrize("target", ["numpy", pytest.param("native", marks=NATIVE)])
@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
def test_maximum_minimum_relu_of_signed_zeros_are_numpys(target: str, dtype: str) -> None:
    """Of equal operands NumPy's maximum/minimum return the second (f32, f64) or the
    first (f16): ``relu(-0)`` is ``-0`` in f16, ``+0`` otherwise."""
    a = np.array([-0.0, 0.0, np.nan, 1.0, -0.0], DTYPES[dtype])
    b = np.array([0.0, -0.0, 1.0, np.nan, -0.0], DTYPES[dtype])
    for fn in ("maximum", "minimum"):
        got = run(target, f"{fn}(a, b)", a=a, b=b)
        assert same_bits(got, getattr(np, fn)(a, b)), f"{fn}: {got}"
    got = run(target, "relu(a)", a=a)
    assert same_bits(got, np.maximum(a, DTYPES[dtype](0))), f"relu: {got}"


@pytest.mark.parametrize("target", ["numpy", pytest.param("native", marks=NATIVE)])
@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
def test_power_of_one_half_is_numpys(target: str, dtype: str) -> None:
    """NumPy computes ``x ** 0.5`` as ``sqrt(x)`` for a one-element exponent in f32/f64
    (``-0 -> -0``, ``-inf -> nan``) and as ``pow`` otherwise."""
    t = DTYPES[dtype]
    x = np.array([-INF, -0.0, 0.0, 3.0, -2.0, INF], t)
    for y in (np.array(0.5, t), np.array([0.5], t), np.full(6, 0.5, t)):
        with np.errstate(all="ignore"):
            want = np.power(x, y)
        got = run(target, "power(x, y)", x=x, y=y)
        exact = np.isnan(want) | np.isinf(want) | (want == 0)
        assert same_bits(got[exact], want[exact]), f"y {y.shape}: {got}, NumPy {want}"
        np.testing.assert_allclose(got, want, rtol=float(np.finfo(t).eps))
    with np.errstate(all="ignore"):
        want = np.power(x, t(0.5))
    assert same_bits(run(target, "power(x, 0.5)", x=x), want)


@pytest.mark.parametrize("target", ["numpy", pytest.param("native", marks=NATIVE)])
@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
def test_the_operator_to_one_half_is_numpys(target: str, dtype: str) -> None:
    """NumPy's ``**`` takes ``sqrt`` for a Python float 0.5 in every float dtype, float16
    too, where ``np.power`` of float16 computes ``pow``; so does a traced function (found
    by fuzzing: float16 ``x ** 0.5`` gave ``pow``'s ``inf`` for ``-inf`` and ``+0`` for
    ``-0``)."""
    import tdsl

    x = np.array([-INF, -0.0, 0.0, 3.0, -2.0, INF], DTYPES[dtype])
    with np.errstate(all="ignore"):
        want = x**0.5
        assert same_bits(run(target, "x ** 0.5", x=x), want)
        traced = tdsl.trace(lambda x: x**0.5, target=target)
        assert same_bits(traced(x), want)
        if dtype == "f16":  # and np.power keeps pow, traced too
            power = tdsl.trace(lambda x: np.power(x, 0.5), target=target)
            assert same_bits(power(x), np.power(x, 0.5))


# --------------------------------------------------------------------------- the property


def special_values(dtype: Any) -> list[float]:
    """nan, ±inf, ±0, subnormals, the normal limits, magnitudes whose square overflows
    or underflows, and ordinary numbers."""
    fi = np.finfo(dtype)
    big = float(np.sqrt(float(fi.max))) * 2
    small = float(np.sqrt(float(fi.smallest_normal))) / 4
    positive = [
        float(fi.smallest_subnormal),
        float(fi.smallest_subnormal) * 3,
        float(fi.smallest_normal) / 3,
        float(fi.smallest_normal),
        small,
        0.5,
        1.0,
        2.0,
        3.0,
        big,
        float(fi.max),
    ]
    return [float("nan"), INF, -INF, 0.0, -0.0, *positive, *(-v for v in positive)]


EXACT_UNARY = ["abs", "ceil", "floor", "trunc", "round", "neg", "relu", "square", "sqrt",
               "reciprocal", "sign", "copy"]  # fmt: skip
INEXACT_UNARY = ["exp", "exp2", "cbrt", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
                 "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
                 "arctanh"]  # fmt: skip
EXACT_BINARY = ["+", "-", "*", "/", "maximum", "minimum", "copysign", "fmod", "nextafter"]
INEXACT_BINARY = ["power", "hypot", "arctan2", "remainder"]
OPERATORS = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}
NUMPY_NAMES = {"neg": "negative", "copy": "positive", "round": "rint"}

ULP_TOLERANCE = {"f16": 1, "f32": 4, "f64": 4}
"""Allowed distance from NumPy of the one inexact op an expression may end with, in
ulp of NumPy's result: the polynomials are within 2 ulp of the exact value, the C
library and NumPy's own loops within about 1-2; float16 computes in float32 and
rounds once, so it is off by at most one float16 ulp."""


def numpy_function(name: str) -> Callable[..., Array]:
    if name == "relu":
        return lambda x: np.maximum(x, x.dtype.type(0))
    return getattr(np, NUMPY_NAMES.get(name, name))


@dataclass
class Expression:
    text: str
    numpy: Callable[[dict[str, Array]], Array | float]
    ops: int = 0
    inexact: bool = False
    """Whether it ends with an inexact op (exp, power, ...): only the last op may be
    one, so that no error is amplified by the ops after it."""
    reduction: str | None = None
    """The reduction applied last, if any."""


def unary(name: str, a: Expression) -> Expression:
    f = numpy_function(name)
    return Expression(
        f"{name}({a.text})", lambda env: f(a.numpy(env)), a.ops + 1, name in INEXACT_UNARY
    )


def binary(name: str, a: Expression, b: Expression) -> Expression:
    f = OPERATORS.get(name) or numpy_function(name)
    text = f"({a.text} {name} {b.text})" if name in OPERATORS else f"{name}({a.text}, {b.text})"
    return Expression(
        text, lambda env: f(a.numpy(env), b.numpy(env)), a.ops + b.ops + 1, name in INEXACT_BINARY
    )


@dataclass
class Draw:
    draw: st.DrawFn
    names: list[str] = field(default_factory=list[str])

    def leaf(self) -> Expression:
        if self.names and self.draw(st.booleans()):
            name = self.draw(st.sampled_from(self.names))
        else:
            name = f"x{len(self.names)}"
            self.names.append(name)
        return Expression(name, lambda env, n=name: env[n])

    def operand(self, depth: int) -> Expression:
        """An exact subtree, or (one time in four) a literal."""
        if self.draw(st.integers(0, 3)) == 0:
            literal = self.draw(st.sampled_from(["2", "0.5", "3"]))
            return Expression(literal, lambda env, v=float(literal): v)
        return self.exact(depth)

    def exact(self, depth: int) -> Expression:
        """A tree of correctly rounded ops: NumPy's result bit for bit."""
        kind = self.draw(st.sampled_from(["leaf", "unary", "binary", "binary"]))
        if depth == 0 or kind == "leaf":
            return self.leaf()
        if kind == "unary":
            return unary(self.draw(st.sampled_from(EXACT_UNARY)), self.exact(depth - 1))
        return self.pair(self.draw(st.sampled_from(EXACT_BINARY)), depth)

    def pair(self, name: str, depth: int) -> Expression:
        a, b = self.exact(depth - 1), self.operand(depth - 1)
        if self.draw(st.booleans()) and not b.text[0].isdigit():
            a, b = b, a
        return binary(name, a, b)

    def last(self, depth: int) -> Expression:
        """An exact tree, possibly ending with one inexact op."""
        kind = self.draw(st.sampled_from(["exact", "unary", "binary"]))
        if kind == "exact":
            return self.exact(depth)
        if kind == "unary":
            return unary(self.draw(st.sampled_from(INEXACT_UNARY)), self.exact(depth - 1))
        return self.pair(self.draw(st.sampled_from(INEXACT_BINARY)), depth)


@dataclass(frozen=True)
class Case:
    expr: Expression
    names: tuple[str, ...]
    arrays: dict[str, Array]
    dtype: str
    single_op: bool
    axis: int | None = None


@st.composite
def cases(draw: st.DrawFn) -> Case:
    dtype = draw(st.sampled_from(list(DTYPES)))
    d = Draw(draw)
    single_op = draw(st.integers(0, 2)) == 0
    expr = d.last(1 if single_op else draw(st.integers(1, 3)))
    if expr.ops == 0:  # a bare input: apply one op to it
        expr = unary(draw(st.sampled_from(EXACT_UNARY + INEXACT_UNARY)), expr)
    shape = draw(st.sampled_from([(7,), (3, 5), (1,)]))
    axis: int | None = None
    if not single_op and draw(st.integers(0, 3)) == 0:
        # prod after an inexact op would multiply its errors: only exact operands
        names = ["max", "min", "sum", "mean"] + ([] if expr.inexact else ["prod"])
        name = draw(st.sampled_from(names))
        inner, reduce = expr, getattr(np, name)
        axis = draw(st.sampled_from([None, -1]))
        text = f"{name}({inner.text}" + (", axis=-1)" if axis is not None else ")")
        expr = Expression(
            text,
            lambda env: reduce(inner.numpy(env), axis=axis),
            inner.ops + 1,
            inner.inexact,
            name,
        )
        expr.operand = inner  # pyright: ignore[reportAttributeAccessIssue]
    specials = special_values(DTYPES[dtype])
    if single_op:  # nans in the result are then created by the op
        specials = [v for v in specials if not np.isnan(v)]
    element = st.one_of(
        st.sampled_from(specials),
        st.floats(-4, 4, width=16 if dtype == "f16" else 32 if dtype == "f32" else 64),
    )
    size = int(np.prod(shape))
    arrays = {
        n: np.array(draw(st.lists(element, min_size=size, max_size=size)), DTYPES[dtype]).reshape(
            shape
        )
        for n in d.names
    }
    return Case(expr, tuple(d.names), arrays, dtype, single_op, axis)


def ulps(got: Array, want: Array) -> Array:
    """``|got - want|`` in units of the last place of ``want`` (in ``want``'s type)."""
    with np.errstate(over="ignore"):  # the spacing of float16's max overflows
        spacing = np.spacing(np.abs(want)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want.astype(np.float64)) / spacing


def sum_bound(case: Case, want: Array) -> Array:
    """How far a sum (mean) may be from NumPy's: both orders are within
    ``n u sum(|x|)`` of the exact sum (``u`` the float32 unit roundoff for float16,
    whose sums accumulate in float32), plus the rounding of each result (and of the
    inexact op's values, ``ULP_TOLERANCE`` ulp each) and of the mean's division."""
    operand = np.asarray(case.expr.operand.numpy(case.arrays))  # pyright: ignore
    magnitudes = np.abs(operand.astype(np.float64))
    n = operand.size if case.axis is None else operand.shape[-1]
    total = magnitudes.sum(axis=case.axis)
    if case.expr.reduction == "mean":
        total = total / n
    acc = np.finfo(np.float32 if case.dtype == "f16" else DTYPES[case.dtype]).eps
    eps = float(np.finfo(DTYPES[case.dtype]).eps)
    per_value = ULP_TOLERANCE[case.dtype] * eps if case.expr.inexact else 0.0
    with np.errstate(over="ignore"):
        spacing = np.spacing(np.abs(want)).astype(np.float64)
    return (2 * n * float(acc) + per_value) * total + 2 * spacing


def compare(got: Array, want: Array, case: Case, target: str) -> None:
    what = f"{target}: {case.expr.text} ({case.dtype})"
    assert got.shape == want.shape and got.dtype == want.dtype, what
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{what}: nan positions")
    finite = np.isfinite(want)
    reordered = case.expr.reduction in ("sum", "mean")
    if reordered:  # another order may overflow or not: judged with the bound below
        finite = finite & np.isfinite(sum_bound(case, want))
    else:
        inf = np.isinf(want)
        np.testing.assert_array_equal(got[inf], want[inf], err_msg=f"{what}: infinities")
        assert not np.any(np.isinf(got[~inf])), f"{what}: inf where NumPy's is finite"
    if case.single_op:
        np.testing.assert_array_equal(
            np.signbit(got[nan]), np.signbit(want[nan]), err_msg=f"{what}: sign of created nans"
        )
    zero = finite & (want == 0) & (got == 0)
    if case.expr.reduction not in ("max", "min", "sum", "mean"):
        # which zero a max of -0 and +0 is is unspecified (NumPy's too); a sum's may
        # depend on the order
        np.testing.assert_array_equal(
            np.signbit(got[zero]), np.signbit(want[zero]), err_msg=f"{what}: signed zeros"
        )
    if reordered:
        error = np.abs(got.astype(np.float64) - want.astype(np.float64))
        bound = sum_bound(case, want)
        assert np.all(error[finite] <= bound[finite]), (
            f"{what}: error {error} beyond {bound}\ngot  {got}\nwant {want}"
        )
    elif not case.expr.inexact:
        np.testing.assert_array_equal(got[finite], want[finite], err_msg=f"{what}: exact ops")
    else:
        tolerance = ULP_TOLERANCE[case.dtype]
        distance = ulps(got[finite], want[finite])
        assert np.all(distance <= tolerance), (
            f"{what}: {float(np.max(distance)):.3g} ulp from NumPy (allowed {tolerance})\n"
            f"got  {got}\nwant {want}"
        )


JITS: dict[str, JITTensorKernel] = {}
"""A JIT per target, shared by the examples of the property test below: examples that
draw the same expression, shapes and dtype (other values) run the kernel compiled once."""


@pytest.mark.parametrize("target", ["numpy", pytest.param("native", marks=NATIVE)])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_special_values_match_numpy_element_by_element(target: str, case: Case) -> None:
    note(f"{case.expr.text}  dtype={case.dtype}")
    for n in case.names:
        note(f"{n} = {case.arrays[n]!r}")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.asarray(case.expr.numpy(case.arrays))
        if want.dtype != DTYPES[case.dtype]:  # a literal alone promotes nothing: keep the dtype
            want = want.astype(DTYPES[case.dtype])
        if target not in JITS:
            JITS[target] = JITTensorKernel(target=target)
        kernel = JITS[target].compile(
            case.expr.text,
            {n: case.arrays[n].shape for n in case.names},
            case.dtype,
        )
        got = np.asarray(kernel(**case.arrays))
        compare(got, want, case, target)


@pytest.mark.parametrize("target", ["numpy", pytest.param("native", marks=NATIVE)])
@pytest.mark.parametrize(
    "expr", ["x + 0.0", "0 + x", "x - (-0.0)", "x + (-0.0)", "x - 0.0", "x + 0"]
)
def test_adding_a_zero_keeps_numpys_sign_of_zero(target: str, expr: str) -> None:
    """``-0.0 + 0.0`` is ``+0.0``: only ``x + -0.0`` and ``x - 0.0`` are ``x`` for every
    float, and the canonicalization folds those alone (it folded ``x + 0.0`` too, and
    ``-0.0`` came back where NumPy gives ``+0.0``; found by fuzzing ``tdsl.trace``)."""
    for dtype in DTYPES.values():
        x = np.array([-0.0, 0.0, 1.0, -INF, np.nan], dtype)
        assert same_bits(run(target, expr, x=x), eval(expr, {"x": x})), (expr, dtype)


@NATIVE
def test_a_sums_terms_keep_numpys_rounding() -> None:
    """Only the order of a sum's additions may change, not its terms (NumPy's results
    are the contract).  The loops marked the sum's accumulator addition ``reassoc``
    and LLVM's InstCombine folded ``acc + (x0 * x1) * -x1`` into ``acc - x0 * (x1 *
    x1)``: the product it made took the addition's flag and was reordered, so ``x1 *
    x1`` overflowed where NumPy's ``(x0 * x1) * -x1`` does not (``-inf`` for
    ``-1.9e-6``; found by the property test above, on a local seed).  The flag now
    becomes the loop's vectorize hint (:mod:`tdsl.backend.llvm.loop_hints`)."""
    x0 = np.array([0, 0, 0, 0, 1e-45], np.float32)
    x1 = np.array([0, 0, 0, 0, 3.6893486e19], np.float32)
    got = run("native", "sum((x0 * x1) * neg(x1))", x0=x0, x1=x1)
    assert same_bits(got, np.sum((x0 * x1) * -x1))


@pytest.mark.parametrize("target", ["numpy", pytest.param("native", marks=NATIVE)])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_nextafter_of_a_nan_has_numpys_sign(target: str, dtype: Any) -> None:
    """NumPy's float16 ``nextafter`` returns its positive quiet nan when either operand
    is nan, where C's (float32, float64) propagates the operand's: native float16 gave
    the operand's, and ``copysign(2, nextafter(0, 0 / 0))`` was -2 (x86's ``0 / 0`` is a
    negative nan; found by the property test above in CI)."""
    x = np.array([0.0, 1.0, -1.0, np.nan, -np.nan], dtype)
    y = np.array([-np.nan, np.nan, -np.nan, 1.0, 0.0], dtype)
    got = run(target, "copysign(2 + 0 * x, nextafter(x, y))", x=x, y=y)
    with np.errstate(all="ignore"):
        assert same_bits(got, np.copysign(2 + 0 * x, np.nextafter(x, y)))
