"""``tdsl.trace``: plain NumPy functions compiled unchanged, checked against NumPy
running the same function; each refused construct is one located error."""

from __future__ import annotations

import copy
import functools
import inspect
import pickle
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tdsl
from tdsl.errors import (
    TdslBudgetWarning,
    TdslCallError,
    TdslError,
    TdslLoopsBudgetWarning,
    TdslTypeError,
    TdslZeroDivisionError,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
from gpt2_numpy import gpt2, random_params

RNG = np.random.default_rng(7)
X = RNG.standard_normal((8, 4)).astype(np.float32)
W = RNG.standard_normal((4, 3)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)


def mlp(x, w, b):
    h = np.maximum(x @ w + b, 0)
    return h / np.sqrt(h.shape[-1])


def _same(got, expected, rtol: float = 2e-6, atol: float = 1e-12) -> None:
    """NumPy's dtype and shape, and its values (to rounding on the native target)."""
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def test_a_numpy_function_runs_as_numpy_runs_it(jit_target: str) -> None:
    """On each target (the suite's ``jit_target`` fixture sets the default)."""
    traced = tdsl.trace(mlp)
    # np.sqrt of an int is a float64 scalar: it promotes the f32 result, as in NumPy 2
    _same(traced(X, W, B), mlp(X, W, B))
    assert traced(X, W, B).dtype == np.float64
    assert traced.kernels[0].target == jit_target


def test_the_program_reads_back_to_the_same_kernel() -> None:
    traced = tdsl.trace(mlp)
    program = traced.program(X, W, B)
    assert program.startswith("def mlp(x: f32[8, 4], w: f32[4, 3], b: f32[3]):")
    again = tdsl.compile(program, kernel="mlp")
    assert str(again.ir.module("tensordsl")) == str(traced.compile(X, W, B).ir.module("tensordsl"))
    _same(again(x=X, w=W, b=B), mlp(X, W, B))


def test_the_cache_key_is_structure_shapes_dtypes_and_static_values() -> None:
    def scaled(x, k):
        return x * k

    traced = tdsl.trace(scaled, static_argnames="k")
    traced(X, 2.0)
    traced(X + 1, 2.0)  # new values, same key
    assert len(traced.kernels) == 1
    traced(X.astype(np.float64), 2.0)  # a new dtype
    traced(X[:2], 2.0)  # a new shape
    traced(X, 3.0)  # a new static value
    assert len(traced.kernels) == 4
    np.testing.assert_array_equal(traced(X, 3.0), X * 3.0)


def test_static_values_equal_in_python_but_not_to_numpy_are_kernels_of_their_own() -> None:
    """``0.0 == -0.0`` and ``frozenset({1}) == frozenset({1.0})``, but NumPy's results
    differ: each is a kernel of its own (they shared one, the second call's result
    stale; found by fuzzing)."""
    signed = tdsl.trace(lambda x, k: np.copysign(x, k), static_argnames="k")
    signed(X, 0.0)
    np.testing.assert_array_equal(signed(X, -0.0), np.copysign(X, -0.0))
    nested = tdsl.trace(lambda x, k: np.copysign(x, k[0]), static_argnames="k")
    nested(X, (0.0,))
    np.testing.assert_array_equal(nested(X, (-0.0,)), np.copysign(X, -0.0))
    ints = np.arange(3)
    summed = tdsl.trace(lambda x, k: x * sum(k), static_argnames="k")
    assert summed(ints, frozenset({1})).dtype == np.int64
    _same(summed(ints, frozenset({1.0})), ints * 1.0)


def test_a_norms_ord_given_at_run_time_says_to_make_it_static() -> None:
    """``np.linalg.norm(x, ord=p)`` of a Python-number argument ``p``: the norm it chooses
    is needed when tracing, so the error names ``p`` and ``static_argnames`` (it said
    ``bool(...)`` of a traced array, or, for a matrix, that NumPy could not compute it;
    found by fuzzing)."""
    norm = tdsl.trace(lambda x, p: np.linalg.norm(x, ord=p))
    for x in (X[0], X):
        with pytest.raises(TdslCallError, match=r'`ord` of `np.linalg.norm`.*"p"'):
            norm(x, 1)
    static = tdsl.trace(lambda x, p: np.linalg.norm(x, ord=p), static_argnames="p")
    _same(static(X[0], 1), np.linalg.norm(X[0], ord=1))


def test_python_numbers_are_weak_inputs_not_constants() -> None:
    def fn(x, s, n):
        return x * (s + 1) - n * 2

    traced = tdsl.trace(fn)
    for s, n in ((2.5, 3), (-0.5, 7), (1e30, -2)):
        got = traced(X, s, n)
        _same(got, fn(X, s, n))  # f32: a Python number takes the array's dtype
    assert len(traced.kernels) == 1  # new values, one kernel
    assert "s: float, n: int" in traced.program(X, 1.0, 1)
    traced(X, 1, 1)  # an int where a float was: another kernel
    assert len(traced.kernels) == 2
    # NumPy's function of a Python number is a float64 scalar: it promotes
    _same(tdsl.trace(lambda x, s: x * np.exp(s))(X, 0.5), X * np.exp(0.5))


def test_a_python_number_argument_is_weak_in_heaviside_and_select(jit_target: str) -> None:
    """A Python-number argument is weak where NumPy's ``heaviside`` and ``select`` meet
    it, as a Python number written in the function is (NEP 50): ``np.heaviside(x, s)``
    of float32 ``x`` is float32, ``np.select`` with an ``int`` default over int32 or
    uint8 choices keeps their dtype (they were float64 and int64; found by fuzzing)."""
    x = np.array([-1.5, 0.0, 2.0, np.nan], np.float32)
    small = np.array([0, 1, 2, 250], np.uint8)
    cases: list[tuple[Any, tuple[Any, ...]]] = [
        (lambda x, s: np.heaviside(x, s), (x, 0.5)),
        (lambda x, s: np.heaviside(s, x), (x, -0.5)),
        (lambda x, s: np.heaviside(x, s), (small, 2)),  # float16, as NumPy's loop
        (lambda x, s: np.select([x > 1], [x], s), (x, 0.5)),
        (lambda x, s: np.select([x > 1], [s], x), (x, 0.5)),
        (lambda x, s: np.select([x > 1], [x], s), (small.astype(np.int32) - 3, 2)),
        (lambda x, s: np.select([x > 1], [x], s), (small, 7)),
    ]
    for fn, args in cases:
        _same(tdsl.trace(fn)(*args), fn(*args))


def test_pythons_other_operators_on_python_numbers_stay_weak() -> None:
    """``**``, ``%`` and shifts of Python numbers give a Python number,
    weak: attention's ``q / d ** 0.5`` of a Python int ``d`` stays float32 (it was
    float64: the tracer wrote NumPy's ``power``, a float64 scalar; found by fuzzing)."""

    def fn(x, d, s, n):
        return x / d**0.5 + x * s**2 + x * (n % 3) + x * (s % 0.75) + x * (n << 2)

    traced = tdsl.trace(fn)
    for d, s, n in ((64, 1.5, 5), (2, -0.25, 11)):
        _same(traced(X, d, s, n), fn(X, d, s, n))
    assert "(d ** 0.5)" in traced.program(X, 64, 1.5, 5)
    # unary `+` of a Python number is that number (it was np.positive's float64 scalar)
    unary = tdsl.trace(lambda x, s, n: x * +s + +x * +(n * 2))
    by_name = tdsl.trace(lambda x, s: x * np.positive(s))  # a NumPy scalar: strong
    for s, n in ((2.5, 3), (-0.5, -2)):
        _same(unary(X, s, n), X * +s + +X * +(n * 2))
        _same(by_name(X, s), X * np.positive(s))


def test_an_int_to_an_int_power_is_pythons_and_numpys_ufuncs_are_strong(jit_target: str) -> None:
    """``n ** 2`` of a Python int ``n`` is a Python int, weak: ``x * n ** 2`` keeps
    ``x``'s dtype (it was refused: the tracer wrote NumPy's ``power``, and the language
    refused ``power`` of a weak int); ``n ** -2`` is a float, as in Python.  A ufunc
    called by name on Python numbers (``np.power(n, 2)``, ``np.add(s, 1)``) gives a
    NumPy scalar, strong (the tracer kept it weak: float32 where NumPy gives float64)."""
    xi = np.arange(1, 9, dtype=np.int32).reshape(8, 1)

    def fn(x, n, s):
        return x * n**2 + x * n**0 - n**3 + x * n**-2 + x * (s**2 - -s)

    def by_name(x, n, s):
        return x * np.power(n, 2) + x * np.add(s, 1) - np.negative(s) * x

    for x in (X, xi):
        for n, s in ((3, 2.5), (-7, -0.5), (0, 0.0)):
            with np.errstate(divide="ignore"):  # 0 ** -2 (Python's error; NumPy's inf)
                if n:
                    _same(tdsl.trace(fn)(x, n, s), fn(x, n, s), rtol=1e-15)
                _same(tdsl.trace(by_name)(x, n, s), by_name(x, n, s))
    with pytest.raises(TdslError, match=r"`round\(\)` of a 0-d traced value"):
        tdsl.trace(lambda x, s: x * round(s))(X, 2.5)
    _same(tdsl.trace(lambda x: round(x, 1))(X), np.round(X, 1))  # an array's: NumPy's


def test_pythons_comparisons_and_divmod_of_python_numbers_are_pythons(jit_target: str) -> None:
    """Python's comparison of Python numbers is a Python ``bool`` (``s > 0`` was
    ``np.True_``), and so is ``&`` of two; ``divmod(n, 2)`` is two Python numbers, weak
    (``u8 + divmod(n, 2)[0]`` was int64, NumPy's ``np.divmod``); the same called by name
    stay NumPy's (found by fuzzing the types of traced scalars)."""
    u8 = np.arange(4, dtype=np.uint8)

    def compare(x, s, n):
        return s > 0, s > 1, s == n, s != 2.5, (s > 1) & (n < 5), s >= np.float32(2)

    def by_name(x, s, n):
        return np.greater(s, 0), np.equal(s, n), np.divmod(n, 2), (s > 1) & (x[0] > 0)

    def division(x, s, n):
        return divmod(n, 3), divmod(s, 0.75), x + divmod(n, 2)[0], x * divmod(s, 2)[1]

    for s, n in ((2.5, 3), (-1.0, 7), (3.0, 3)):
        for fn in (compare, by_name, division):
            got, want = tdsl.trace(fn)(u8, s, n), fn(u8, s, n)
            assert _types(got) == _types(want), fn.__name__
            for g, w in zip(got, want, strict=True):
                if isinstance(w, np.ndarray):
                    _same(g, w)
                else:
                    assert g == w
    assert tdsl.trace(division)(u8, 2.5, 3)[2].dtype == np.uint8


PYTHON_BOOLS = {
    "x * (2 * (s < 0))": lambda x, s: x * (2 * (s < 0)),
    "x * ((s < 0) + (s < 1))": lambda x, s: x * ((s < 0) + (s < 1)),
    "x * (s * (s > 0))": lambda x, s: x * (s * (s > 0)),
    "x * -(s < 0) + x * ~(s < 1)": lambda x, s: x * -(s < 0) + x * ~(s < 1),
    "x * abs(s < 0)": lambda x, s: x * abs(s < 0),
    "x * ((s < 0) / 2)": lambda x, s: x * ((s < 0) / 2),
    "x * (((s < 0) & (s < 1)) * 3)": lambda x, s: x * (((s < 0) & (s < 1)) * 3),
    "x * ((s < 0) == (s < 1))": lambda x, s: x * ((s < 0) == (s < 1)),
    "x * (s < 0)": lambda x, s: x * (s < 0),
    "(x > 0) & (s < 1)": lambda x, s: (x > 0) & (s < 1),
    "(x > 0) + (s < 1)": lambda x, s: (x > 0) + (s < 1),
    "where(s < 0, x, 0)": lambda x, s: np.where(s < 0, x, 0),
    "x * exp(s < 0)": lambda x, s: x * np.exp(s < 0),
    "(s < 0) & (s < 1)": lambda x, s: (s < 0) & (s < 1),
    # (NumPy's functions take a Python bool as a bool: `minimum` of two is `&`)
    "x * minimum(s < 0, s < 1)": lambda x, s: x * np.minimum(s < 0, s < 1),
    "maximum(s < 0, x)": lambda x, s: np.maximum(s < 0, x),
    "x + sum(s < 0)": lambda x, s: x + np.sum(s < 0),
}


@pytest.mark.parametrize("text", list(PYTHON_BOOLS))
def test_pythons_bools_of_python_numbers_are_ints_in_their_arithmetic(
    jit_target: str, text: str
) -> None:
    """A comparison of Python numbers is a Python bool, which Python's arithmetic takes as
    an int: ``x * (2 * (s < 0))`` of a float32 ``x`` is float32 (the language computed
    ``2 * (s < 0)`` as an int64 array, so float64), and ``(s < 0) + (s < 0)`` is 2 (it
    was ``|``: 1).  Where it meets an array it is a bool (``x`` keeps its dtype); ``exp``
    of it is a float16, NumPy's.  The language's expression and the traced function
    both."""
    x = np.array([0.5, -2.0, 3.0], np.float32)
    reference = PYTHON_BOOLS[text]
    shapes, dtypes = {"x": x.shape, "s": ()}, {"x": np.float32, "s": float}
    if "x" not in text:
        del shapes["x"], dtypes["x"]
    kernel = tdsl.compile(text, shapes=shapes, dtypes=dtypes)
    for s in (-1.5, 0.5, 2.0):
        want = np.asarray(reference(x, s))  # (of Python's bools alone, a bool)
        got = kernel(**{"x": x, "s": s}) if "x" in text else kernel(s=s)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        traced = tdsl.trace(reference)(x, s)
        assert type(traced) is type(reference(x, s))
        assert np.asarray(traced).dtype == want.dtype
        np.testing.assert_array_equal(traced, want)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, s: (s < 0) << (s < 0),
        lambda x, s: True >> (s < 0),
        lambda x, s: np.abs(s < 0),
        lambda x, s: x * np.abs(s < 0),
        lambda x, s: np.add(s < 0, s > 1),
        lambda x, s: +(s < 0),
        lambda x, s: x + +(s < 0),
    ],
)
def test_python_and_numpy_on_a_python_bool_as_each_computes_it(jit_target: str, fn: Any) -> None:
    """A Python bool (``s < 0``): Python's shift of two is an int (it came back an
    ``np.int64``), NumPy's ``np.abs`` of one a NumPy bool (an ``np.int64``, and ``x *
    np.abs(s < 0)`` float64 for a float32 ``x``), ``np.add`` of two their ``|``, and
    Python's ``+`` of one the int it is (refused as ``np.positive`` of booleans; found by
    fuzzing Python's numbers in traced functions)."""
    for s in (-1.5, 0.5, 2.0):
        want, got = fn(X, s), tdsl.trace(fn)(X, s)
        assert type(got) is type(want)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [0, 2, -2, 3])
