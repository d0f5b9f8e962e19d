"""Gathers: ``take(a, indices, axis)``, ``a[indices]`` by an ``int32``, ``int64`` or
``uint8`` array (an embedding lookup), ``a[i, j]`` by several arrays and ``a[1:, i]``
with slices, integers and ``None`` beside them, as NumPy's default: negative indices wrap, and an index
outside the axis is a ``TdslIndexError`` on every target (the native target reports it
through an error flag and never reads outside ``a``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from all_targets import COMPILED_TARGETS, TARGETS, run_on
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tdsl
from tdsl import lang
from tdsl.errors import TdslError, TdslIndexError, TdslSyntaxError, TdslTypeError
from tdsl.frontend import to_tensordsl
from tdsl.jit import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason

Array = np.ndarray[Any, Any]

RNG = np.random.default_rng(9)
W = RNG.standard_normal((10, 4)).astype(np.float32)
T = np.array([3, -1, 0, 9, -10], np.int64)
T32 = np.array([1, 3, -4, 0], np.int32)
T2 = np.array([[1, 2], [9, -10]], np.int64)
E = np.zeros(0, np.int64)
X = RNG.standard_normal((10, 4, 3))

CASES: list[tuple[str, dict[str, Array]]] = [
    ("w[t] * 2", {"w": W, "t": T}),
    ("take(w, t, axis=0) + 1", {"w": W, "t": T}),
    ("np.take(w, t)", {"w": W, "t": T}),
    ("w[:, t32]", {"w": W, "t32": T32}),
    ("take(w, t32, axis=-1)", {"w": W, "t32": T32}),
    ("w[..., t32] - 1", {"w": W, "t32": T32}),
    ("exp(w)[t]", {"w": W, "t": T}),
    ("w[t2]", {"w": W, "t2": T2}),
    ("sum(w[t], axis=0)", {"w": W, "t": T}),
    ("take(w, t, axis=0) @ w.T", {"w": W, "t": T}),
    ("w[e] + 1", {"w": W, "e": E}),
    ("(w > 0)[t]", {"w": W, "t": T}),
    ("w[t, t32[:1]]", {"w": W, "t": T, "t32": T32}),
    ("w[t2, t32[1:3]] * 2", {"w": W, "t2": T2, "t32": T32}),
    ("x[t, t32, t32[::-1] % 3]", {"x": X, "t": T[:4], "t32": T32}),
    ("x[:, t32[:2] % 4, t2 % 3]", {"x": X, "t32": T32, "t2": T2}),
    ("x[..., t32, t32 % 3] + 1", {"x": X, "t32": T32}),
    ("exp(x)[t, t32]", {"x": X, "t": T[:4], "t32": T32}),
    # slices, integers and None beside integer arrays (NumPy's advanced indexing): the
    # broadcast dims where the first array stands if the arrays (integers counted) are
    # adjacent, else first
    ("w[t, 1:]", {"w": W, "t": T}),
    ("w[1:8:3, t32] + 1", {"w": W, "t32": T32}),
    ("w[-1, t32]", {"w": W, "t32": T32}),
    ("w[t2, -3]", {"w": W, "t2": T2}),
    ("x[t32, :, t2 % 3]", {"x": X, "t32": T32[:2], "t2": T2}),
    ("x[t2, 1:3, 0] * 2", {"x": X, "t2": T2}),
    ("x[t32, None, 1]", {"x": X, "t32": T32}),
    ("x[None, ::-2, t32 % 4]", {"x": X, "t32": T32}),
    ("x[2, t32 % 4, None, 1:]", {"x": X, "t32": T32}),
    ("x[..., t32 % 3, None]", {"x": X, "t32": T32}),
    # (a `...` of no axes between two arrays separates them: NumPy's broadcast dims first)
    ("x[:, t32 % 4, ..., t32 % 3]", {"x": X, "t32": T32}),
    ("exp(x)[t, 1, ::2]", {"x": X, "t": T[:4]}),
]


def _numpy(text: str, arrays: dict[str, Array]) -> Array:
    names = {"np": np, "exp": np.exp, "sum": np.sum, "take": np.take}
    return np.asarray(eval(text, names, dict(arrays)))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("text", "arrays"), CASES, ids=[c[0] for c in CASES])
def test_gathers_are_numpys(target: str, text: str, arrays: dict[str, Array]) -> None:
    got = run_on(target, 10**6, text, **arrays)
    expected = _numpy(text, arrays)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("text", "bad", "message"),
    [
        ("w[t] * 2", np.array([3, 10, 0]), "index 10 is out of bounds for axis 0 with size 10"),
        ("w[t] * 2", np.array([-11, 0, 1]), "index -11 is out of bounds for axis 0 with size 10"),
        ("w[:, t]", np.array([0, 4, 9]), "index 4 is out of bounds for axis 1 with size 4"),
        ("w[t, t % 4]", np.array([-11, 0, 1]), "index -11 is out of bounds for axis 0 with"),
        ("w[t % 10, t]", np.array([0, 4, 9]), "index 4 is out of bounds for axis 1 with size 4"),
        ("w[t % 10, t]", np.array([0, -5, 9]), "index -5 is out of bounds for axis 1 with"),
        # (beside a slice: the axis as numbered in w, not after the transpose that moves
        # the arrays' axes first)
        ("x[t % 10, 1:, t]", np.array([0, 3, 1]), "index 3 is out of bounds for axis 2 with"),
        ("x[1, ::2, t]", np.array([0, -4, 1]), "index -4 is out of bounds for axis 2 with"),
    ],
)
def test_an_index_out_of_range_is_an_index_error_on_every_target(
    target: str, text: str, bad: Array, message: str
) -> None:
    arrays = {"x": X, "t": bad} if text.startswith("x") else {"w": W, "t": bad}
    with pytest.raises(TdslIndexError, match=message) as info:
        run_on(target, 10**6, text, **arrays)
    assert isinstance(info.value, IndexError)


@pytest.mark.parametrize("target", COMPILED_TARGETS)
@pytest.mark.parametrize("call", ["fast", "keywords", "out"])
def test_an_index_error_found_at_run_time_shows_its_source_line(target: str, call: str) -> None:
    """The IR's ``loc(...)`` keeps no source text, so the run-time error gave only
    ``file:line:col``; the kernel adds its line and a caret under the gather, as a
    compile error has, on every call path."""
    source = "def f(w: f32[10, 4], t: i64[3]):\n    return take(w, t, axis=0) * 2 + w[t, 1:2]\n"
    kernel = tdsl.compile(source, target=target)
    bad = np.array([3, 10, 0])
    with pytest.raises(TdslIndexError) as info:
        if call == "fast":
            kernel(W, bad)
        elif call == "keywords":
            kernel(t=bad, w=W)
        else:
            kernel(W, bad, out=np.empty((3, 4), np.float32))
    assert str(info.value) == (
        "<expr>:2:12: error: index 10 is out of bounds for axis 0 with size 10\n"
        "    return take(w, t, axis=0) * 2 + w[t, 1:2]\n"
        "           ^^^^^^^^^^^^^^^^^^"
    )
    kernel = tdsl.compile(
        "w[t, 1:2] + 1", {"w": (10, 4), "t": (3,)}, {"w": "float32", "t": "int64"}, target=target
    )
    with pytest.raises(TdslIndexError, match=r"(?s)<expr>:1:2: .*\nw\[t, 1:2\] \+ 1\n \^{8}$"):
        kernel(W, bad)


@pytest.mark.parametrize("target", COMPILED_TARGETS)
def test_a_gathered_result_is_written_into_out(target: str) -> None:
    """A result that is a gather goes into its ``out`` array, as every other result does
    (the numpy target returned ``out`` untouched: zeros; found by fuzzing)."""
    t = np.array([3, -1, 0], np.int64)
    kernel = tdsl.compile(
        "def f(w: f32[10, 4], t: i64[3]):\n    y = w * 2\n    return y[t], w[t, 1], y, y[t]\n",
        target=target,
    )
    want = ((W * 2)[t], W[t, 1], W * 2, (W * 2)[t])
    outs = tuple(np.zeros(r.shape, np.float32) for r in want)
    assert kernel(W, t, out=outs) is outs
    for got, expected in zip(outs, want, strict=True):
        np.testing.assert_array_equal(got, expected)
    one = np.zeros((3, 4), np.float32)
    assert tdsl.compile("w[t]", {"w": (10, 4), "t": (3,)}, {"w": "float32", "t": "int64"},
                        target=target)(W, t, out=one) is one  # fmt: skip
    np.testing.assert_array_equal(one, W[t])


@pytest.mark.parametrize(("text", "column"), [("take(x, 99) * 2", 9), ("take(x, -4, axis=1)", 9)])
def test_a_literal_index_out_of_range_is_an_error_when_compiling(text: str, column: int) -> None:
    """As ``x[99]`` is: NumPy's words, at the index (``take(x, 99)`` compiled, and each call
    raised the error, without a location; found by fuzzing the language)."""
    with pytest.raises(TdslIndexError, match=r"index -?\d+ is out of bounds for axis") as info:
        tdsl.compile(text, {"x": (4, 3)}, "float32")
    assert info.value.location is not None and info.value.location.column == column


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("text", ["take(x, t, axis=1)", "x[:, t]"])
def test_an_index_out_of_range_is_an_error_where_the_result_is_empty(
    target: str, text: str
) -> None:
    """Another axis of ``x`` is empty, so nothing is copied: the index is checked all the
    same, on every target (the native loops checked it only per element copied; found by
    fuzzing)."""
    x = np.zeros((0, 3), np.float32)
    with pytest.raises(TdslIndexError, match="index 5 is out of bounds for axis 1 with size 3"):
        run_on(target, 10**6, text, x=x, t=np.array([5, -7]))
    assert run_on(target, 10**6, text, x=x, t=np.array([2, -3])).shape == (0, 2)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("take(w, 5)", lambda w: np.take(w, 5)),
        ("take(w, -1, axis=0)", lambda w: np.take(w, -1, axis=0)),
        ("take(w, 2, axis=1) * 2", lambda w: np.take(w, 2, axis=1) * 2),
    ],
)
def test_one_integer_index_is_numpys_take(target: str, text: str, want: Any) -> None:
    """``np.take(x, 0)``: an int literal is one index, a 0-d result where NumPy's is (it
    was refused as "floats and booleans are not indices"; found by fuzzing)."""
    got = run_on(target, 10**6, text, w=W)
    expected = np.asarray(want(W))
    assert isinstance(got, np.ndarray) and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("target", COMPILED_TARGETS)
def test_a_python_int_given_at_run_time_is_an_index(target: str) -> None:
    """``x[n]`` of a weak integer input (``dtypes={"n": int}``) gathers one element, as
    NumPy indexes by a Python int (it was refused: "floats and booleans are not
    indices"); out of range, NumPy's ``IndexError``."""
    x = np.arange(8, dtype=np.float32)
    fn = JITTensorKernel(target=target, threads=1).compile(
        "x[n] * 2 + x[-n]", shapes={"x": (8,)}, dtypes={"x": "f32", "n": int}
    )
    for n in (3, -1, 0, 7):
        got = fn(x, n)
        assert got.shape == () and got.dtype == np.float32
        assert float(got) == x[n] * 2 + x[-n]
    with pytest.raises(TdslIndexError, match="index 9 is out of bounds for axis 0 with size 8"):
        fn(x, 9)


@pytest.mark.parametrize("target", COMPILED_TARGETS)
def test_an_index_out_of_range_at_run_time_is_located_at_its_gather(target: str) -> None:
    """The error names the gather's place in the source (it named none: with two gathers
    of one extent, nothing said which), and a traced function's names the user's line,
    also from the disk cache (the native plan stores the place)."""
    source = "def main(w: f32[10, 4], t: i64[2]):\n    e = exp(w)\n    return e[t] + w[t]\n"
    fn = JITTensorKernel(target=target, threads=1).compile(source, filename="k.tdsl")
    with pytest.raises(TdslIndexError, match="index 12 is out of bounds") as info:
        fn(W, np.array([1, 12]))
    assert str(info.value).startswith("k.tdsl:3:13: error: index 12 is out of bounds")
    if target == "native":
        from tdsl.runtime.plan import FunctionPlan

        plan = fn.function.plan  # (as the disk cache stores it)
        errors = [a.error for a in FunctionPlan.from_data(plan.to_data()).args if a.error]
        assert [where for _, _, where in errors] == ["k.tdsl:3:13", "k.tdsl:3:20"]

    def embed(wte: Array, tokens: Array) -> Array:
        return np.exp(wte)[tokens] * 2

    traced = tdsl.trace(embed, target=target)
    with pytest.raises(TdslIndexError) as info:
        traced(W, np.array([1, -11]))
    location = info.value.location
    assert location is not None and location.file == __file__
    assert location.source_line is not None and "np.exp(wte)[tokens]" in location.source_line


def test_take_prints_parses_and_round_trips() -> None:
    module = to_tensordsl("w[t]", shapes={"w": (10, 4), "t": (3,)}, dtypes={"t": "int64"})
    assert (
        "tensordsl.take %w, %t axis 0 : (tensor<10x4xf64>, tensor<3xi64>) -> tensor<3x4xf64>"
        in str(module)
    )


@pytest.mark.parametrize(
    ("text", "error", "message", "column"),
    [
        ("w[f]", TdslTypeError, "an array index is a tensor of int32, int64 or uint8", 3),
        (
            "take(w, f)",
            TdslTypeError,
            "the indices of `take` are a tensor of int32, int64 or uint8",
            9,
        ),
        ("t ** t", TdslTypeError, "`**` of integers (i64[3], i64[3]) is not supported", 3),
        ("w[t, 4]", TdslTypeError, "index 4 is out of bounds for axis 1 with size 4", 6),
        ("w[-11, t]", TdslTypeError, "index -11 is out of bounds for axis 0 with size 10", 3),
        ("w[t, :, t]", TdslTypeError, "too many indices for a tensor of rank 2: 3 were", 2),
        (
            "w[t, t2]",
            TdslTypeError,
            "shape mismatch: indexing arrays could not be broadcast together with shapes (3,) (2,)",
            2,
        ),
        ("w[t, :, :]", TdslTypeError, "too many indices for a tensor of rank 2: 3 were", 2),
        ("zeros(3, dtype=np.uint16)", TdslTypeError, "must name bool, float16", 10),
        ("w[]", TdslSyntaxError, "an empty subscript", 2),
    ],
)
def test_bad_gathers_are_located_errors(
    text: str, error: type[TdslError], message: str, column: int
) -> None:
    with pytest.raises(error) as info:
        to_tensordsl(
            text,
            shapes={"w": (10, 4), "t": (3,), "f": (3,), "t2": (2,)},
            dtypes={"t": "int64", "f": "f32", "w": "f32", "t2": "int32"},
        )
    assert message in str(info.value)
    assert f"<expr>:1:{column}:" in str(info.value)


def test_lang_take_runs_eagerly_as_numpy() -> None:
    np.testing.assert_array_equal(lang.take(W, T, axis=0), np.take(W, T, axis=0))
    np.testing.assert_array_equal(lang.take(W, T), np.take(W, T))
    with pytest.raises(TdslIndexError):
        lang.take(W, np.array([40]))


def test_dask_gathers_through_its_own_take() -> None:
    da = pytest.importorskip("dask.array")
    w = RNG.standard_normal((64, 8))
    fn = JITTensorKernel(target="numpy").compile(
        "exp(w)[t] * 2", shapes={"w": (64, 8), "t": (5,)}, dtypes={"t": "int64"}
    )
    t = np.array([0, 63, -64, 5, 5])
    got = fn(da.from_array(w, chunks=(16, 8)), t)
    assert isinstance(got, da.Array)
    np.testing.assert_allclose(got.compute(), np.exp(w)[t] * 2, rtol=1e-12)
    with pytest.raises(TdslIndexError, match="index 64 is out of bounds"):
        fn(da.from_array(w, chunks=(16, 8)), np.array([0, 64, 1, 2, 3]))
    # indices in a Dask array are checked when computed (Dask's take, given an index
    # out of range, raised an IndexError about a chunk; found by fuzzing)
    chunked = da.from_array(t, chunks=2)
    np.testing.assert_allclose(fn(w, chunked).compute(), np.exp(w)[t] * 2, rtol=1e-12)
    with pytest.raises(TdslIndexError, match="index 64 is out of bounds for axis 0 with size 64"):
        fn(w, da.from_array(np.array([0, 1, 64, 2, 3]), chunks=2)).compute(scheduler="sync")


@pytest.mark.parametrize(("text", "axis"), [("take(x, t, axis=1)", 1), ("x[t]", 0)])
def test_dask_gathers_by_a_multi_dimensional_index_array(text: str, axis: int) -> None:
    """(Dask's take takes 1-D indices only: it raised NotImplementedError, or a bare
    AssertionError for ``x[t]``; found by fuzzing.)"""
    da = pytest.importorskip("dask.array")
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    t = np.array([[1, 2], [3, 0]])
    fn = JITTensorKernel(target="numpy").compile(
        text, shapes={"x": (5, 4), "t": (2, 2)}, dtypes={"x": "f32", "t": "int64"}
    )
    want = np.take(x, t, axis=axis)
    for args in [(x, da.from_array(t, chunks=(1, 2))), (da.from_array(x, chunks=(2, 2)), t)]:
        got = fn(*args)
        assert isinstance(got, da.Array)
        np.testing.assert_array_equal(got.compute(scheduler="sync"), want)


@pytest.mark.skipif(native_unavailable_reason() is not None, reason="no native")
def test_native_gather_never_reads_outside_its_operand() -> None:
    # indices far outside the axis: the loops read index 0 instead, and report
    fn = JITTensorKernel(target="native").compile(
        "w[t]", shapes={"w": (10, 4), "t": (2,)}, dtypes={"t": "int64", "w": "f32"}
    )
    for bad in (np.array([2**40, 0]), np.array([1, -(2**62)])):
        with pytest.raises(TdslIndexError):
            fn(W, bad)
    np.testing.assert_array_equal(fn(W, np.array([1, -1])), W[[1, -1]])


def test_a_gather_of_an_element_wise_result_gathers_its_operands() -> None:
    from tdsl.transforms.fuse import fuse, fusion_report

    shapes = {"w": (10, 4), "t": (3,), "b": (10, 4)}
    dtypes = {"t": "int64"}
    module = to_tensordsl("exp(w * 2 + b)[t]", shapes=shapes, dtypes=dtypes)
    report = fusion_report(module).render()
    # exp computes the gathered rows only: nothing of shape 10x4 is held
    assert "tensor<10x4" not in report.splitlines()[-1]
    takes = [op for op in fuse(module).walk() if op.name == "tensordsl.take"]
    assert {op.operands[0].name_hint for op in takes} == {"w", "b"}


@st.composite
def _advanced_keys(draw: st.DrawFn) -> tuple[Any, ...]:
    """A subscript of ``X`` mixing integer arrays (broadcasting shapes, negative
    indices), integers, slices, ``None`` and ``...``, with at least one array."""
    shape = draw(st.sampled_from([(), (1,), (3,), (2, 1), (2, 3)]))
    key: list[Any] = []
    for n in X.shape[: draw(st.integers(1, 3))]:
        kind = draw(st.sampled_from(["array", "array", "int", "slice"]))
        if kind == "array":
            size = math.prod(shape)
            values = draw(st.lists(st.integers(-n, n - 1), min_size=size, max_size=size))
            key.append(np.array(values, np.int64).reshape(shape))
        elif kind == "int":
            key.append(draw(st.integers(-n, n - 1)))
        else:
            ends = st.none() | st.integers(-n, n)
            key.append(slice(draw(ends), draw(ends), draw(st.sampled_from([None, 1, 2, -1]))))
    if not any(isinstance(k, np.ndarray) for k in key):
        key[0] = np.array([1, -2])
    for _ in range(draw(st.integers(0, 2))):
        key.insert(draw(st.integers(0, len(key))), None)
    if draw(st.booleans()) and len(key) < 4:
        key.insert(draw(st.integers(0, len(key))), Ellipsis)
    return tuple(key)


@pytest.mark.parametrize("target", COMPILED_TARGETS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=_advanced_keys())
def test_advanced_indexing_is_numpys(target: str, key: tuple[Any, ...]) -> None:
    try:
        want = X[key]
    except IndexError:  # (NumPy's own refusal: arrays that do not broadcast)
        assume(False)
        raise
    got = tdsl.trace(lambda x: x[key], target=target)(X)
    np.testing.assert_array_equal(got, want, strict=True)
