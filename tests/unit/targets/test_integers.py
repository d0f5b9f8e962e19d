"""Integers as values: ``int32`` and ``int64`` computed exactly, with NumPy 2's promotion
(NEP 50: a Python int is weak) and NumPy's results on every target, the cases where
native code would trap or be undefined included (division by zero, ``MIN // -1``,
shifts by the width or more, nan and out-of-range floats converted to integers)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from all_targets import COMPILED_TARGETS, TARGETS, run_on
from round_trips import assert_round_trips

from tdsl import lang
from tdsl.errors import TdslCallError, TdslTypeError
from tdsl.frontend import to_tensordsl
from tdsl.jit import JITTensorKernel

Array = np.ndarray[Any, Any]

I64, I32 = np.iinfo(np.int64), np.iinfo(np.int32)
A64 = np.array([7, -7, 7, -7, 5, I64.min, I64.max, 0, 3, -1, 64, 2**40, I64.min], np.int64)
B64 = np.array([2, 2, -2, -2, 0, -1, 1, 5, 0, 63, 65, -3, 1], np.int64)
A32, B32 = A64.astype(np.int32), B64.astype(np.int32)
F = np.array(
    [
        np.nan,
        np.inf,
        -np.inf,
        3e9,
        -3e9,
        2.7,
        -2.7,
        0.0,
        -0.0,
        1e300,
        2147483647.9,
        -2147483648.9,
        5e-324,
    ]
)
G = np.array([2.0, 0.0, -np.inf, 3, -3, 0.5, 0.7, 1, -1, np.inf, 2, -2, 0.0])
R = np.array([[1, -2, 3], [I64.max, I64.min, 0]], np.int64)

CASES: list[tuple[str, dict[str, Array]]] = [
    ("a + b", {"a": A64, "b": B64}),
    ("a * b - 3", {"a": A32, "b": B32}),
    ("a // b", {"a": A64, "b": B64}),
    ("a // b", {"a": A32, "b": B32}),
    ("a % b", {"a": A64, "b": B64}),
    ("a % b", {"a": A32, "b": B32}),
    ("fmod(a, b)", {"a": A64, "b": B64}),
    ("a << b", {"a": A64, "b": B64}),
    ("a >> b", {"a": A64, "b": B64}),
    ("a << b", {"a": A32, "b": B32}),
    ("a >> b", {"a": A32, "b": B32}),
    ("(a & b) | (a ^ 5)", {"a": A64, "b": B64}),
    ("~a", {"a": A32}),
    ("a / b", {"a": A32, "b": B32}),
    ("exp(a * 0)", {"a": A32}),
    ("abs(a) + -a", {"a": A64}),
    ("maximum(a, b) - minimum(a, 2)", {"a": A64, "b": B64}),
    ("a < b", {"a": A64, "b": B64}),
    ("a == 7", {"a": A32}),
    ("where(a > 0, a, b)", {"a": A64, "b": B64}),
    ("sum(a)", {"a": A32}),
    ("sum(r, axis=0)", {"r": R}),
    ("prod(a[:4])", {"a": A64}),
    ("max(r, axis=1)", {"r": R}),
    ("min(a)", {"a": A32}),
    ("mean(a)", {"a": A32}),
    ("a + 1.5", {"a": A32}),
    ("a + x", {"a": A32, "x": np.ones(13, np.float32)}),
    ("a + b", {"a": A32, "b": B64}),
    ("sign(a) * square(a)", {"a": A32}),
    ("relu(a)", {"a": A64}),
    ("floor(a) + round(a)", {"a": A32}),
    # NumPy's np.round(3) is np.int64(3), a strong int64 (it was a float64)
    ("round(3) + a + floor(-2)", {"a": A32}),
    ("astype(x, int32)", {"x": F}),
    ("astype(x, int64)", {"x": F}),
    ("astype(a, float32)", {"a": A64}),
    ("astype(a, int32)", {"a": A64}),
    ("astype(a, bool)", {"a": A64}),
    ("1 + 1", {}),
    ("7 // 2 * 3", {}),
    ("x // 2.0", {"x": F}),
    ("x // y", {"x": F, "y": G}),
    ("sum(a > 0)", {"a": A64}),
    ("r @ r.T", {"r": R}),
    ("r[:, ::-1] * 3", {"r": R}),
    ("argmax(x)", {"x": F}),
    ("argmin(x[3:])", {"x": F}),
    ("argmax(r, axis=1)", {"r": R}),
    ("argmin(r, axis=0, keepdims=True)", {"r": R}),
    ("argmax(a > 0)", {"a": A64}),
    ("argmax(exp(x[5:]) - 1, axis=0)", {"x": F}),
    ("cumsum(a32, axis=0)", {"a32": A32}),
    ("cumprod(a[:6])", {"a": A64}),
    ("cumsum(a > 0)", {"a": A64}),
    ("clip(a, -7, 2**40)", {"a": A64}),
    ("clip(a32, b32, 5)", {"a32": A32, "b32": B32}),
    ("logical_and(a, b) | logical_not(a32)", {"a": A64, "b": B64, "a32": A32}),
    ("logical_or(a > 3, b)", {"a": A64, "b": B64}),
    ("a ** 3 - a ** 2", {"a": A64}),
    ("a ** 0 + a ** 1 + power(a, 13)", {"a": A32}),
    ("b ** 7", {"b": np.array([3, 200, 255, 0, 16, 5], np.uint8)}),
    # literals beyond 2**53, exact (the native loops rounded them through float64)
    ("a + 9007199254740993", {"a": A64}),
    ("where(a > 0, 9223372036854775807, a) - (a > 9223372036854775806)", {"a": A64}),
    # (the numpy target's constant block for maximum: a raw OverflowError, rounded up)
    ("maximum(a, 9223372036854775806) - minimum(a, -9223372036854775807)", {"a": A64}),
    # a Python int beyond the dtype in a comparison: NumPy 2 compares exactly (refused)
    ("(a < 1099511627776) & (a != -2147483649) | (1099511627776 <= a)", {"a": A32}),
    ("(a > -9223372036854775809) ^ (a == 9223372036854775808)", {"a": A64}),
    # `&`, `|` of booleans and a Python int: int64, as in NumPy 2 (refused)
    ("((a > 0) | 1) + ((a < 0) & 3)", {"a": A64}),
    # logical_and/logical_or of a Python int take its truth, not its bits (they were
    # `&`/`|` of the int: `logical_or(b, 1000)` gave 1000 and 1001)
    ("logical_or(a > 3, 1000) ^ logical_and(a > 0, 2)", {"a": A64}),
    (
        "logical_and(a32, 4) | logical_or(0, b) | logical_and(a > 0, -1)",
        {"a32": A32, "b": B64, "a": A64},
    ),
    # `~` of a Python int is Python's (~1 is -2; it was refused as "not an integer"), and
    # the logical functions take a float's truth, nan included (logical_not(x) failed
    # to verify)
    ("a32 + ~1 - ~(-8)", {"a32": A32}),
    ("logical_not(x) ^ logical_and(x, 2.5) | logical_or(0.0, x > 1)", {"x": F}),
]

NAMES = {
    **{f: getattr(np, f) for f in ("exp", "sum", "prod", "max", "min", "mean", "where")},
    **{f: getattr(np, f) for f in ("maximum", "minimum", "abs", "sign", "square", "floor")},
    "round": np.round,
    "power": np.power,
    "argmax": np.argmax,
    "argmin": np.argmin,
    "cumsum": np.cumsum,
    "cumprod": np.cumprod,
    "clip": np.clip,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_not": np.logical_not,
    "fmod": np.fmod,
    "relu": lambda x: np.maximum(x, 0),
    "astype": lambda x, d: x.astype(d),
    "int32": np.int32,
    "int64": np.int64,
    "float32": np.float32,
}


def numpy_result(text: str, arrays: dict[str, Array]) -> Array:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(eval(text, NAMES, dict(arrays)))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("text", "arrays"), CASES, ids=[c[0] for c in CASES])
def test_integers_are_numpys(target: str, text: str, arrays: dict[str, Array]) -> None:
    got = run_on(target, 10**6, text, **arrays)
    want = numpy_result(text, arrays)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_array_equal(got, want)  # exact, nan where NumPy has nan


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("text", ["min(r, axis=1)", "max(r)", "sum(r, axis=0)", "argmin(r)"])
def test_integer_reductions_tiled_by_a_tiny_budget_are_numpys(target: str, text: str) -> None:
    r = np.concatenate([R, R[::-1] // 3, np.full((2, 3), I64.max)], axis=0)
    got = run_on(target, 4, text, r=r)
    want = numpy_result(text, {"r": r})
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", TARGETS)
def test_int64_is_exact_beyond_two_to_the_53(target: str) -> None:
    a = np.array([2**53 + 1, 2**62 + 3, -(2**60) - 7], np.int64)
    got = run_on(target, 10**6, "a * 3 + 1 - a // 7", a=a)
    np.testing.assert_array_equal(got, a * 3 + 1 - a // 7)
    assert int(run_on(target, 10**6, "sum(a)", a=a)) == int(np.sum(a))


@pytest.mark.parametrize("target", TARGETS)
def test_a_large_integer_matmul_is_exact(target: str) -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(-(2**40), 2**40, (33, 70), dtype=np.int64)
    b = rng.integers(-(2**20), 2**20, (70, 9), dtype=np.int64)
    np.testing.assert_array_equal(run_on(target, 2**10, "a @ b", a=a, b=b), a @ b)


@pytest.mark.parametrize("text", ["x * 2 ** n", "x * 2 ** -n", "x ** (n ** n)"])
def test_a_power_of_integers_by_a_run_time_exponent_says_what_to_write(text: str) -> None:
    """NumPy's ``2 ** n`` of Python ints is an int, or a float for a negative ``n``, and
    ``np.power`` of integer arrays an error there: it depends on ``n``'s value."""
    with pytest.raises(TdslTypeError, match="1:") as err:
        to_tensordsl(text, shapes={"x": (4,)}, dtypes={"x": "float32", "n": int})
    assert "depends on an exponent known only at call time" in str(err.value)
    assert "`2.0 ** n`" in str(err.value)