def test_a_negative_constant_to_a_python_number_power_keeps_its_sign(
    jit_target: str, n: int
) -> None:
    """``(-4.5) ** n`` of a Python int ``n``: the tracer wrote ``(-4.5 ** n)``, which
    the language reads as ``-(4.5 ** n)``: -20.25 for ``n = 2`` (found by fuzzing).
    Negative literals are written in parentheses."""
    for fn in (
        lambda x, n: (-4.5) ** n,
        lambda x, n: x * (-2.0) ** n,
        lambda x, n: (-2) ** (n * 1.0),
    ):
        want, got = fn(X, n), tdsl.trace(fn)(X, n)
        assert type(got) is type(want)
        np.testing.assert_array_equal(got, want)


def test_a_numpy_scalar_type_of_a_traced_value_says_what_to_write() -> None:
    """``np.float32(s)`` of a traced Python number needs its value: the error said so
    without naming the call or what to write instead."""
    with pytest.raises(TdslError, match=r"NumPy scalar type called on one \(`np.float32\(s\)`"):
        tdsl.trace(lambda x, s: x * np.float32(s))(X, 2.5)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, s: x * (s * True),
        lambda x, s: x * (True / (s + 3)),
        lambda x, s: x * ((s < 0) & True) * 2,
        lambda x, s: x * (False - (s > 1)),
    ],
)
def test_a_python_bool_constant_in_pythons_arithmetic_is_pythons(jit_target: str, fn: Any) -> None:
    """``s * True`` of a Python float ``s`` is a Python float: ``x * (s * True)`` of a
    float32 ``x`` is float32 (the tracer wrote ``True`` as a bool array, so float64;
    found by fuzzing Python's arithmetic on Python numbers)."""
    for s in (-1.5, 0.5, 2.0):
        want, got = fn(X, s), tdsl.trace(fn)(X, s)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, n: x + n // 0,
        lambda x, n: x * (n % 0),
        lambda x, n: x / (n / 0.0),
        lambda x, n: divmod(n, False),
        lambda x, n: x + 0 // n + n // 0,
    ],
)
def test_a_python_number_divided_by_a_zero_literal_is_pythons_error(fn: Any) -> None:
    """Python refuses ``n // 0`` of a Python number at every call (ZeroDivisionError):
    a traced function's is a located error, a ``ZeroDivisionError`` too (it computed
    NumPy's 0, with NumPy's warning from the generated code)."""
    with pytest.raises(ZeroDivisionError):
        fn(X, 3)
    with pytest.raises(TdslZeroDivisionError, match="of a Python number by zero") as caught:
        tdsl.trace(fn)(X, 3)
    assert caught.value.location is not None and caught.value.location.file == __file__
    # NumPy's ufuncs and arrays divide by zero as NumPy does
    with np.errstate(divide="ignore", invalid="ignore"):
        numpys = tdsl.trace(lambda x, n: x // 0 + np.floor_divide(n, 0))
        _same(numpys(X, 3), X // 0 + np.floor_divide(3, 0))


@pytest.mark.parametrize("s", [3.0, -2.5, -0.0, -np.inf, np.nan, -3, 7, True])
def test_abs_of_a_python_number_is_pythons_and_np_abs_is_strong(jit_target: str, s: Any) -> None:
    """``x * abs(s)`` of a float32 ``x`` and a Python number ``s`` is float32: Python's
    ``abs`` gives a Python number, weak (the tracer wrote the language's ``abs``, which
    was NumPy's ``np.abs``: a float64 result).  ``np.abs(s)`` stays a float64 scalar."""

    def python(x, s):
        return x * abs(s) + x * abs(-s * 2)

    def numpy(x, s):
        return x * np.abs(s)

    for fn in (python, numpy):
        want, got = fn(X, s), tdsl.trace(fn)(X, s)
        assert got.dtype == want.dtype, fn.__name__
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "name",
    [
        *("add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder"),
        *("bitwise_and", "bitwise_or", "bitwise_xor"),
    ],
)
def test_each_operator_ufunc_by_name_on_python_numbers_is_strong(
    jit_target: str, name: str
) -> None:
    """``np.add(s, 1)`` of a Python int is an ``int64``: ``x * np.add(s, 1)`` of an int32
    ``x`` is int64, and does not wrap at 2**31 (the tracer spelled it ``(s + 1)``, weak
    again: int32, 0 for 2**32; float16 for a float ``s`` where NumPy gives float64)."""
    ufunc = getattr(np, name)

    def fn(x, s):
        return x * ufunc(s, 3)

    for x, s in ((np.array([2**30, 3], np.int32), 7), (np.array([1.5, 2.0], np.float16), 2.5)):
        if name.startswith("bitwise") and isinstance(s, float):
            continue
        want = fn(x, s)
        got = tdsl.trace(fn)(x, s)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [np.int64(3), np.int32(2), np.uint8(5), np.int64(0)])
