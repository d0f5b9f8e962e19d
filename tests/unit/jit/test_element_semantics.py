"""Each element-wise function against NumPy, or a float64 reference written here, on every
path: the interpreter (``tdsl.lang``, which evaluates the op's scalar body), the numpy
target and the native target (fused and tiled, at budgets 64 and 1e6).

The references never come from tdsl: an op's one statement of semantics is its scalar
body, and every path derives from it, so only an outside reference keeps them honest.

float16 is held to 2 ulp of the float64 reference rounded to float16 wherever NumPy's
own float16 result is (NumPy computes a float16 ufunc in float32 and rounds once; tdsl
computes a float16 body in float32 and rounds once, on every path).  Elsewhere float16
and the wider types are compared with NumPy's result within a relative tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tdsl.lang as lang
from tdsl import JITTensorKernel

Array = np.ndarray[Any, Any]

# Every test names its path (interpreter, numpy or native) itself: the folder's default
# target (``jit_target``) takes one value here, not both, whose two runs were the same.
pytestmark = pytest.mark.parametrize("jit_target", ["numpy"], indirect=True)

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x: Array) -> Array:
    return 1.0 / (1.0 + np.exp(-x))


UNARY: dict[str, Callable[[Array], Array]] = {
    "relu": lambda x: np.maximum(x, 0),
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "abs": np.abs,
    "neg": np.negative,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "arcsin": np.arcsin,
    "arccos": np.arccos,
    "arctan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "arcsinh": np.arcsinh,
    "arccosh": np.arccosh,
    "arctanh": np.arctanh,
    "log1p": np.log1p,
    "log10": np.log10,
    "log2": np.log2,
    "exp2": np.exp2,
    "cbrt": np.cbrt,
    "expm1": np.expm1,
    "erf": _erf,
    "ceil": np.ceil,
    "floor": np.floor,
    "trunc": np.trunc,
    "round": np.round,
    "sign": np.sign,
    "square": np.square,
    "reciprocal": np.reciprocal,
    "copy": np.copy,
    "conj": np.conj,
    "ones_like": np.ones_like,
}
"""Function -> NumPy (or, where NumPy has none, a float64 reference: erf, sigmoid)."""

BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "maximum": np.maximum,
    "minimum": np.minimum,
    "power": np.power,
    "float_power": np.float_power,
    "remainder": np.remainder,
    "fmod": np.fmod,
    "arctan2": np.arctan2,
    "hypot": np.hypot,
    "logaddexp": np.logaddexp,
    "copysign": np.copysign,
    "nextafter": np.nextafter,
}

F64_ONLY = {"erf", "sigmoid"}
"""NumPy has no such function: the reference is float64 for every dtype."""

SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5]


def _inputs(dtype: Any, arity: int, seed: int) -> list[Array]:
    rng = np.random.default_rng(seed)
    out: list[Array] = []
    for k in range(arity):
        x = rng.uniform(-4, 4, size=(6, 40))
        x[0, : len(SPECIAL)] = SPECIAL
        x[1, : len(SPECIAL)] = np.roll(SPECIAL, k)  # pairs of specials for binary ops
        x[2] = np.round(x[2])  # integers (power, remainder, equal operands)
        out.append(x.astype(dtype))
    if arity == 2:
        out[1][3] = out[0][3]  # equal operands: logaddexp's x + log(2)
    return out


def _reference(name: str, args: list[Array], dtype: Any) -> Array:
    fn: Callable[..., Array] = UNARY.get(name) or BINARY[name]
    with np.errstate(all="ignore"):
        if name in F64_ONLY:
            return fn(*(a.astype(np.float64) for a in args)).astype(dtype)
        if name == "float_power":  # (float64, whatever the operands)
            return np.asarray(fn(*args))
        return np.asarray(fn(*args)).astype(dtype)


def _ulps(got: Array, ref64: Array, dtype: Any) -> Array:
    """Per element, ``got``'s distance from ``ref64`` in ulps of ``dtype`` at the reference
    rounded to ``dtype``; 0 where both are the same non-finite value or both nan."""
    with np.errstate(all="ignore"):
        ref = ref64.astype(dtype)
        same = (got == ref) | (np.isnan(got) & np.isnan(ref))
        spacing = np.spacing(np.abs(ref)).astype(np.float64)
        dist = np.abs(got.astype(np.float64) - ref64) / spacing
    return np.where(same, 0.0, np.where(np.isfinite(dist), dist, np.inf))


def _check(name: str, got: Array, args: list[Array], dtype: Any, where: str) -> None:
    want = _reference(name, args, dtype)
    assert got.dtype == want.dtype and got.shape == want.shape, where
    dtype = want.dtype.type  # (the result's: float_power's is float64)
    if dtype == np.float16:
        fn: Callable[..., Array] = UNARY.get(name) or BINARY[name]
        with np.errstate(all="ignore"):
            ref64 = np.asarray(fn(*(a.astype(np.float64) for a in args)), dtype=np.float64)
        numpy_ulps = _ulps(want, ref64, dtype)
        held = numpy_ulps <= 2  # where NumPy itself is within 2 ulp
        ours = _ulps(got, ref64, dtype)
        bad = held & (ours > 2)
        assert not bad.any(), (
            f"{where}: {name} on f16 is {ours[bad].max()} ulp from the float64 reference "
            f"at {[a[bad][:3] for a in args]}: got {got[bad][:3]}, want {ref64[bad][:3]}"
        )
    tol = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-13}[dtype]
    np.testing.assert_allclose(
        got.astype(np.float64),
        want.astype(np.float64),
        rtol=tol,
        atol=tol,
        equal_nan=True,
        err_msg=f"{where}: {name}",
    )


DTYPES = [np.float16, np.float32, np.float64]
NAMES = [*UNARY, *BINARY]


def _expr(name: str) -> str:
    return f"{name}(a)" if name in UNARY else f"{name}(a, b)"


@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "f32", "f64"])
@pytest.mark.parametrize("name", NAMES)
def test_interpreter_matches_numpy(name: str, dtype: Any) -> None:
    args = _inputs(dtype, 1 if name in UNARY else 2, seed=1)
    fn = getattr(lang, name)
    with np.errstate(all="ignore"):
        got = np.asarray(fn(*args))
    _check(name, got, args, dtype, "interpreter")


@pytest.mark.parametrize("target", ["numpy", "native"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "f32", "f64"])
@pytest.mark.parametrize("name", NAMES)
def test_targets_match_numpy(name: str, dtype: Any, target: str) -> None:
    if target == "native":
        from tdsl.runtime.compile import native_unavailable_reason

        reason = native_unavailable_reason()
        if reason is not None:
            pytest.skip(reason)
    args = _inputs(dtype, 1 if name in UNARY else 2, seed=2)
    names = ["a", "b"][: len(args)]
    with np.errstate(all="ignore"):
        got = JITTensorKernel(1_000_000, target=target)(
            _expr(name), **dict(zip(names, args, strict=True))
        )
    _check(name, np.asarray(got), args, dtype, target)


@pytest.mark.parametrize("budget", [64, 1_000_000])
@pytest.mark.parametrize("target", ["numpy", "native"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "f32", "f64"])
@pytest.mark.parametrize("name", ["erf", "logaddexp"])
def test_new_ops_fused_and_tiled(name: str, dtype: Any, target: str, budget: int) -> None:
    """The ops added as one class each, fused with others and tiled (rows of 40 under a
    budget of 64 are cut), against the same references."""
    if target == "native":
        from tdsl.runtime.compile import native_unavailable_reason

        reason = native_unavailable_reason()
        if reason is not None:
            pytest.skip(reason)
    args = _inputs(dtype, 2, seed=3)
    a, b = args
    expr = "erf(a) + b * 1" if name == "erf" else "maximum(logaddexp(a, b), a)"
    with np.errstate(all="ignore"):
        got = np.asarray(JITTensorKernel(budget, target=target)(expr, a=a, b=b))
        if name == "erf":
            want = (_erf(a.astype(np.float64)).astype(dtype) + b).astype(dtype)
        else:
            want = np.maximum(np.logaddexp(a, b), a)
    tol = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-13}[dtype]
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, equal_nan=True
    )


@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "f32", "f64"])
def test_the_numpy_target_calls_numpys_logaddexp(dtype: Any) -> None:
    """Where ``logaddexp``'s result is near 0 its two terms cancel, and the body's
    NumPy ``exp``/``log1p`` calls were 2048 ulp of the result from ``np.logaddexp``
    (whose C library functions differ in the last bit); the numpy target calls NumPy's
    function, so it gives NumPy's values bit for bit, special values included."""
    rng = np.random.default_rng(7)
    x = -rng.uniform(0, 0.1, 2000)
    y = np.log(-np.expm1(x)) + rng.uniform(-1e-3, 1e-3, 2000)  # exp(x) + exp(y) near 1
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300]
    with np.errstate(all="ignore"):  # (1e300 is inf in f16 and f32)
        a = np.concatenate([x, np.repeat(special, len(special))]).astype(dtype)
        b = np.concatenate([y, np.tile(special, len(special))]).astype(dtype)
        got = np.asarray(JITTensorKernel(target="numpy")("logaddexp(a, b)", a=a, b=b))
        want = np.logaddexp(a, b)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", ["numpy", "native"])