@pytest.mark.parametrize("target", COMPILED_TARGETS)
@pytest.mark.parametrize(
    "text", ["a * (3 & 6)", "a * (1 | 2)", "a * (s & 6)", "a * (s | t)", "a * (-s | 1)", "s & a"]
)
def test_and_and_or_of_python_ints_are_bitwise_and_weak(target: str, text: str) -> None:
    """``&`` and ``|`` of integer literals or weak integers are NumPy's (Python's) bitwise
    operators, and the result stays weak: ``a * (s & 6)`` keeps ``a``'s int32 (they were
    refused: "`&` takes booleans or integers, not int")."""
    arrays: dict[str, Any] = {"a": A32[:5], "s": 5, "t": 6}
    used = {k: v for k, v in arrays.items() if k in text}
    want = numpy_result(text, used)
    got = JITTensorKernel(target=target, threads=1)(text, **used)  # (s, t: Python ints)
    assert got.dtype == want.dtype == np.int32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", COMPILED_TARGETS)
def test_power_of_two_integer_literals_is_numpys(target: str) -> None:
    """``power(2, 3)`` is NumPy's ``np.power(2, 3)``, an int64 8 (it was refused as an
    exponent known only at call time; found by fuzzing)."""
    jit = JITTensorKernel(target=target, threads=1)
    for a, n in ((2, 3), (-3, 3), (7, 0), (2, 63)):
        got, want = jit(f"power({a}, {n})"), np.power(a, n)
        assert got.dtype == want.dtype and got == want