def test_an_integer_power_by_a_numpy_integer_constant(jit_target: str, n: Any) -> None:
    """``x ** np.int64(3)``: the exponent is a constant of the trace, known when compiling,
    so NumPy's integer power is the product, in the dtype the two promote to (it was
    refused as "an exponent known only at call time"; found by fuzzing)."""
    x = np.array([1, 2, 3, -4, 7], np.int32)
    for fn in (lambda x: x**n, lambda x: np.power(x, n) + 1):
        want = fn(x)
        got = tdsl.trace(fn)(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.reshape(np.array([6, 4])),
        lambda x: np.reshape(x, np.array([6, 4])) + 1,
        lambda x: x.reshape(np.int64(6), np.array(4)),
        lambda x: x.sum(axis=np.array(0)),
        lambda x: x[: np.array(5)],
        lambda x: x[np.int32(1) : np.array(9) : np.array(2)],
        lambda x: np.broadcast_to(x, np.array([2, 24])),
        lambda x: np.split(x, np.array([2, 5]))[1],
        lambda x: np.transpose(x.reshape(4, 6), np.array([1, 0])),
    ],
)
def test_integer_arrays_known_when_tracing_are_shapes_axes_and_bounds(fn: Any) -> None:
    """NumPy takes a 0-d integer array wherever an int goes, and a 1-d one for a shape, a
    permutation or split points; the trace made them inputs of the kernel, and the
    language refused them ("expected an integer ..., found `c1`"; found by fuzzing)."""
    x = np.arange(24.0)
    _same(tdsl.trace(fn)(x), fn(x))


def test_a_split_into_one_part_is_a_tuple_of_one() -> None:
    """picoGPT splits heads with ``np.split(x, n_head, axis=-1)``: at ``n_head=1`` the one
    part was bound as the tuple itself, a located error (found by fuzzing)."""

    def fn(x):
        (a,) = np.split(x, 1, axis=-1)
        return a * 2 + np.array_split(x, 1)[0] + np.split(x, [])[0]

    _same(tdsl.trace(fn)(X), fn(X))


def test_more_ndarray_methods_and_a_located_error_for_the_rest() -> None:
    """``x.round()``, ``x.cumprod()``, ``x.dot()``, ``x.flatten()``, ``x.mT``... run as
    NumPy's functions; an ndarray attribute tdsl lacks is a located ``TdslError``, not an
    ``AttributeError`` from inside the tracer (found by fuzzing)."""

    def fn(x):
        y = x.round() + x.cumprod(0) + x.dot(x.T) @ x + x.conj() + x.mT.T + x.real
        return +y.flatten() * (x.itemsize + x.nbytes)

    _same(tdsl.trace(fn)(X), fn(X), rtol=1e-5)
    with pytest.raises(TdslError, match=r"`x.tofile` of an array is not supported when traced"):
        tdsl.trace(lambda x: x.tofile("f"))(X)


def test_python_numbers_a_numpy_function_makes_arrays_of_are_strong() -> None:
    """``np.hstack``/``np.stack``/``np.vstack``/``np.concatenate`` and ``np.clip``'s first
    argument convert Python numbers with ``np.asarray``: float64 or int64, strong (tdsl
    kept them weak, float32 and uint8 results; found by fuzzing)."""
    y = np.arange(3, dtype=np.float32)
    u = np.arange(3, dtype=np.uint8)
    cases = [
        (lambda y, s: np.hstack([y, 1.0, s]), (y, 0.5)),
        (lambda y, s: np.stack([s, y[0]]), (y, 0.5)),
        (lambda u, n: np.vstack([n, u[:1]]), (u, 7)),
        (lambda y, s: np.clip(0.5, y[:, None], 2.0) + np.maximum(s, y), (y, 0.25)),
    ]
    for fn, args in cases:
        _same(tdsl.trace(fn)(*args), fn(*args))


def test_a_python_bool_operand_is_a_bool() -> None:
    """``x * True``, ``m & True``, ``np.where(m, x, True)``: the tracer wrote ``True``,
    which the language reads only as a keyword's value (found by fuzzing)."""
    m = X > 0
    cases = [
        (lambda x, s: x * s, (X, True)),
        (lambda m: (m & True) | np.logical_or(m, False), (m,)),
        (lambda m, x: np.where(m, x, True), (m, X)),
        (lambda m: m.sum(axis=0, keepdims=True), (m,)),
        (lambda m, x: np.where(~m, 0.0, x) + np.invert(m), (m, X)),  # not, as NumPy's
    ]
    for fn, args in cases:
        _same(tdsl.trace(fn)(*args), fn(*args))


def test_static_argnames_must_name_parameters() -> None:
    # (an int was a raw TypeError; found by fuzzing)
    with pytest.raises(tdsl.TdslOptionError, match="static_argnames must be a parameter name"):
        tdsl.trace(lambda x: x, static_argnames=5)  # type: ignore[arg-type]


def test_static_argnums_name_static_parameters_by_position() -> None:
    """As jax.jit's ``static_argnums``: a position (negative from the last) among the
    positional parameters, beside ``static_argnames``; a position with no parameter, or
    not an int, is an error."""

    def fn(x, n, axis, scale=2.0):
        return np.sum(x[:n], axis=axis) * scale

    for nums in (1, (1, 2), (-3, 2)):
        traced = tdsl.trace(fn, static_argnums=nums, static_argnames="axis")
        _same(traced(X, 3, 1), fn(X, 3, 1))
        assert set(traced.static_argnames) == {"n", "axis"}
        _same(traced(X, 5, 0), fn(X, 5, 0))
    with pytest.raises(
        TdslCallError, match=r"static_argnums gives 4, but `\S*fn` has 4 positional"
    ):
        tdsl.trace(fn, static_argnums=4)
    with pytest.raises(TdslCallError, match=r"has 1 positional parameter.*name a parameter of"):
        tdsl.trace(lambda x, *args: x, static_argnums=1)
    for bad in ("1", 1.0, (1, None), True):
        with pytest.raises(tdsl.TdslOptionError, match="static_argnums must be a position"):
            tdsl.trace(fn, static_argnums=bad)  # type: ignore[arg-type]


def test_clip_with_one_bound_none_is_numpys() -> None:
    """``np.clip(x, 0, None)`` (a ReLU as written in plain NumPy) and ``x.clip(None, 1)``:
    ``None`` was written as a name, an unknown-name error (found by fuzzing)."""
    x = np.array([-1.0, 0.5, np.nan, 3.0, -0.0], np.float32)
    for fn in (lambda x: np.clip(x, 0, None), lambda x: x.clip(None, 1) * 2):
        np.testing.assert_array_equal(tdsl.trace(fn)(x), fn(x))
        assert tdsl.trace(fn)(x).dtype == fn(x).dtype