def test_erf_is_within_one_ulp_of_math_erf_in_float64(target: str) -> None:
    """The numpy target's erf was a series and a continued fraction, 11 ulp from
    ``math.erf`` near 2 (found by fuzzing); both targets now compute the native
    polynomials (docs/native.md), within 1 ulp, special values included."""
    if target == "native":
        pytest.importorskip("llvmlite")
    rng = np.random.default_rng(3)
    x = np.concatenate(
        [rng.uniform(-7, 7, 20000), rng.standard_normal(2000) * 1e-3, [0.84375, 1.25, 2.31, 6.0]]
    )
    x = np.concatenate([x, [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, 1e300]])
    got = np.asarray(JITTensorKernel(target=target)("erf(x)", x=x))
    want = _erf(x)
    finite = np.isfinite(want)
    ulps = np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]))
    assert ulps.max() <= 1.0, x[finite][np.argmax(ulps)]
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert np.isnan(got[~finite]).all()


def test_the_numpy_targets_erf_has_the_native_targets_coefficients() -> None:
    """One set of f64 erf polynomials, in tdsl.scalar_numpy: the native lowering reads
    them, and the numpy target's program defines them (the helper's source, which it
    copies, reads them) and computes erf with them."""
    from tdsl import scalar_numpy
    from tdsl.backend.llvm import math_erf
    from tdsl.jit import JITTensorKernel

    names = scalar_numpy.HELPER_CONSTANTS["tdsl_erf"]
    assert all(getattr(math_erf, n) is getattr(scalar_numpy, n) for n in names)
    kernel = JITTensorKernel(target="numpy").compile("erf(v)", {"v": (4,)}, "f64")
    for n in names:
        assert f"{n} = {getattr(scalar_numpy, n)!r}\n" in kernel.source, n
    v = np.array([0.5, 1.0, 2.0, -3.0])
    np.testing.assert_array_equal(kernel(v), scalar_numpy.tdsl_erf(v))


