"""``power`` and ``hypot`` where NumPy's float16 loops differ from its float32 ones, on
every target: signaling nans, and ``power(x, 0.5)``.

A signaling nan never comes out of arithmetic, but an input can hold one (bits read from
a file, ``view`` of integers).  NumPy's float16 loops widen it to float32 keeping its
bits (``npy_half_to_float``), and the C library's ``powf`` and ``hypotf`` give nan for a
signaling operand where a quiet nan gives a number: ``power(sNaN, 0)``,
``power(1, sNaN)`` and ``hypot(inf, sNaN)`` are nan in float16, 1, 1 and ``inf`` for a
quiet nan.  The native target widens float16 with ``vcvtph2ps``, which quiets the nan,
so it checks the float16 bits first; the interpreter computes a float16 body in float32,
whose ``power`` loop gives 1 for a signaling nan, so its float16 ``power`` checks too.
float32 and float64 ``power`` depend on the CPU: NumPy's AVX-512 loops give 1 for both
nans, its AVX2 loops call the C library and give nan for a signaling one (found when the
suite first ran on an AMD EPYC without AVX-512); the native target asks NumPy which
(:func:`~tdsl.backend.llvm.numpy_nans.signaling_pow_nans`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from all_targets import TARGETS, run_on

Array = np.ndarray[Any, Any]

SIGNALING = {
    np.float16: (np.uint16, 0x7D00),
    np.float32: (np.uint32, 0x7FA00000),
    np.float64: (np.uint64, 0x7FF4000000000000),
}
"""A signaling nan's bits (exponent all ones, the quiet bit clear, a payload), per dtype."""

OTHERS = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 2.0, 0.5, np.nan]


def _pairs(dtype: Any, negative: bool) -> tuple[Array, Array]:
    """Every value of :data:`OTHERS` with a signaling nan, on either side (the nan with
    its sign bit set where ``negative``)."""
    unsigned, bits = SIGNALING[dtype]
    if negative:
        bits |= 1 << (8 * np.dtype(unsigned).itemsize - 1)
    snan = np.array([bits], unsigned).view(dtype)[0]
    n = len(OTHERS)
    x = np.array([snan] * n + OTHERS + [snan], dtype)
    y = np.array([*OTHERS, *[snan] * n, snan], dtype)
    return x, y


@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("function", ["power", "hypot"])
@pytest.mark.parametrize("target", TARGETS)
def test_a_signaling_nan_operand_gives_numpys_result(
    target: str, function: str, dtype: Any, negative: bool
) -> None:
    x, y = _pairs(dtype, negative)
    with np.errstate(all="ignore"):
        want = getattr(np, function)(x, y)
    got = run_on(target, 10**6, f"{function}(x, y)", x=x, y=y)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"x={x}, y={y}")
    number = ~np.isnan(want)
    np.testing.assert_array_equal(got[number], want[number])