def test_clip_by_python_ints_known_at_call_time_is_numpys(jit_target: str) -> None:
    """A Python-int bound given at call time (or computed from one) of an integer array,
    beyond the dtype on its own side, bounds nothing, as in NumPy 2: ``-s`` was wrapped
    to uint8 (253) and clipped everything, and ``lo=-3`` was refused (found by fuzzing)."""
    clip = tdsl.trace(lambda x, lo, hi: np.clip(x, lo, hi))
    scaled = tdsl.trace(lambda x, s: np.clip(x, -s, s * 100))
    for dtype in (np.uint8, np.int32, np.uint64, np.int64):
        info = np.iinfo(dtype)
        x = np.array([info.min, 0, 1, 7, info.max], dtype)
        for lo, hi in [(-3, 3), (0, 300), (-(2**40), 2**40), (2, 5), (5, 2)]:
            np.testing.assert_array_equal(clip(x, lo, hi), np.clip(x, lo, hi), strict=True)
        for s in (0, 3, 2**20):
            np.testing.assert_array_equal(scaled(x, s), np.clip(x, -s, s * 100), strict=True)


def test_python_control_flow_runs_at_trace_time() -> None:
    def layers(x, ws, relu_last: bool):
        for w in ws:
            x = np.tanh(x @ w)
        if relu_last:
            x = np.maximum(x, 0)
        return x

    # (weights of their own: drawn from the module's generator they depended on the
    # order tests ran in, and a third of such draws have a tanh of a dot product that
    # cancels, whose rounding the native loops' order of summation moves by 1e-7
    # absolute, beyond an rtol of 2e-6)
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal((4, 4)).astype(np.float32) for _ in range(3)]
    traced = tdsl.trace(layers, static_argnames=("relu_last",))
    for flag in (False, True):
        _same(traced(X, ws, flag), layers(X, ws, flag), atol=1e-6)  # (|tanh| <= 1)


def test_pytrees_in_and_out() -> None:
    def fn(params, xs):
        a, b = xs
        return {"sum": a @ params["w"] + params["b"], "pair": (b.T, b.sum(axis=0))}

    params = {"w": W, "b": B}
    xs = (X, X[:, :2].copy())
    got = tdsl.trace(fn)(params, xs)
    expected = fn(params, xs)
    _same(got["sum"], expected["sum"])
    _same(got["pair"][0], expected["pair"][0])
    _same(got["pair"][1], expected["pair"][1])


def test_star_args_and_keyword_args() -> None:
    """A function with ``*args`` and ``**kwargs`` is called as it was (it raised
    ``TypeError: got an unexpected keyword argument 'rest'``: the traced call passed
    ``*rest`` as a keyword)."""

    def fn(x, *rest, scale=2.0, **named):
        out = x * scale
        for r in rest:
            out = out + r
        for v in named.values():
            out = out - v
        return out

    traced = tdsl.trace(fn)
    _same(traced(X, X, X, scale=3.0, d=X * 2), fn(X, X, X, scale=3.0, d=X * 2))
    _same(traced(X), fn(X))


CAPTURED = np.arange(3, dtype=np.float32)


def test_a_captured_array_is_an_input_read_at_each_call() -> None:
    def shifted(x):
        return x @ W + CAPTURED

    traced = tdsl.trace(shifted)
    program = traced.program(X)
    assert re.search(r"c\d+: f32\[3\]", program) and "0.0, 1.0" not in program
    _same(traced(X), shifted(X))
    CAPTURED[0] = 100.0  # read at the call, not baked in
    try:
        _same(traced(X), shifted(X))
        assert len(traced.kernels) == 1
    finally:
        CAPTURED[0] = 0.0


def test_shape_functions_become_inputs_or_ops() -> None:
    def masked(x):
        n = x.shape[0]
        return np.where(np.tri(n, dtype=bool), x, 0.0) + np.arange(n)[:, None] * 0.5

    x = RNG.standard_normal((5, 5)).astype(np.float32)
    _same(tdsl.trace(masked)(x), masked(x))


def test_numpy_dtypes_exactly() -> None:
    def weak(x):
        return x * 0.5 + 1  # Python numbers are weak: f32 stays f32

    def strong(x):
        return x * np.float32(0.5) + np.sqrt(2 / np.pi)  # a float64 scalar promotes

    for fn in (weak, strong):
        _same(tdsl.trace(fn)(X), fn(X))
    assert tdsl.trace(weak)(X).dtype == np.float32
    assert tdsl.trace(strong)(X).dtype == np.float64


def test_python_types_as_dtypes() -> None:
    # NumPy reads Python's bool, int and float as dtypes (bool, int64, float64)
    def fn(x):
        return np.astype(x, bool), np.astype(x, int), x.astype(float), np.astype(x, np.int32)

    x = np.array([0.0, 1.5, -2.0, -0.0, 3.0], np.float32)
    for got, want in zip(tdsl.trace(fn)(x), fn(x), strict=True):
        _same(got, want)
    with pytest.raises(TdslTypeError, match="dtype complex128 is not in tdsl"):
        tdsl.trace(lambda x: np.astype(x, complex))(x)


def test_numpys_own_parameters_of_methods() -> None:
    # (each was a raw TypeError or a refusal; found by fuzzing)
    def fn(x):
        return (
            x.ravel("K"),
            x.flatten("C"),
            x.copy(order="C"),
            x.reshape(-1, order="C"),
            x.astype(np.float64, copy=False),
            np.isclose(x, [[0.5, 1.0], [0.0, np.inf]]),
        )

    x = np.array([[0.5, np.nan], [np.inf, -0.0]], np.float32)
    for got, want in zip(tdsl.trace(fn)(x), fn(x), strict=True):
        np.testing.assert_array_equal(got, want, strict=True)
    for bad, message in [
        (lambda x: x.ravel("F"), "`order='F'` of `np.ravel`: tdsl's arrays are row-major"),
        (lambda x: x.astype(np.int32, casting="safe"), "`astype` with `casting` is not"),
    ]:
        with pytest.raises(TdslError, match=re.escape(message)):
            tdsl.trace(bad)(x)


BIG_ENDIAN = np.arange(8, dtype=">f4").reshape(4, 2)


def test_a_big_endian_global_is_read_as_its_values() -> None:
    # (it was a syntax error about the traced program, "found `>`"; found by fuzzing)
    def fn(x):
        return x @ BIG_ENDIAN + BIG_ENDIAN[0]

    x = RNG.standard_normal((3, 4)).astype(np.float32)
    _same(tdsl.trace(fn)(x), fn(x))


def test_constants_returned_are_returned() -> None:
    # (each was an unlocated "returned a ndarray" / "a int" error; found by fuzzing)
    def fn(x):
        return x + 1, np.ones(2), x.shape[0], None, {"name": "x", "scale": np.float32(2)}

    x = np.arange(4.0)
    traced = tdsl.trace(fn)
    got, want = traced(x), fn(x)
    _same(got[0], want[0])
    _same(got[1], want[1])
    assert got[2:] == want[2:]
    got[1][0] = 5.0  # a constant array is a new copy at each call, as NumPy's
    assert traced(x)[1][0] == 1.0
    with pytest.raises(TdslCallError, match=r"returned\[1\] is a value of type set"):
        tdsl.trace(lambda x: (x, {1}))(x)


def test_a_0d_result_is_a_numpy_scalar_where_numpy_gives_one(jit_target: str) -> None:
    """NumPy gives a ufunc's and a reduction's 0-d result as a NumPy scalar
    (``np.float64``, a ``float``), and ``np.where``'s or a view's as a 0-d array; a
    traced call returns each as NumPy does (all were 0-d arrays: ``float`` checks and
    ``json.dumps`` of a traced loss failed where NumPy's passed)."""

    def fn(x, i):
        total = np.sum(x * 2)
        return {
            "sum": total,
            "mean": x.mean(),
            "argmax": np.argmax(x),
            "dot": x @ x,
            "norm": np.linalg.norm(x),
            "nanmax": np.nanmax(x),
            "exp of a sum": np.exp(total),
            "element": x[1],
            "gather": x[i[0]],
            "cast sum": total.astype(np.float32),
            "where": np.where(total > 0, total, 0.0),
            "ellipsis": x[..., 1],
            "like": np.zeros_like(total),
            "row": x[1:3],
            "divmod": np.divmod(total, 2.0),
        }

    x, i = np.array([1.0, -2.0, 3.5, 0.25]), np.array([2, 0])
    got, want = tdsl.trace(fn)(x, i), fn(x, i)
    assert {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in want.items()}
    assert [type(v) for v in got["divmod"]] == [np.float64, np.float64]
    got["divmod"], want["divmod"] = got["divmod"][0], want["divmod"][0]
    assert type(want["sum"]) is np.float64 and type(want["where"]) is np.ndarray
    for k in want:
        _same(got[k], want[k])
    assert isinstance(got["sum"], float)


