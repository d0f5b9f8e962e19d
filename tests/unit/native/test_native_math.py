"""Native math functions against NumPy: the polynomial approximations within their
stated ulp, the C library calls within a few ulp, special values exactly."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from tdsl.backend.llvm.math_approx import MAX_ULP_ERROR
from tdsl.backend.llvm.math_trig import DOMAIN
from tdsl.runtime.compile import host_info, native_unavailable_reason

from .kernels import (
    MLIR_TYPES,
    compile_function,
    elementwise_1d,
    erf_reference,
    pow_inputs,
    ulp_error,
    unary_math,
)

pytestmark = pytest.mark.skipif(
    native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
)

RNG = np.random.default_rng(2024)
N = 1 << 14

NUMPY: dict[str, Callable[..., Any]] = {
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "tanh": np.tanh,
    "sinh": np.sinh, "cosh": np.cosh, "log2": np.log2, "exp2": np.exp2, "cbrt": np.cbrt, "log10": np.log10, "sqrt": np.sqrt,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "absf": np.abs, "ceil": np.ceil, "floor": np.floor, "trunc": np.trunc,
    "roundeven": np.rint, "rsqrt": lambda x: 1 / np.sqrt(x), "erf": erf_reference,
}  # fmt: skip


def inputs(name: str, dtype: Any) -> np.ndarray:
    """Random inputs over the interesting range of ``name``, plus special values."""
    big = 700.0 if dtype == np.float64 else 90.0
    spread = np.exp(RNG.uniform(-30, 0, N))
    ranges: dict[str, np.ndarray] = {
        "exp": RNG.uniform(-big - 50, big + 5, N),
        "expm1": np.concatenate([RNG.uniform(-40, big + 5, N // 2), RNG.uniform(-1, 1, N // 2) * spread[: N // 2]]),
        "log": np.exp(RNG.uniform(-700 if dtype == np.float64 else -100, big, N)),
        "log1p": np.concatenate([RNG.uniform(-1, 1, N // 2) * spread[: N // 2], np.exp(RNG.uniform(-30, big, N // 2))]),
        "tanh": RNG.uniform(-25, 25, N) * spread,
        "sinh": RNG.uniform(-big - 3, big + 3, N) * spread,
        "cosh": RNG.uniform(-big - 3, big + 3, N) * spread,
        "erf": RNG.uniform(-7, 7, N) * spread,
        "exp2": RNG.uniform(-1.5 * big - 80, 1.5 * big + 8, N),
    }  # fmt: skip
    x = ranges.get(name, RNG.uniform(-3, 3, N) * spread)
    info = np.finfo(dtype)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, float(info.max),
                -float(info.max), float(info.tiny), -float(info.tiny), float(info.smallest_subnormal),
                -float(info.smallest_subnormal), 1e-30, -1e-30, 88.72, 88.73, 89.5, -87.3, -103.9,
                -104.0, -104.0001, -1e10, -746.0, -746.5, 709.78, 709.79, 710.5, -745.1, -745.2, 9.0, 19.0, 0.625, 1.0 - 2**-20,
                0.84375, -0.84375, 1.25, -1.25, 3.92, 4.0, 5.92, 6.0]  # fmt: skip
    x[: len(specials)] = specials
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def reference(name: str, x: np.ndarray) -> np.ndarray:
    """NumPy in more precision than ``x``: float64 for f16/f32, long double for f64."""
    wide = np.longdouble if x.dtype == np.float64 else np.float64
    with np.errstate(all="ignore"):
        return NUMPY[name](x.astype(wide))


def check_special_values(x: np.ndarray, result: np.ndarray, ref: np.ndarray, dtype: Any) -> None:
    """Where the reference rounds to nan, ±inf or ±0, the result is exactly that."""
    with np.errstate(over="ignore"):
        rounded = ref.astype(dtype)
    special = np.isnan(rounded) | np.isinf(rounded) | (rounded == 0)
    np.testing.assert_array_equal(result[special], rounded[special], err_msg=f"inputs {x[special]}")
    zero = special & (rounded == 0)
    np.testing.assert_array_equal(np.signbit(result[zero]), np.signbit(rounded[zero]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(set(MAX_ULP_ERROR) - {"pow"}))
def test_polynomial_approximations_within_stated_ulp(name: str, dtype: Any) -> None:
    x = inputs(name, dtype)
    result = unary_math(f"math.{name}", dtype, N)(x)
    ref = reference(name, x)
    check_special_values(x, result, ref, dtype)
    errors = ulp_error(result, ref, dtype)
    worst = int(np.argmax(errors))
    bound = MAX_ULP_ERROR[name][MLIR_TYPES[dtype]]
    assert errors[worst] <= bound, f"{name}({x[worst]!r}) = {result[worst]!r}, ref {ref[worst]!r}"


LIBM = ["log2", "exp2", "cbrt", "log10", "sqrt", "rsqrt", "tan", "asin", "acos", "atan", "asinh", "acosh",
        "atanh", "absf", "ceil", "floor", "trunc", "roundeven"]  # fmt: skip
EXACT = {"sqrt", "absf", "ceil", "floor", "trunc", "roundeven"}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", LIBM)
def test_library_functions_match_numpy(name: str, dtype: Any) -> None:
    x = inputs(name, dtype)
    result = unary_math(f"math.{name}", dtype, N)(x)
    ref = reference(name, x)
    check_special_values(x, result, ref, dtype)
    if name in EXACT:
        with np.errstate(invalid="ignore"):
            expected = NUMPY[name](x)
        np.testing.assert_array_equal(result, expected)
    else:
        assert ulp_error(result, ref, dtype).max() <= 4, name


BINARY: dict[str, Callable[..., Any]] = {
    "math.powf": np.power, "math.atan2": np.arctan2, "math.copysign": np.copysign,
    "tdslmath.remf": np.fmod, "tdslmath.hypot": np.hypot, "tdslmath.nextafter": np.nextafter,
    "arith.maximumf": np.maximum, "arith.minimumf": np.minimum,
}  # fmt: skip
EXACT_BINARY = {"math.copysign", "tdslmath.remf", "tdslmath.nextafter", "arith.maximumf",
                "arith.minimumf"}  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_functions_match_numpy(name: str, dtype: Any) -> None:
    t = MLIR_TYPES[dtype]
    values = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -3.0, np.inf, -np.inf, np.nan, 1e-3, 7.0, 0.1])
    x = np.repeat(values, len(values)).astype(dtype)
    y = np.tile(values, len(values)).astype(dtype)
    if name.endswith("imumf"):
        # NumPy leaves max(-0, +0) unspecified (it differs between dtypes); LLVM orders -0 < +0
        keep = ~((x == 0) & (y == 0))
        x, y = x[keep], y[keep]
    n = len(x)
    f = compile_function(elementwise_1d(f"%r = {name} %v0, %v1 : {t}", n, [t, t], t))
    out = np.empty(n, dtype)
    f(x, y, out)
    with np.errstate(all="ignore"):
        expected = BINARY[name](x, y)
    if name in EXACT_BINARY:
        np.testing.assert_array_equal(out, expected)
        np.testing.assert_array_equal(np.signbit(out), np.signbit(expected))
    else:
        assert ulp_error(out, expected, dtype).max() <= 2, name


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "expm1", "sin", "sqrt", "erf"])
def test_f16_math_within_one_f16_ulp_of_numpy(name: str) -> None:
    if not host_info().native_f16:
        pytest.skip("f16 needs F16C")
    x = inputs(name, np.float16)
    result = unary_math(f"math.{name}", np.float16, N)(x)
    with np.errstate(all="ignore"):
        expected = NUMPY[name](x)
    check_special_values(x, result, reference(name, x), np.float16)
    assert ulp_error(result, expected, np.float16).max() <= 1


def trig_special_values(dtype: Any) -> np.ndarray:
    """nan, ±inf, ±0, subnormals and the smallest normal, and finite values beyond the
    domain of the expansion (where the native code calls the C library, as NumPy's f32
    ``sin``/``cos`` do for huge values; below about 7e4 NumPy's own f32 code may differ
    from it by an ulp).  f16 is computed in f32, in the domain."""
    info = np.finfo(dtype)
    values = [np.nan, np.inf, -np.inf, 0.0, -0.0, float(info.smallest_subnormal),
              3 * float(info.smallest_subnormal), float(info.tiny) / 2, float(info.tiny),
              float(info.max)]  # fmt: skip
    if dtype == np.float16:
        values += [1e4, 65504.0]
    else:
        values += [1e30, 3e38, 2.0**28 + 64, 1.5 * 2**30]
    if dtype == np.float64:
        values += [2.0**28, 1e300, 1e22, 2.0**20 + 0.25, 6381956970095103.0 * 2.0**797]
    x = np.array(values, np.float64).astype(dtype)
    if dtype != np.float16:
        huge = np.isfinite(x) & (np.abs(x) > 1)
        assert (np.abs(x[huge]) > DOMAIN[MLIR_TYPES[dtype]]).all()
    return np.concatenate([x, -x])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_cos_special_and_huge_values_are_numpys(name: str, dtype: Any) -> None:
    if dtype == np.float16 and not host_info().native_f16:
        pytest.skip("f16 needs F16C")
    x = trig_special_values(dtype)
    result = unary_math(f"math.{name}", dtype, len(x))(x)
    with np.errstate(invalid="ignore"):
        expected = NUMPY[name](x)
    np.testing.assert_array_equal(result, expected, err_msg=f"inputs {x}")
    np.testing.assert_array_equal(np.signbit(result[x == 0]), np.signbit(expected[x == 0]))
    tiny = (x != 0) & (np.abs(x) < np.finfo(dtype).tiny)
    if name == "sin":  # sin(x) = x for zeros and subnormals, cos(x) = 1
        np.testing.assert_array_equal(result[tiny | (x == 0)], x[tiny | (x == 0)])
    else:
        assert (result[tiny | (x == 0)] == 1).all()


def trig_domain_inputs(dtype: Any) -> np.ndarray:
    """Random ``x`` over the whole domain of the expansion (log-uniform magnitudes from
    2^-30 to the limit, and uniform ones), the floats nearest multiples of ``pi/2``
    (the smallest reduced arguments) and the floats around the domain's limit, both
    signs."""
    limit = DOMAIN[MLIR_TYPES[dtype]]
    magnitudes = np.exp2(RNG.uniform(-30, np.log2(limit), N))
    uniform = RNG.uniform(0, limit, N // 4)
    k = np.concatenate([np.arange(1, 2048), RNG.integers(1, int(limit / 1.5707963), N // 4)])
    near = (k.astype(np.longdouble) * (np.longdouble(np.pi) / 2)).astype(dtype)
    edge = np.full(16, limit, dtype)
    for i in range(1, 8):
        edge[i] = np.nextafter(edge[i - 1], dtype(0))
        edge[8 + i] = np.nextafter(edge[8 + i - 1], dtype(np.inf))
    x = np.concatenate(
        [
            magnitudes.astype(dtype),
            uniform.astype(dtype),
            near,
            np.nextafter(near, dtype(np.inf)),
            np.nextafter(near, dtype(0)),
            edge,
        ]
    )
    return np.concatenate([x, -x])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_cos_within_stated_ulp_over_their_domain(name: str, dtype: Any) -> None:
    """The expansion against NumPy in more precision, arguments up to the domain's limit
    and a little beyond (where the C library is called in the vectorized loop)."""
    x = trig_domain_inputs(dtype)
    result = unary_math(f"math.{name}", dtype, len(x))(x)
    ref = reference(name, x)
    errors = ulp_error(result, ref, dtype)
    worst = int(np.argmax(errors))
    bound = MAX_ULP_ERROR[name][MLIR_TYPES[dtype]]
    assert errors[worst] <= bound, f"{name}({x[worst]!r}) = {result[worst]!r}, ref {ref[worst]!r}"


@pytest.mark.parametrize("t", ["f16", "f32", "f64"])
@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_cos_loops_vectorize(name: str, t: str) -> None:
    """The loop of ``sin(x)`` is vectorized: LLVM calls a masked vector variant of the
    C library call (``tdsl_sinf_m8``, ...) from the vector loop."""
    if t == "f16" and not host_info().native_f16:
        pytest.skip("f16 needs F16C")
    f = compile_function(elementwise_1d(f"%r = math.{name} %v0 : {t}", 4096, [t], t))
    ir = f.compiled.optimized_ir  # type: ignore[attr-defined]
    fn = name + ("" if t == "f64" else "f")
    assert "vector.body" in ir
    assert re.search(rf"call [^\n]*@tdsl_{fn}_m(4|8|16)\(", ir), ir


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pow_within_stated_ulp_and_its_special_values_numpys(dtype: Any) -> None:
    """``x ** y`` (math_pow's f64 expansion) against NumPy in more precision over
    every input set, and NumPy's own results bit for bit (nan's sign included)
    where they are nan, ±inf or ±0, or ``x = ±1``, or ``y = 0``."""
    t = MLIR_TYPES[dtype]
    sets = pow_inputs(dtype, 2000, np.random.default_rng(3))
    x = np.concatenate([x for x, _ in sets.values()])
    y = np.concatenate([y for _, y in sets.values()])
    out = np.empty_like(x)
    compile_function(elementwise_1d(f"%r = math.powf %v0, %v1 : {t}", len(x), [t, t], t))(x, y, out)
    wide = np.longdouble if dtype == np.float64 else np.float64
    with np.errstate(all="ignore"):
        expected = np.power(x, y)
        ref = np.power(x.astype(wide), y.astype(wide))
    special = (
        np.isnan(expected) | np.isinf(expected) | (expected == 0) | (np.abs(x) == 1) | (y == 0)
    )
    np.testing.assert_array_equal(out[special], expected[special])
    np.testing.assert_array_equal(np.signbit(out[special]), np.signbit(expected[special]))
    errors = ulp_error(out, ref, dtype)
    worst = int(np.argmax(errors))
    assert errors[worst] <= MAX_ULP_ERROR["pow"][t], f"{x[worst]!r} ** {y[worst]!r}: {out[worst]!r}"


@pytest.mark.parametrize("t", ["f16", "f32", "f64"])
def test_pow_loops_vectorize(t: str) -> None:
    if t == "f16" and not host_info().native_f16:
        pytest.skip("f16 needs F16C")
    f = compile_function(elementwise_1d(f"%r = math.powf %v0, %v1 : {t}", 4096, [t, t], t))
    ir = f.compiled.optimized_ir  # type: ignore[attr-defined]
    assert "vector.body" in ir
    assert not re.search(r"call [^\n]*@(llvm\.)?pow", ir), "a scalar pow call is left"