@pytest.mark.parametrize("target", COMPILED_TARGETS)
def test_clip_bounds_beyond_the_dtype_on_their_own_side_bound_nothing(target: str) -> None:
    """As in NumPy 2: ``clip(u8, -2, 300)`` is ``u8`` (the language refused the bounds as
    out of bounds for uint8, where the trace of ``np.clip`` took them; found by fuzzing);
    a bound beyond the other side is still NumPy's error."""
    jit = JITTensorKernel(target=target, threads=1)
    u = np.array([5, 0, 200], np.uint8)
    for text, x, want in [
        ("clip(x, -2, 300)", u, np.clip(u, -2, 300)),
        ("clip(x, -2, 100)", u, np.clip(u, -2, 100)),
        ("clip(x, -2**40, 2**40)", A32, np.clip(A32, -(2**40), 2**40)),
    ]:
        got = jit(text, x=x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    with pytest.raises(TdslTypeError, match="the integer 300 is out of bounds for uint8"):
        jit("clip(x, 300, 400)", x=u)


@pytest.mark.parametrize("target", COMPILED_TARGETS)
def test_weak_int_clip_bounds_beyond_the_dtype_on_their_own_side_bound_nothing(
    target: str,
) -> None:
    """The same for a Python int known at call time: ``clip(u8, s, 3)`` with ``s = -1``
    was a call error that said NumPy raises (found by fuzzing); beyond the other side, or
    used elsewhere too, the value is still NumPy's error."""
    jit = JITTensorKernel(target=target, threads=1)
    u = np.array([0, 1, 5, 200], np.uint8)
    for text, s, want in [
        ("clip(x, s, 3)", -1, np.clip(u, -1, 3)),
        ("clip(x, s, 3)", 2, np.clip(u, 2, 3)),
        ("clip(x, 1, s)", 300, np.clip(u, 1, 300)),
        ("clip(x, 1, s)", 4, np.clip(u, 1, 4)),
        ("clip(x, 0, s)", 2**40, np.clip(A32, 0, 2**40)),
    ]:
        x = A32 if s == 2**40 else u
        got = jit(text, x=x, s=s)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    for text, s in [("clip(x, s, 3)", 300), ("clip(x, 0, s)", -1), ("clip(x, s, 3) + s", -1)]:
        with pytest.raises(TdslCallError, match=f"got {s}, which does not fit"):
            jit(text, x=u, s=s)


@pytest.mark.parametrize("target", COMPILED_TARGETS)
def test_weak_int_arithmetic_with_literals_is_exact_or_refused(target: str) -> None:
    """``s + 1`` of a Python int is computed in int64: at ``s = 2**63 - 1`` it wrapped, and
    ``a * (s + 1)`` of a float ``a`` flipped its sign where NumPy's exact Python int
    does not (found by fuzzing); ``t * (s + 1)`` of an ``i32`` ``t`` wrapped where NumPy
    raises.  Each ``s`` whose arithmetic fits is NumPy's; the first beyond is an error."""
    jit = JITTensorKernel(target=target, threads=1)
    a, t = np.array([0.5, -2.0], np.float32), np.array([1, -3], np.int32)
    top, bottom = 2**63 - 1, -(2**63)
    for text, x, fits, beyond in [
        ("x * (s + 1)", a, top - 1, top),
        ("x * (2 - s)", a, bottom + 3, bottom + 2),
        ("x * (s * 3)", a, top // 3, top // 3 + 1),
        ("x * (s * -3)", a, -(top // 3), -(top // 3) - 1),
        ("x * -s", a, bottom + 1, bottom),
        ("x * ((s + 1) * 2)", a, 2**62 - 2, 2**62 - 1),
        ("x * (s + 1)", t, 2**31 - 2, 2**31 - 1),
        ("x * (s - 1)", t, -(2**31) + 1, -(2**31)),
        ("x + s // 2", t, 2**32 - 1, 2**32),  # (`//`, `<<`, `~`, `**` too: found by fuzzing)
        ("x + s // -3", np.uint8([0, 200]), -767, -768),
        ("x + (s << 1)", t, 2**30 - 1, 2**30),
        ("x + ~s", t, -(2**31), -(2**31) - 1),
        ("x + s ** 2", t, -46340, -46341),
        ("x * (s // -1)", a, bottom + 1, bottom),
        ("x + (s >> 63)", np.uint8([0, 200]), 5, -1),  # (shifts of 63 and more too)
        ("x * (s << 63)", a, -1, 1),
    ]:
        with np.errstate(over="ignore"):  # (NumPy's int32 product wraps, as tdsl's)
            want = eval(text, {"x": x, "s": fits})
        got = jit(text, x=x, s=fits)
        assert got.dtype == want.dtype, text
        np.testing.assert_array_equal(got, want, err_msg=text)
        with pytest.raises(TdslCallError, match=f"got {beyond}, which does not fit"):
            jit(text, x=x, s=beyond)
    # (where only `where` branches read the result, NumPy wraps the exact int to the
    # branch's dtype: int64's low bits are the same, and every int64 `s` is taken)
    c, u, t64 = np.array([True, False]), np.array([0, 200], np.uint8), np.array([1, 2])
    for text, arrays, s in [
        ("where(c, u, s + 1)", {"c": c, "u": u}, top),
        ("where(c, u, s * 3)", {"c": c, "u": u}, 2**62),
        ("where(c, s + 1, t64)", {"c": c, "t64": t64}, top),  # (an int64 branch: no cast)
        ("where(c, s + 1, 1)", {"c": c}, top),
    ]:
        want = eval(f"np.{text}", {"np": np, **arrays, "s": s})
        got = jit(text, **arrays, s=s)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", COMPILED_TARGETS)
def test_a_python_int_meets_a_float32_through_a_double_as_in_numpy(target: str) -> None:
    """NumPy converts a Python int to a double, then to float32: two roundings, where a
    direct int64 to float32 cast rounds once (they differ above 2**53; found by
    fuzzing)."""
    jit = JITTensorKernel(target=target, threads=1)
    for dtype in (np.float32, np.float16):
        x = np.array([1, 2], dtype)
        for s in (2**62 + 2**38 + 1, 2**53 + 1, 2**24 + 1, 3):
            with np.errstate(over="ignore"):
                want = x * s
                got = jit("x * s", x=x, s=s)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_and_of_a_python_int_and_a_float_blames_the_float() -> None:
    with pytest.raises(TdslTypeError, match=r"1:10: .*not f64\[\] \(the number 1.5\)"):
        to_tensordsl("a * (s & 1.5)", shapes={"a": (4,)}, dtypes={"a": "int32", "s": int})


@pytest.mark.parametrize(
    ("text", "dtypes", "message"),
    [
        ("a + 3000000000", {"a": "int32"}, "the integer 3000000000 is out of bounds for int32"),
        ("a ** b", {"a": "int64", "b": "int64"}, "`**` of integers (i64[4], i64[4]) is not"),
        ("a ** -2", {"a": "int32"}, "integers to negative integer powers are not allowed"),
        ("x & a", {"a": "int64", "x": "float32"}, "`&` of floats"),
        ("a << 1.5", {"a": "int64"}, "`<<` of floats"),
    ],
)
def test_what_integers_cannot_do_is_a_located_error(
    text: str, dtypes: dict[str, str], message: str
) -> None:
    with pytest.raises(TdslTypeError, match="1:") as err:
        to_tensordsl(text, shapes={k: (4,) for k in dtypes}, dtypes=dtypes)
    assert message in str(err.value)


def test_integer_literals_are_weak_as_in_numpy_2() -> None:
    module = to_tensordsl("a * 2 + 1", shapes={"a": (4,)}, dtypes={"a": "int32"})
    assert "tensor<4xi32>" in str(module) and "i64" not in str(module)
    module = to_tensordsl("x * 2", shapes={"x": (4,)}, dtypes={"x": "float16"})
    assert "f64" not in str(module)


def test_integer_ops_print_parse_and_round_trip() -> None:
    text = "((a // b) % 3 << 2 >> 1 ^ ~a) & (a | b)"
    module = to_tensordsl(text, shapes={"a": (4,), "b": (4,)}, dtypes={"a": "int64", "b": "int64"})
    printed = str(module)
    for name in ("floor_divide", "remainder", "left_shift", "right_shift", "bitwise_xor"):
        assert f"tensordsl.{name}" in printed
    for name in ("invert", "bitwise_and", "bitwise_or"):
        assert f"tensordsl.{name}" in printed
    assert_round_trips(module)


def test_lang_computes_integers_eagerly_as_numpy() -> None:
    with np.errstate(over="ignore"):  # MIN // -1: NumPy's own warning
        np.testing.assert_array_equal(lang.floor_divide(A64, B64 | 1), A64 // (B64 | 1))
    np.testing.assert_array_equal(lang.left_shift(A32, B32 & 7), A32 << (B32 & 7))
    np.testing.assert_array_equal(lang.astype(F[3:9], np.int64), F[3:9].astype(np.int64))


def test_dask_computes_integers_through_its_own_arrays() -> None:
    da = pytest.importorskip("dask.array")
    a = np.arange(-500, 524, dtype=np.int64).reshape(32, 32) * 7919
    fn = JITTensorKernel(target="numpy").compile(
        "sum(a // 3 + (a << 2), axis=0)", shapes={"a": a.shape}, dtypes={"a": "int64"}
    )
    got = fn(da.from_array(a, chunks=(8, 32)))
    assert isinstance(got, da.Array)
    np.testing.assert_array_equal(got.compute(), np.sum(a // 3 + (a << 2), axis=0))


def test_a_decorated_function_takes_integer_annotations() -> None:
    import tdsl
    from tdsl.lang import f32, i64

    def next_token(logits: f32[4, 10], bias: i64[10]):  # type: ignore[no-untyped-def]
        return argmax(logits + bias, axis=-1)  # type: ignore[name-defined]  # noqa: F821

    fn = tdsl.function(next_token)
    x = np.random.default_rng(0).standard_normal((4, 10)).astype(np.float32)
    b = np.arange(10, dtype=np.int64)
    got = fn(x, b)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.argmax(x + b, axis=-1))
    assert repr(lang.i64[10]) == "i64[10]" and repr(lang.i32[()]) == "i32[]"