def _types(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_types(v) for v in value]
    return type(value)


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        # (each found by fuzzing the types of 0-d results)
        (lambda s: np.float32(2.5) * s, (3,)),  # (was an int64 7: the float32 was dropped)
        (lambda s: np.add(np.float32(0.5), s), (3,)),
        (lambda s: np.uint8(200) + s, (100,)),
        (lambda x, s: x * (np.float32(2) * s), (np.ones(3, np.float16), 3)),
        (lambda s: s, (np.float32(2.5),)),  # (a NumPy scalar argument: one again)
        (lambda s: s.astype(np.float64), (np.float32(2.5),)),
        (lambda s: np.reshape(s, ()), (np.int64(2),)),
        (lambda s: s.astype(np.float64), (np.array(2.5, np.float32),)),
        (lambda s: (s, s * 2, -s), (2.5,)),  # (Python's numbers)
        (lambda s: s + 1, (3,)),
        (lambda x: (x.sum().copy(), x[0].copy()), (np.arange(3.0),)),
        (lambda z: (z.conj(), np.conjugate(z)), (np.array(2.5),)),
        (lambda x: (np.clip(x.sum(), 0, None), np.clip(x.sum(), None, None)), (np.arange(3.0),)),
        (lambda x: np.average(x, returned=True), (np.arange(3.0, dtype=np.float32),)),
        (lambda x: (round(x.sum(), 2), round(x[0], 1)), (np.arange(3.0),)),
        # (Python's `~`, `&`, `|`, `^` on a Python int are weak, as in the language: they
        # were strong int64s, so `u8 + (s & 7)` was an int64)
        (lambda t, s: (t + ~s, ~s), (np.array([1, -3], np.int32), 5)),
        (lambda u, s: (u + (s & 7), u + (s | 8), u + (s ^ 1), s & 6), (np.uint8([0, 200]), 3)),
        (lambda t, b: (~t, ~b, t & 3, b | b), (np.array([1, -3], np.int32), np.array([True]))),
    ],
)
def test_results_have_numpys_types_and_dtypes(fn: Any, args: Any) -> None:
    with np.errstate(over="ignore"):  # (np.uint8(200) + 100 wraps, as tdsl's)
        want = fn(*args)
        got = tdsl.trace(fn)(*args)
    assert _types(got) == _types(want)
    for g, w in zip(*(v if isinstance(v, tuple) else (v,) for v in (got, want)), strict=True):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)


def test_a_result_constant_for_the_shapes_is_returned_without_a_kernel() -> None:
    # (a max with `initial=` over an empty axis is its initial, whatever the values:
    # "`f` returned no arrays" refused what NumPy computes; found by fuzzing)
    def fn(a):
        return np.max(a, axis=0, initial=2.5)

    traced = tdsl.trace(fn)
    empty, full = np.zeros((0, 3)), np.arange(6.0).reshape(2, 3)
    _same(traced(empty), fn(empty))
    got = traced(empty)
    got[0] = 7.0  # a new copy at each call
    _same(traced(empty), fn(empty))
    _same(traced(full), fn(full))  # the same function compiles where values matter
    assert len(traced.kernels) == 1
    with pytest.raises(TdslCallError, match="computes nothing from its arguments' values"):
        traced.compile(empty)


def test_lists_of_numbers_are_arrays_where_numpy_reads_arrays() -> None:
    # (each was written as a tuple literal and refused with errors about the traced
    # program, "unknown name `True`"; found by fuzzing)
    def fn(x):
        return (
            np.where([True, False, True, False], x, 0.0),
            np.where(x > 0, [9, 8, 7, 6], 0.0),
            np.concatenate([x, [1.0, 2.0]]),
            np.stack((x, [1.0, 2.0, 3.0, 4.0])),
            np.dot(x, [1.0, 2.0, 3.0, 4.0]),
            np.einsum("i,i->i", x, [1.0, -0.0, 3.0, 4.0]),
            np.diff(x, prepend=[0.0]),
        )

    x = np.array([-1.5, 0.5, np.nan, -0.0], np.float32)
    for got, want in zip(tdsl.trace(fn)(x), fn(x), strict=True):
        np.testing.assert_array_equal(got, want, strict=True)


def test_shape_ndim_and_size_functions_are_static() -> None:
    # (refused as functions tdsl lacks, while `.shape`, `.ndim` and `.size` worked)
    def fn(x):
        return x * np.shape(x)[1] + np.ndim(x) + np.size(x) + np.size(x, 0) + np.size(x, -1)

    _same(tdsl.trace(fn)(X), fn(X))


def test_methods_and_indexing() -> None:
    def fn(x, idx):
        y = x.reshape(4, 8).T.astype(np.float64)
        return y[1:, ::2].mean(axis=0) + y.var() + y.max(axis=1)[idx].sum() + x[idx][:, 1:3].std()

    idx = np.array([0, 2, 2, -1])
    _same(tdsl.trace(fn)(X, idx), fn(X, idx))


def test_advanced_indexing_with_slices_integers_and_lists() -> None:
    # (refused: arrays beside slices, integers or None needed a second subscript)
    def fn(x, idx):
        return x[1:3, [0, 2]] + x[idx, 1:3][::2] + x[1, idx[:2]] + x[None, [1, 3], 2][0]

    idx = np.array([3, -1])
    _same(tdsl.trace(fn)(X, idx), fn(X, idx))


def test_an_empty_list_index_is_an_empty_gather() -> None:
    # (refused: NumPy reads `[]` as an empty integer index, np.asarray([]) is float64)
    def fn(x):
        return x[[]] + 1, x[:, []]

    for got, want in zip(tdsl.trace(fn)(X), fn(X), strict=True):
        np.testing.assert_array_equal(got, want, strict=True)


# --------------------------------------------------------------------------- errors


def _line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if i and text in line)


def _exp_matmul(x):
    y = np.exp(x)
    return y @ x.T


def _block(a, c, b, d):
    # (under a small budget the native loops break the plan's scratch and warn: a row
    # sum of scans of a matmul scaling the next one's operand; a matvec over a column
    # scan, a row sum of a matmul scaling the next one's operand, and then three matmuls
    # on one contraction did, until the loops ran their plan's passes)
    e = np.exp(a / 4)
    rows = np.sum(np.cumsum(a @ c, axis=1) + e @ c, axis=0, keepdims=True)
    return np.cumsum((rows * np.maximum(e @ b, 0)) @ d, axis=1)


def _block_args() -> tuple[Any, ...]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 100)).astype(np.float32) / 4
    c, b = (rng.standard_normal((100, 128)).astype(np.float32) / 8 for _ in range(2))
    return a, c, b, rng.standard_normal((128, 16)).astype(np.float32)


def test_a_pass_error_in_the_compile_is_at_the_users_line() -> None:
    """An error a pass gives about an op of the trace's program (here a tiling of the
    wrong rank) is at the line of the traced function that made the op, with its source
    line: it named the program's line (`<trace of f>:4:14`), which the user never wrote."""
    x = np.ones((6, 4), np.float32)
    with pytest.raises(TdslError) as caught:
        tdsl.trace(_exp_matmul, tile_sizes=(2,))(x)
    location = caught.value.location
    assert location is not None and location.file == __file__
    assert location.line == _line_of(_exp_matmul, "return y @ x.T")
    assert location.source_line is not None and "y @ x.T" in location.source_line
    assert caught.value.message.startswith("tile-sizes gives 1 size(s)")
    assert "(in the traced line `" in caught.value.message


def test_a_pass_warning_in_the_compile_is_at_the_users_line() -> None:
    """The native loops' budget warning names the traced function's line (it named the
    program's); a warning with no line (no fusion plan fits) comes at the call."""
    args = _block_args()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = tdsl.trace(_block, target="native", memory_budget=256)(*args)
    want = _block(*(x.astype(np.float64) for x in args))  # (f32 sums: 2e-4 off)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * np.abs(want).max())
    loops = [w for w in seen if issubclass(w.category, TdslLoopsBudgetWarning)]
    assert loops, [str(w.message) for w in seen]
    line = _line_of(_block, "return np.cumsum((rows * np.maximum(e @ b, 0)) @ d, axis=1)")
    for found in loops:
        assert (found.filename, found.lineno) == (__file__, line)
        assert f"{__file__}:{line}:" in str(found.message)
        assert "<trace of" not in str(found.message)
    (budget,) = [w for w in seen if w.category is TdslBudgetWarning]
    assert budget.filename == __file__ and "<trace of" not in str(budget.message)
    assert budget.lineno == _line_of(
        test_a_pass_warning_in_the_compile_is_at_the_users_line, "got = tdsl.trace(_block"
    )