@pytest.mark.parametrize("target", TARGETS)
def test_float16_power_one_half_is_pows(target: str) -> None:
    """``power(x, 0.5)`` in float16 is ``pow``'s, as NumPy's float16 loop gives it (``+0``
    for ``-0``, ``inf`` for ``-inf``), not ``sqrt``'s, which NumPy's float32 loop takes for
    a scalar exponent 0.5 (the interpreter computes a float16 body in float32)."""
    x = np.array([-0.0, -np.inf, 0.0, np.inf, 4.0, -1.0, np.nan, 2.0], np.float16)
    with np.errstate(all="ignore"):
        want = np.power(x, np.float16(0.5))
    got = run_on(target, 10**6, "power(x, 0.5)", x=x)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("exponent", ["0.5", "full((1,), 0.5)", "full((8,), 0.5)"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("target", TARGETS)
def test_power_one_half_is_sqrt_only_for_one_exponent(
    target: str, dtype: Any, exponent: str
) -> None:
    """NumPy takes ``sqrt`` for a one-element exponent 0.5 only: an array of 0.5s is
    ``pow``'s (``+0`` for ``-0``, ``inf`` for ``-inf``), which the canonicalization had
    made ``sqrt`` too.  (Finite results within the native ``pow``'s 1 ulp.)"""
    x = np.array([-0.0, -np.inf, 0.0, np.inf, 4.0, -1.0, np.nan, 2.0], dtype)
    with np.errstate(all="ignore"):
        want = np.power(x, eval(exponent, {"full": np.full}))  # (full's default: float64)
    got = run_on(target, 10**6, f"power(x, {exponent})", x=x)
    assert got.dtype == want.dtype
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_max_ulp(got[finite], want[finite], maxulp=1)


@pytest.mark.parametrize("exponent", ["0.5", "full((8,), 0.5)", "y", "3", "-0.5"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.bool_])
@pytest.mark.parametrize("target", TARGETS)
def test_float_power_is_pow_in_float64(target: str, dtype: Any, exponent: str) -> None:
    """``float_power`` computes ``pow`` in float64, whatever its operands, and never takes
    ``sqrt`` for 0.5 (``+0`` at ``-0``, ``inf`` at ``-inf``, where ``power`` of a scalar
    0.5 gives ``-0`` and nan; the trace wrote it as ``power``: found by fuzzing).
    Finite results within the native ``pow``'s 1 ulp."""
    with np.errstate(all="ignore"):
        x = np.array([-0.0, -np.inf, 0.0, np.inf, 4.0, -1.0, np.nan, 2.0]).astype(dtype)
        y = np.full(8, 0.5).astype(dtype)
        names = {"full": np.full}
        want = np.float_power(x, eval(exponent, names, {"y": y}))
    arrays = {"x": x, "y": y} if exponent == "y" else {"x": x}
    got = run_on(target, 10**6, f"float_power(x, {exponent})", **arrays)
    assert got.dtype == want.dtype == np.float64
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_max_ulp(got[finite], want[finite], maxulp=1)


def test_float_power_on_the_numpy_target_is_numpys_bit_for_bit() -> None:
    """The numpy target calls ``np.float_power`` (the C library's ``pow``): every bit of
    NumPy's, signaling nans too (``np.power``'s float64 loop gave another last bit for
    about one result in twenty, and 1 for ``pow(1, sNaN)``; found by fuzzing)."""
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.01, 100, 4096), rng.uniform(-8, 8, 4096)
    for budget in (64, 10**6):
        np.testing.assert_array_equal(
            run_on("numpy", budget, "float_power(a, b)", a=a, b=b), np.float_power(a, b)
        )
    x, y = _pairs(np.float16, False)
    with np.errstate(all="ignore"):
        want = np.float_power(x, y)
    got = run_on("numpy", 10**6, "float_power(x, y)", x=x, y=y)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", ["numpy", "native"])
def test_a_power_of_python_numbers_is_pythons(target: str) -> None:
    """``**`` of literals and weak (Python) numbers is Python's float power, C's ``pow``:
    ``(-0.0) ** 0.5`` is ``0.0`` and ``(-inf) ** 0.5`` is ``inf`` (tdsl folded and computed
    them as NumPy's power of 0-d arrays, which takes ``sqrt``: ``-0.0`` and nan; found by
    fuzzing)."""
    from tdsl.jit import JITTensorKernel

    jit = JITTensorKernel(target=target, threads=1)
    for text, values, want in [
        ("(-0.0) ** 0.5", {}, (-0.0) ** 0.5),
        ("(-inf) ** 0.5", {}, float("-inf") ** 0.5),
        ("s ** 0.5", {"s": -0.0}, (-0.0) ** 0.5),
        ("s ** t", {"s": float("-inf"), "t": 0.5}, float("-inf") ** 0.5),
        ("2 ** -2", {}, 2**-2),
        ("s ** 3", {"s": 3}, 3**3),
    ]:
        got = jit(text, **values)
        assert got == want and np.signbit(got) == np.signbit(want), text
        assert got.dtype == np.asarray(want).dtype, text


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("target", TARGETS)
def test_powers_of_0d_values(target: str, dtype: Any) -> None:
    """0-d operands: NumPy's power of them is a NumPy scalar, which the interpreter's pow
    then wrote into (a TypeError from np.copyto; found by fuzzing)."""
    for x, y in [(4.0, 0.5), (-0.0, 0.5), (2.0, 3.0), (-np.inf, 0.5)]:
        a, b = np.array(x, dtype), np.array(y, dtype)
        with np.errstate(all="ignore"):
            for text, want in [
                ("power(a, b)", np.power(a, b)),
                ("float_power(a, b)", np.float_power(a, b)),
            ]:
                got = run_on(target, 10**6, text, a=a, b=b)
                assert got.shape == () and got.dtype == np.asarray(want).dtype, text
                np.testing.assert_array_equal(got, want)
                assert np.signbit(got) == np.signbit(want), (text, x, y)