EXACT: dict[str, tuple[Callable[..., Array], tuple[str, ...]]] = {
    "a + b": (np.add, ("f", "f")),
    "a - b": (np.subtract, ("f", "f")),
    "a * b": (np.multiply, ("f", "f")),
    "a / b": (np.divide, ("f", "f")),
    "less(a, b)": (np.less, ("f", "f")),
    "less_equal(a, b)": (np.less_equal, ("f", "f")),
    "equal(a, b)": (np.equal, ("f", "f")),
    "not_equal(a, b)": (np.not_equal, ("f", "f")),
    "greater_equal(a, b)": (np.greater_equal, ("f", "f")),
    "greater(a, b)": (np.greater, ("f", "f")),
    "logical_and(a, b)": (np.logical_and, ("b", "b")),
    "logical_or(a, b)": (np.logical_or, ("b", "b")),
    "logical_not(a)": (np.logical_not, ("b",)),
    "where(a, b, c)": (np.where, ("b", "f", "f")),
    "isnan(a)": (np.isnan, ("f",)),
    "isinf(a)": (np.isinf, ("f",)),
    "isfinite(a)": (np.isfinite, ("f",)),
    "clip(a, b, c)": (np.clip, ("f", "f", "f")),
    "floor_divide(a, b)": (np.floor_divide, ("f", "f")),
    "a // b": (np.floor_divide, ("i", "i")),
    "a % b": (np.remainder, ("i", "i")),
    "fmod(a, b)": (np.fmod, ("i", "i")),
    "bitwise_and(a, b)": (np.bitwise_and, ("i", "i")),
    "bitwise_or(a, b)": (np.bitwise_or, ("i", "i")),
    "bitwise_xor(a, b)": (np.bitwise_xor, ("i", "i")),
    "invert(a)": (np.invert, ("i",)),
    "left_shift(a, b)": (np.left_shift, ("i", "i")),
    "right_shift(a, b)": (np.right_shift, ("i", "i")),
    "astype(a, int64)": (lambda a: a.astype(np.int64), ("f",)),
    "astype(a, int32)": (lambda a: a.astype(np.int32), ("f",)),
}
"""Expressions NumPy computes with one correctly rounded (or exact) operation: every path
must give NumPy's result exactly.  Kinds: ``f`` a float of the test's dtype (special
values included), ``b`` booleans, ``i`` integers (int64 for float64, int32 otherwise:
the floats scaled and truncated, with the dtype's extremes, 0 and -1 among them)."""