def test_a_warning_auto_holds_back_is_not_given_by_the_trace() -> None:
    """``target="auto"`` holds back the native loops' budget warning (its reason to run
    the numpy target): the trace, which gives its compile's warnings at the user's
    lines, gives no such warning either."""
    args = _block_args()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        traced = tdsl.trace(_block, target="auto", memory_budget=256)
        traced(*args)
    assert not [w for w in seen if issubclass(w.category, TdslLoopsBudgetWarning)]
    assert traced.compile(*args).target == "numpy"


def svd(x):
    return np.linalg.svd(x)


def sort(x):
    return np.sort(x)


def branch(x):
    if x.sum() > 0:
        return x
    return -x


def to_float(x):
    return x * float(x[0, 0])


def to_int(x):
    return x * int(x[0, 0])


def to_bool(x):
    return x if bool(x[0, 0]) else -x


def length(x):
    return x * len(x.sum())


def iterate(x):
    return sum(row for row in x)


def item(x):
    return x * x[0, 0].item()


def as_array(x):
    return np.asarray(x) + 1


def formatted(x):
    return x * float(f"{x.sum():.2f}")


def assign(x):
    x[0] = 1.0
    return x


def add_in_place(x):
    x[0:2] += 1
    return x


def mask(x):
    return x[x > 0]


def nonzero(x):
    return np.nonzero(x)


def out_keyword(x):
    return np.exp(x, out=np.empty_like(X))


def where_keyword(x):
    return np.exp(x, where=X > 0)


def order_keyword(x):
    return np.reshape(x, (4, 8), order="F")


GLOBAL = np.arange(12.0).reshape(6, 2)


def global_indexed(x):
    return GLOBAL[x.astype(np.int64)]  # (NumPy converts the index: no dispatch to the trace)


def full_of_traced(x):
    return np.full((8, 4), x.sum())  # (NumPy fills an array of its own)


def set_shape(x):
    x.shape = (4, 8)  # (found by fuzzing: ignored, the result kept (8, 4))
    return x + 0


def set_dtype(x):
    x.dtype = np.int64
    return x + 0


def full_of_traced_typed(x):
    return np.full((8, 4), x.sum(), dtype=np.float32)  # (through `np.copyto`)


ERRORS = [
    (svd, "np.linalg.svd", "np.linalg.svd` is not supported"),
    (sort, "np.sort", "np.sort` is not supported"),
    (branch, "if x.sum()", "bool(...)"),
    (to_float, "float(", "float(...)"),
    (to_int, "int(", "int(...)"),
    (to_bool, "bool(", "bool(...)"),
    (length, "len(", "len()` of a 0-d"),
    (iterate, "for row", "iterating over a traced array"),
    (item, ".item()", ".item()"),
    (formatted, 'f"{x.sum()', "formatting it (`:.2f`)"),
    (as_array, "np.asarray", "np.asarray"),
    (global_indexed, "GLOBAL[", "pass `W` as an argument"),
    (full_of_traced, "np.full", "`np.full` needs the values of a traced array"),
    (full_of_traced_typed, "np.full", "write `np.broadcast_to(v, shape)`"),
    (assign, "x[0] = 1.0", "assigning into a traced array"),
    (set_shape, "x.shape = ", "assigning `.shape` of a traced array"),
    (set_dtype, "x.dtype = ", "assigning `.dtype` of a traced array"),
    (add_in_place, "+= 1", "out="),
    (mask, "x[x > 0]", "boolean mask"),
    (nonzero, "np.nonzero", "shape depends on the values"),
    (out_keyword, "out=", "out=` of `np.exp"),
    (where_keyword, "where=", "where=` of `np.exp"),
    (order_keyword, "order=", "order='F'"),
]


@pytest.mark.parametrize(
    ("fn", "line_text", "message"), ERRORS, ids=[e[0].__name__ for e in ERRORS]
)
def test_each_refused_construct_is_one_located_error(fn, line_text: str, message: str) -> None:
    with pytest.raises(TdslError) as caught:
        tdsl.trace(fn)(X)
    err = caught.value
    assert message in err.message, err.message
    assert err.location is not None and err.location.file == __file__
    assert err.location.line == _line_of(fn, line_text)


def test_a_copy_of_a_traced_array_is_itself() -> None:
    """``copy.deepcopy`` of an argument copied the trace with it, so its ops went to the
    copy and the program returned a name it never made (found by fuzzing); a traced
    array is never changed in place, so a copy, deep or shallow, is the array itself."""

    def fn(x):
        a, b = copy.deepcopy([x, x + 1])
        return copy.deepcopy(x) * 2 + copy.copy(b) * a

    _same(tdsl.trace(fn)(X), fn(X))


def test_a_refused_line_is_tdsls_error_at_the_users_line() -> None:
    def bad(x, w):
        return x @ w  # (8, 4) @ (8, 4): NumPy's shape error too

    with pytest.raises(TdslError) as caught:
        tdsl.trace(bad)(X, X)
    assert caught.value.location is not None and caught.value.location.line == _line_of(
        bad, "x @ w"
    )


def test_a_traced_array_kept_past_its_trace_is_refused() -> None:
    """A traced array the function stored went on building a dead trace: ``np.exp`` of
    it gave a traced array outside any traced function (found by fuzzing the JIT)."""
    kept: list[object] = []

    def keep(a):
        kept.append(a)
        return a + 1

    np.testing.assert_array_equal(tdsl.trace(keep)(X), X + 1)
    with pytest.raises(TdslCallError, match="used after its traced function returned"):
        np.exp(kept[0])


def test_an_argument_that_holds_itself_is_refused() -> None:
    """A list inside itself hung the key's walk (found by fuzzing the JIT)."""
    cyclic: list[object] = [X]
    cyclic.append(cyclic)
    with pytest.raises(TdslCallError, match=r"argument `xs_1` holds itself \(a list inside"):
        tdsl.trace(lambda xs: xs[0] + 1)(cyclic)
    shared = [X]  # (a value given twice is no cycle)
    np.testing.assert_array_equal(tdsl.trace(lambda a, b: a[0] + b[0])(shared, shared), X + X)


def test_a_python_object_argument_is_refused() -> None:
    with pytest.raises(TdslCallError, match="static_argnames"):
        tdsl.trace(mlp)(X, W, "b")


def test_function_suggests_trace_for_python() -> None:
    from tdsl.errors import TdslNameError

    @tdsl.function
    def uses_a_global(x):
        return x + CAPTURED

    with pytest.raises(TdslNameError) as caught:
        uses_a_global(X)

    assert "@tdsl.trace" in (caught.value.note or "")


def test_gpt2_matches_numpy(jit_target: str) -> None:
    """picoGPT's forward pass (examples/gpt2_numpy.py) at E=768, 12 heads, 4096 words,
    64 tokens, with 2 layers on the numpy target and 1 natively (the native compile
    takes about 4 s a layer here: ``python examples/gpt2_numpy.py --target native``
    runs both layers), on each target: NumPy's dtype, its logits within 1e-3 of their
    scale, its greedy next tokens at 98% of positions or more."""
    params = random_params(4096, 1024, 768, 2 if jit_target == "numpy" else 1)
    inputs = np.random.default_rng(1).integers(0, 4096, 64)
    forward = tdsl.trace(gpt2, static_argnames="n_head", memory_budget=1 << 25)
    got = forward(inputs, **params, n_head=12)
    expected = gpt2(inputs, **params, n_head=12)
    assert forward.kernels[0].target == jit_target
    assert got.dtype == expected.dtype and got.shape == expected.shape == (64, 4096)
    assert np.max(np.abs(got - expected)) < 1e-3 * np.max(np.abs(expected))
    assert np.mean(np.argmax(got, -1) == np.argmax(expected, -1)) >= 0.98
    program = forward.program(inputs, **params, n_head=12)
    for piece in ("split(", "hstack(", "var(", "transpose(wte", "wte[inputs]", "arange(0, 64, 1)"):
        assert piece in program


def _silenced_log(x: Any) -> Any:
    y = x * 2
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.log(y)
    return z + 1


def _plain_log(x: Any) -> Any:
    return np.log(x) + 1


def test_a_functions_own_errstate_holds_for_its_kernel(jit_target: str) -> None:
    """A function that silences NumPy's warnings for a line (``with np.errstate``) gives
    none compiled either (the numpy target warned where NumPy did not: an error under
    ``-W error``, as this suite runs); one that does not warns as NumPy does."""
    x = np.array([0.0, 1.0, -1.0], np.float32)
    traced = tdsl.trace(_silenced_log)
    got = traced(x)  # (pytest turns any warning into an error)
    np.testing.assert_array_equal(got, _silenced_log(x))
    plain = tdsl.trace(_plain_log)
    if jit_target == "numpy":
        with pytest.warns(RuntimeWarning) as seen:
            plain(x)
        assert any("divide by zero" in str(w.message) for w in seen)
    with np.errstate(all="ignore"):  # (the caller's errstate holds for the rest)
        np.testing.assert_array_equal(plain(x), _plain_log(x))


