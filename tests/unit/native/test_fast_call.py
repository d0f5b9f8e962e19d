"""A native function's common call runs as generated straight-line Python
(:mod:`tdsl.runtime.fast_call`): it computes what the general call computes, bit for
bit, and every other call (strided or other-dtype inputs, ``out``, a wrong count)
goes to the general call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tdsl
from tdsl.errors import TdslIndexError
from tdsl.runtime import native
from tdsl.runtime.compile import native_unavailable_reason
from tdsl.runtime.fast_call import LAYOUT_HOLDS, data_address, fast_call
from tdsl.runtime.native import NativeFunction

pytestmark = [
    pytest.mark.skipif(
        native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
    ),
    # (strided inputs get their variants however small: these tests run variants)
    pytest.mark.usefixtures("variants_at_any_size"),
]

F32 = np.float32


def two_results(x: Any, w: Any) -> Any:
    """Two outputs, constants, two groups (the column sum reads all of the product)."""
    y = np.maximum(x @ w, F32(0.5))
    return y - np.sum(y, axis=0, keepdims=True) * F32(0.25), np.sum(x * F32(2), axis=1)


def windows(x: Any) -> Any:
    """Windows of one value and a join: views into the workspace."""
    a, b = np.split(np.exp(x), 2, axis=1)
    return np.hstack([b * F32(2), np.sum(a, axis=1, keepdims=True) + b[:, :1]])


def gather(table: Any, index: Any) -> Any:
    """A gather, whose index errors come back through an error argument."""
    return np.take(table, index, axis=0) * F32(3)


def split_rows(x: Any) -> Any:
    """Rows split over two threads (4 MiB), each with its own copy of the scratch."""
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def _inputs(name: str) -> list[Any]:
    rng = np.random.default_rng(7)
    if name == "two_results":
        return [rng.standard_normal((40, 24), dtype=F32), rng.standard_normal((24, 16), dtype=F32)]
    if name == "windows":
        return [rng.standard_normal((30, 20), dtype=F32)]
    if name == "gather":
        return [rng.standard_normal((10, 8), dtype=F32), rng.integers(0, 10, 300)]
    return [rng.standard_normal((1024, 1024), dtype=F32)]


CASES: dict[str, Callable[..., Any]] = {
    "two_results": two_results,
    "windows": windows,
    "gather": gather,
    "split_rows": split_rows,
}


def _function(name: str) -> tuple[NativeFunction, list[Any]]:
    args = _inputs(name)
    traced = tdsl.trace(CASES[name], target="native", threads=2)
    traced.compile(*args)
    (kernel,) = traced.kernels
    function = kernel.function
    assert isinstance(function, NativeFunction)
    return function, args


def _same(a: Any, b: Any) -> None:
    a, b = (x if isinstance(x, tuple) else (x,) for x in (a, b))
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.array_equal(x, y, equal_nan=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_straight_line_call_computes_what_the_general_call_does(name: str) -> None:
    function, args = _function(name)
    got = function.direct(*args)
    _same(got, function._general(*args))
    _same(got, function(*args))
    # and NumPy's values (the native tests' tolerance: exp is a polynomial)
    want = CASES[name](*args)
    for g, w in zip(
        got if isinstance(got, tuple) else (got,),
        want if isinstance(want, tuple) else (want,),
        strict=True,
    ):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    if name == "split_rows":
        assert function._split  # the case splits its rows, as its name says
    if name in ("windows", "split_rows"):
        assert function._slots  # and these run in the workspace


@pytest.mark.parametrize("name", sorted(CASES))
def test_only_the_common_call_takes_the_straight_line(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    function, args = _function(name)
    taken: list[str] = []
    general = function._general

    def spy(*arrays: Any, out: Any = None) -> Any:
        taken.append("general")
        return general(*arrays, out=out)

    monkeypatch.setattr(function, "_general", spy)
    direct = fast_call(function, native._address)
    want = direct(*args)
    assert taken == []
    # a strided input (a transposed copy's transpose), an out, a wrong count
    strided = [np.asfortranarray(a) if a.ndim == 2 else a for a in args]
    assert not all(a.flags.c_contiguous for a in strided)
    # (a strided variant, compiled for those strides, may sum in another order)
    got = direct(*strided)
    for g, w in zip(*((x if isinstance(x, tuple) else (x,)) for x in (got, want)), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert taken == ["general"]
    outs: tuple[Any, ...] = tuple(
        np.empty_like(w) for w in (want if isinstance(want, tuple) else (want,))
    )
    direct(*args, out=outs)
    _same(outs, want)
    assert taken == ["general"] * 2
    with pytest.raises(TypeError, match="arrays, got"):
        direct(*args, args[0])
    assert taken == ["general"] * 3
    # an ndarray subclass (its own layout may differ): the general call too
    _same(direct(args[0].view(Sub), *args[1:]), want)
    assert taken == ["general"] * 4


class Sub(np.ndarray):
    """A subclass of ndarray that adds nothing."""


def test_an_arrays_address_is_read_from_the_array_object() -> None:
    assert LAYOUT_HOLDS  # CPython with NumPy's PyArrayObject layout
    base = np.arange(24.0).reshape(4, 6)
    frozen = base.copy()
    frozen.flags.writeable = False
    for a in (base, base[1:], base[:, 2:], base.T, frozen, frozen[2:], np.empty((0, 3))):
        assert data_address(a) == a.ctypes.data


def test_an_index_out_of_range_raises_the_same_error_on_both_calls() -> None:
    function, (table, index) = _function("gather")
    bad = index.copy()
    bad[17] = 12
    errors = []
    for call in (function.direct, function._general):
        with pytest.raises(TdslIndexError) as caught:
            call(table, bad)
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
    assert "index 12 is out of bounds for axis 0 with size 10" in errors[0]