def _exact_inputs(kinds: tuple[str, ...], dtype: Any) -> dict[str, Array]:
    out: dict[str, Array] = {}
    for name, kind, x in zip("abc", kinds, _inputs(dtype, 3, seed=4), strict=False):
        if kind == "i":
            integer = np.dtype(np.int64 if dtype == np.float64 else np.int32)
            info = np.iinfo(integer)
            wide = np.nan_to_num(x.astype(np.float64) * 9, nan=-1.0, posinf=70, neginf=-70)
            values = wide.astype(integer)
            values.reshape(-1)[:4] = [info.min, info.max, 0, -1]
            out[name] = values
        else:
            out[name] = x > 0 if kind == "b" else x
    return out


@pytest.mark.parametrize("path", ["interpreter", "numpy", "native"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "f32", "f64"])
@pytest.mark.parametrize("expr", list(EXACT))
def test_operators_comparisons_and_logic_equal_numpy(expr: str, dtype: Any, path: str) -> None:
    from tdsl.frontend.ir_gen import to_tensordsl
    from tdsl.interpreters.run import run_function

    fn, kinds = EXACT[expr]
    args = _exact_inputs(kinds, dtype)
    with np.errstate(all="ignore"):
        want = np.asarray(fn(*args.values()))
        if path == "interpreter":
            module = to_tensordsl(
                expr,
                shapes={k: v.shape for k, v in args.items()},
                dtypes={
                    k: "bool" if v.dtype == np.bool_ else v.dtype.name for k, v in args.items()
                },
            )
            (got,) = run_function(module, "main", *args.values())
        else:
            if path == "native":
                from tdsl.runtime.compile import native_unavailable_reason

                reason = native_unavailable_reason()
                if reason is not None:
                    pytest.skip(reason)
            got = JITTensorKernel(64, target=path)(expr, **args)
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_every_element_wise_function_is_checked_here() -> None:
    """A new element-wise op of the dialect fails here until its row is added above."""
    from tdsl.dialects.structured import ElementwiseOp, LanguageFunction
    from tdsl.dialects.tensordsl import TensorDSL

    checked = {*UNARY, *BINARY, *(e.split("(")[0] for e in EXACT if "(" in e)}
    for op in TensorDSL.operations:
        is_function = issubclass(op, LanguageFunction) and op.FUNCTION is not None
        if issubclass(op, ElementwiseOp) and is_function:
            assert op.FUNCTION in checked, f"add {op.FUNCTION} to a table of this test"