@tdsl.trace
def _twice(x: Any) -> Any:
    """Twice x."""
    return x * 2.0


def test_a_traced_function_is_named_and_pickled_as_the_function() -> None:
    assert (_twice.__name__, _twice.__doc__, _twice.__module__) == ("_twice", "Twice x.", __name__)
    np.testing.assert_array_equal(_twice(np.arange(3.0)), np.arange(3.0) * 2)
    assert pickle.loads(pickle.dumps(_twice)) is _twice


class _Scaler:
    """A class whose methods are traced, as jax.jit's are."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    @tdsl.trace
    def doubled(self, x: Any) -> Any:
        return x * 2

    @tdsl.trace(static_argnames=("self",))
    def scaled(self, x: Any) -> Any:
        return x * self.scale


def test_a_traced_method_binds_its_instance_as_a_function_does() -> None:
    x = np.arange(4, dtype=np.float32)
    half, third = _Scaler(0.5), _Scaler(1 / 3)
    # the instance is the first argument: static, it keys the kernel (each its own)
    assert np.array_equal(half.scaled(x), x * np.float32(0.5))
    assert np.array_equal(third.scaled(x), x * np.float32(1 / 3))
    assert np.array_equal(_Scaler.scaled(half, x), x * np.float32(0.5))
    assert _Scaler.__dict__["scaled"] is _Scaler.scaled  # from the class: unbound
    # not static, it is an argument like any other: refused, saying what to do
    with pytest.raises(TdslCallError, match=r"argument `self` is a _Scaler.*static_argnames"):
        half.doubled(x)


def test_a_partial_traces_as_its_function_and_a_non_function_is_an_error() -> None:
    def scale(x: Any, s: Any) -> Any:
        return x * s

    halved = tdsl.trace(functools.partial(scale, s=0.5))
    x = np.arange(4, dtype=np.float32)
    got = halved(x)
    assert got.dtype == np.float32 and np.array_equal(got, x * 0.5)
    assert "scale" in repr(halved)
    with pytest.raises(TdslCallError, match=r"tdsl\.trace takes a function, got int 3"):
        tdsl.trace(3)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, n: x[:n] * 2.0,
        lambda x, n: x[n::2],
        lambda x, n: x.reshape(n, -1),
        lambda x, n: np.reshape(x, (n, -1)),
        lambda x, n: np.sum(x, axis=n),
        lambda x, n: np.sum(x, n),
        lambda x, n: np.expand_dims(x, n),
        lambda x, n: np.roll(x, n),
    ],
)
def test_a_traced_int_as_a_bound_size_or_axis_says_to_make_it_static(fn: Any) -> None:
    """(A slice bound, a shape or an axis were written into the program as the traced
    name, and the program's parser said `expected an integer ... found n`.)"""
    x = np.arange(12.0).reshape(4, 3)
    with pytest.raises(TdslCallError) as err:
        tdsl.trace(fn)(x, 1)
    assert 'make it static, `static_argnames=("n",)`' in str(err.value)
    assert "test_trace.py" in str(err.value)  # at the user's line
    np.testing.assert_array_equal(tdsl.trace(fn, static_argnames="n")(x, 1), fn(x, 1))


@tdsl.trace
def _inner(x: Any) -> Any:
    return np.maximum(x, 0) * 2.0


def test_a_traced_function_called_inside_another_joins_its_trace() -> None:
    """As jax.jit's: one kernel of both (the inner one was refused: "argument `x` is a
    Tracer")."""
    outer = tdsl.trace(lambda x: _inner(x) + 1.0)
    x = np.linspace(-1, 1, 6).reshape(2, 3)
    np.testing.assert_array_equal(outer(x), np.maximum(x, 0) * 2.0 + 1.0)
    assert len(outer.kernels) == 1 and _inner.kernels == ()
    assert "maximum" in outer.program(x)


# --------------------------------------------------------------------------- found by fuzzing


def test_parameters_named_like_the_programs_own_names_keep_their_values() -> None:
    """A parameter named as the trace names its values (``v1``), its captured arrays
    (``c1``) or a constant of the language (``nan``, ``inf``) is that parameter: the
    program's names step around it (``x * 3 + v1`` gave ``x * 3 + x * 3``)."""
    w = np.full((2,), 10.0)
    x, y = np.array([1.0, -2.0]), np.array([5.0, 6.0])
    cases = [
        (lambda v1, x: x * 3 + v1, (np.ones(2), np.ones(2))),
        (lambda v1, v2: (v1 @ v2) / np.sqrt(v1 @ v1), (x, y)),
        (lambda c1: c1 + w, (x,)),
        (lambda nan, x: np.where(x > 0, x, np.nan) + nan, (y, x)),
        (lambda inf, pi: np.minimum(inf, np.inf) * pi + np.pi, (x, y)),
    ]
    for fn, args in cases:
        want = fn(*args)
        np.testing.assert_array_equal(tdsl.trace(fn)(*args), want)


def test_static_arguments_of_equal_values_and_other_types_are_kernels_of_their_own() -> None:
    x = np.array([1, 2, 3], np.int32)
    scaled = tdsl.trace(lambda x, s: x * s, static_argnames="s")
    for s in (1, 1.0, np.float64(1.0), True, (1,), (1.0,)):
        got, want = (
            scaled(x, s if not isinstance(s, tuple) else s[0]),
            x * (s if not isinstance(s, tuple) else s[0]),
        )
        assert got.dtype == want.dtype and np.array_equal(got, want), s
    assert len(scaled.kernels) == 4  # int, float, np.float64, bool


def test_defaults_not_passed_are_constants_of_the_trace() -> None:
    """As in jax.jit: ``axis=-1`` needs no static_argnames, a default dtype or keyword of
    a NumPy function traced as it is is not an input."""

    def softmax(x: Any, axis: int = -1, scale: float = 1.0) -> Any:
        e = np.exp((x - x.max(axis=axis, keepdims=True)) * scale)
        return e / e.sum(axis=axis, keepdims=True)

    x = np.arange(8.0).reshape(2, 4)
    traced = tdsl.trace(softmax)
    np.testing.assert_allclose(traced(x), softmax(x), rtol=1e-12)
    np.testing.assert_allclose(traced(x, scale=0.5), softmax(x, scale=0.5), rtol=1e-12)
    with pytest.raises(TdslCallError, match="static_argnames"):
        traced(x, 0)  # passed, an axis is an argument like any other: it must be static
    np.testing.assert_allclose(tdsl.trace(np.exp)(x), np.exp(x), rtol=1e-12)


def test_named_tuples_go_in_and_come_out_as_themselves() -> None:
    import collections

    Pair = collections.namedtuple("Pair", "a b")

    def f(p: Any) -> Any:
        return Pair(p.a + p.b, p.a * p.b)

    p = Pair(np.ones(3), np.full(3, 2.0))
    got = tdsl.trace(f)(p)
    assert type(got) is Pair
    np.testing.assert_array_equal(got.a, p.a + p.b)
    np.testing.assert_array_equal(got.b, p.a * p.b)


def test_a_compiled_kernel_called_while_tracing_is_a_located_error() -> None:
    """A kernel needs values, which a trace does not have: the error says so at the user's
    line (it said "must be a NumPy array ..., got a value of type `Tracer`", unlocated,
    or located in tdsl's generated call code; found by fuzzing)."""
    x = np.ones((3, 4))
    kernel = tdsl.compile("x * 2", shapes={"x": (3, 4)}, dtypes="f64")
    calls = {
        "positional": lambda t: kernel(t) + 1,
        "keyword": lambda t: kernel(x=t) + 1,
        "one-shot": lambda t: tdsl.jit_tensor("x * 2", x=t) + 1,
    }
    for name, fn in calls.items():
        with pytest.raises(TdslCallError, match=r"argument `x`.* is a traced array") as caught:
            tdsl.trace(fn)(x)
        assert "tdsl.trace" in caught.value.message, name
        location = caught.value.location
        assert location is not None and location.file == __file__, name


@pytest.mark.parametrize(
    "value, message",
    [
        (np.ma.masked_array(np.ones(3), mask=[0, 1, 0]), r"MaskedArray: .*ignore its mask"),
        ("matrix", r"numpy\.matrix, whose `\*` and `\*\*` are matrix products"),
    ],
)
def test_arrays_that_compute_otherwise_are_refused_not_read_as_plain_arrays(
    value: Any, message: str
) -> None:
    if isinstance(value, str):  # (made here: NumPy warns that np.matrix is deprecated)
        with pytest.warns(PendingDeprecationWarning):
            value = np.matrix(np.ones((2, 2)))
    # (the advice names the argument: it said `np.asarray(x)` of any)
    advice = r".*`np\.asarray\(y\)`"
    with pytest.raises(TdslCallError, match="argument `y` is a .*" + message + advice):
        tdsl.trace(lambda y: y * y)(value)
    jit = tdsl.JITTensorKernel()
    with pytest.raises(TdslCallError, match="argument `y` of kernel `main` is a .*" + message):
        jit("y * y", y=value)
    kernel = jit.compile("y * y", {"y": value.shape})
    for call in (lambda: kernel(value), lambda: kernel(y=value)):  # (the fast path too)
        with pytest.raises(TdslCallError, match=message + advice):
            call()


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.reshape(x.shape[0], np.prod(x.shape[1:])),  # the flatten idiom
        lambda x: x[: np.int64(1)],
        lambda x: x[:, :: np.int8(2)],
        lambda x: np.sum(x, axis=np.int64(1)),
        lambda x: np.mean(x, np.int32(2)),
        lambda x: np.swapaxes(x, np.int32(0), 1),
        lambda x: np.moveaxis(x, np.int64(0), -1),
        lambda x: np.transpose(x, (np.int64(2), 1, 0)),
        lambda x: np.split(x, np.int64(2), axis=np.int64(2))[1],
        lambda x: np.expand_dims(x, np.int64(0)),
        lambda x: x * np.int32(3),  # an operand stays a strong NumPy scalar
    ],
)
def test_numpy_integers_as_sizes_bounds_and_axes_are_ints(fn: Any) -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    got, want = tdsl.trace(fn)(x), fn(x)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_parameters_with_names_beyond_ascii_are_traced() -> None:
    def sgd(θ: Any, grad: Any, theta: Any, 日本: Any, 中国: Any) -> Any:
        return θ - 0.5 * grad + theta * 日本 - 中国

    args = [np.arange(3.0) + k for k in range(5)]
    traced = tdsl.trace(sgd)
    np.testing.assert_array_equal(traced(*args), sgd(*args))
    assert "theta_" in traced.program(*args)  # θ is theta, the parameter theta steps aside


def test_lists_of_numbers_are_arrays_and_none_is_no_operand() -> None:
    """As NumPy takes them: ``img * [0.299, 0.587, 0.114]`` multiplies by a float64 array
    (the result is float64), ``np.clip(x, None, None)`` copies; ``x + None`` is an error,
    and so is a list of traced arrays as an operand (NumPy would stack it)."""
    img = np.arange(12, dtype=np.float32).reshape(4, 3)
    cases = [
        lambda x: x * [0.299, 0.587, 0.114],
        lambda x: np.add(x, (1, 2, 3)),
        lambda x: np.maximum([[0, 1, 5]], x),
        lambda x: np.clip(x, None, None),
    ]
    for fn in cases:
        got, want = tdsl.trace(fn)(img), fn(img)
        assert got.dtype == want.dtype and np.array_equal(got, want)
    with pytest.raises(TdslError, match=r"None is not an operand of `np\.add`"):
        tdsl.trace(lambda x: x + None)(img)
    with pytest.raises(TdslError, match="a list holding traced arrays is an operand"):
        tdsl.trace(lambda x, y: x + y)(img, [img, img])


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: np.take(x, 2, axis=1),  # the axis goes, as x[:, 2] drops it
        lambda x: np.take(x, -1),
        lambda x: np.take(x, [1, 2], axis=0),
        lambda x: np.take(x, [[0, 1], [2, 3]], axis=1),
    ],
)
def test_take_by_a_python_int_or_list_is_numpys(fn: Any) -> None:
    x = np.arange(24.0).reshape(4, 6)
    got, want = tdsl.trace(fn)(x), fn(x)
    assert got.shape == want.shape and np.array_equal(got, want)


@pytest.mark.parametrize(
    "fn, name",
    [
        (lambda x: np.fmax(x, 0.0), "`np.fmax`"),  # (was "did you mean `max`?")
        (lambda x: np.frexp(x), "`np.frexp`"),  # (was "did you mean `exp`?")
        (lambda x: np.spacing(x), "`np.spacing`"),  # (was "did you mean `arcsin`?")
        (np.frompyfunc(lambda v: v * 2, 1, 1), "the ufunc `<lambda> (vectorized)`"),
    ],
)
def test_a_numpy_ufunc_the_language_lacks_is_named_not_mistaken(fn: Any, name: str) -> None:
    with pytest.raises(TdslError, match=re.escape(f"{name} is not supported when traced")) as err:
        tdsl.trace(fn)(np.linspace(-1, 1, 6))
    assert "did you mean" not in err.value.message


@pytest.mark.parametrize(
    "fn, hint",
    [
        (lambda x: np.argsort(x), "`np.argsort` is not supported by tdsl: sorting is not in"),
        (lambda x: np.median(x), "`np.median` is not supported by tdsl: sorting is not in"),
    ],
)
def test_a_numpy_function_the_language_spells_otherwise_names_its_spelling(
    fn: Any, hint: str
) -> None:
    """The hints of docs/from-numpy.md's tables (a ufunc's error gave none, found by
    fuzzing; the ufuncs with hints, np.exp2, np.cbrt, np.heaviside, np.float_power and
    np.divmod, are traced since).  (The message, not ``str``: that quotes the source line, which holds the
    hint here, so ``match=`` could not fail.)"""
    with pytest.raises(TdslError) as caught:
        tdsl.trace(fn)(np.linspace(-1, 1, 6))
    assert hint in caught.value.message


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.clip(0),  # (the language's clip takes both bounds)
        lambda x: x.clip(max=1),
        lambda x: (x > 0).copy(),  # (the language's copy takes no booleans)
        lambda x: np.copy(x),
        lambda x: np.conj(x.astype(np.int64)),  # (the language's conj takes floats)
        lambda x: np.conjugate(x),
    ],
)
def test_numpy_methods_with_defaults_the_language_spells_otherwise(fn: Any) -> None:
    x = np.array([-2.0, -0.5, 0.0, 3.0], np.float32)
    got, want = tdsl.trace(fn)(x), fn(x)
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda x: np.stack([x, x], dtype=np.float32), "`np.stack` with `dtype=`"),
        (lambda x: np.concatenate([x, x], casting="same_kind"), "`np.concatenate` with `casting=`"),
        (lambda x: np.var(x, mean=x.mean(keepdims=True)), "`np.var` with `mean=`"),
    ],
)
def test_a_numpy_keyword_the_language_lacks_is_named(fn: Any, message: str) -> None:
    """(It was an error about the language's grammar: "a string is not a value of `mode`".)"""
    x = np.arange(6.0).reshape(2, 3)
    with pytest.raises(TdslError, match=re.escape(message) + " is not supported when traced"):
        tdsl.trace(fn)(x)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.mean(0, np.float64),  # (was "`mean` takes 2 positional arguments")
        lambda x: np.cumsum(x, 0, np.float64),
        lambda x: np.sum(x, 1, None),
        lambda x: x.sum(0, np.int64),
        lambda x: np.prod(x, None, np.float64),
    ],
)
def test_a_reductions_dtype_given_by_position_is_numpys(fn: Any) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got, want = tdsl.trace(fn)(x), fn(x)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_uint64_scalars_beyond_int64_are_numpys() -> None:
    """A ``np.uint64`` scalar beyond int64 was written as an int64 literal and refused
    ("out of bounds for int64, as in NumPy 2", which NumPy 2 computes; found by
    fuzzing): it is the int64 of its bits, cast back."""
    x = np.arange(4, dtype=np.uint64)
    for fn in (
        lambda x: x + np.uint64(2**64 - 1),  # wraps, as NumPy's
        lambda x: np.maximum(x, np.uint64(2**63 + 5)),
        lambda x: np.where(x > 1, np.uint64(2**64 - 2), x),
    ):
        got, want = tdsl.trace(fn)(x), fn(x)
        assert got.dtype == want.dtype == np.uint64
        np.testing.assert_array_equal(got, want)


def test_a_traced_function_keeps_as_many_kernels_as_its_jit() -> None:
    """A traced function kept every kernel it compiled, one per signature, without bound
    (500 shapes: +750 MB; found by fuzzing); it keeps its JIT's ``cache_size``, the least
    recently called dropped first."""
    traced = tdsl.trace(lambda x: x * 2, jit=tdsl.JITTensorKernel(cache_size=3))
    for n in (1, 2, 3, 1, 4, 5):  # (1 called again: 2 is the least recent)
        np.testing.assert_array_equal(traced(np.ones(n)), np.full(n, 2.0))
    assert sorted(k.args[0].shape for k in traced.kernels) == [(1,), (4,), (5,)]
