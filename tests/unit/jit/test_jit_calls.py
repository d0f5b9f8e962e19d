"""The call interface: Python and NumPy scalars, ``out=``, and what compile checks in a request."""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
import pytest

from tdsl.errors import TdslCallError, TdslNameError, TdslTypeError
from tdsl.jit import CompiledKernel, JITTensorKernel, jit_tensor

FLOATS = [np.float16, np.float32, np.float64]


@pytest.fixture
def jit() -> JITTensorKernel:
    return JITTensorKernel(threads=1)


def array(dtype: Any, shape: tuple[int, ...] = (3, 4), seed: int = 0) -> np.ndarray[Any, Any]:
    return (np.random.default_rng(seed).standard_normal(shape) + 2).astype(dtype)


# ------------------------------------------------------------------- scalars, as NumPy 2 types them

SCALARS: list[tuple[str, Any]] = [
    ("python float", 2.5),
    ("python int", 3),
    ("negative int", -7),
    ("float16 scalar", np.float16(2.5)),
    ("float32 scalar", np.float32(2.5)),
    ("float64 scalar", np.float64(2.5)),
    ("0-d float32 array", np.array(2.5, np.float32)),
    ("0-d float64 array", np.array(2.5)),
]

EXPRESSIONS: list[tuple[str, Any]] = [
    ("A * s", lambda A, s: A * s),
    ("s - A", lambda A, s: s - A),
    ("A / (s + 1)", lambda A, s: A / (s + 1)),
    ("maximum(A, s) - s * s", lambda A, s: np.maximum(A, s) - s * s),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(("kind", "scalar"), SCALARS, ids=[k for k, _ in SCALARS])
@pytest.mark.parametrize(("expr", "reference"), EXPRESSIONS, ids=[e for e, _ in EXPRESSIONS])
def test_scalars_promote_as_in_numpy(
    jit: JITTensorKernel,
    matches: Any,
    dtype: Any,
    kind: str,
    scalar: Any,
    expr: str,
    reference: Any,
) -> None:
    A = array(dtype)
    want = reference(A, scalar)
    for _ in range(2):  # the second call takes the one-shot fast path
        matches(jit(expr, A=A, s=scalar), want)


def test_two_weak_scalars_compute_like_python_floats(jit: JITTensorKernel, matches: Any) -> None:
    for dtype in FLOATS:
        A = array(dtype)
        matches(jit("A * (s + t)", A=A, s=1.5, t=2), A * (1.5 + 2))
        matches(jit("A * s * t", A=A, s=1.5, t=2), A * 1.5 * 2)
    # weak values and literals only: a float64, as Python's float is
    matches(jit("s * t - 1", s=1.5, t=2), np.asarray(1.5 * 2 - 1))
    matches(jit("exp(s) + t", s=0.5, t=1), np.exp(0.5) + 1)


@pytest.mark.parametrize("target", ["numpy", "native"])
def test_a_one_shot_call_with_an_int_does_not_run_the_kernel_of_a_float(target: str) -> None:
    """``jit("x * s", x=x, s=3)`` after ``s=2.5``: the fast path ran the kernel compiled
    for a weak float (float64) for the int, where a fresh call gives int32, as NumPy
    does (found by fuzzing the JIT).  A compiled kernel still converts an int given
    for its weak float."""
    if target == "native":
        pytest.importorskip("llvmlite")
    jit = JITTensorKernel(target=target, threads=1)
    x = np.arange(4, dtype=np.int32)
    for text, scalars in (("x * s", (2.5, 3)), ("x // s", (2.0, 2))):
        for s in (*scalars, *scalars):
            got = jit(text, x=x, s=s)
            want = eval(text, {}, {"x": x, "s": s})
            assert got.dtype == want.dtype, (text, s)
            np.testing.assert_array_equal(got, want)
    kernel = jit.compile("x * s", {"x": (4,)}, {"x": "i32", "s": float})
    for got in (kernel(x, 3), kernel(x=x, s=3)):
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, x * 3.0)


def test_a_python_int_is_a_weak_integer_as_in_numpy_2(jit: JITTensorKernel) -> None:
    t = np.array([7, -7, 2**31 - 1], np.int32)
    b = np.array([True, False, True])
    cases = [
        ("t * s + s // 2", {"t": t, "s": 3}),  # int32 stays int32, and wraps
        ("t * s", {"t": t, "s": 2.5}),  # a float makes it float64
        ("b + s", {"b": b, "s": 2}),  # booleans and a Python int: int64
        ("s + n", {"s": 3, "n": 4}),  # Python ints alone: int64
        ("s / n", {"s": 3, "n": 4}),
    ]
    for text, values in cases:
        want = eval(text, {}, dict(values))
        got = jit(text, **values)
        assert np.asarray(got).dtype == np.asarray(want).dtype, text
        np.testing.assert_array_equal(got, want)
    kernel = jit.compile("t * n", {"t": (3,)}, {"t": "i32", "n": int})
    assert kernel.signature == "main(t: i32[3], n: int) -> i32[3]"
    with pytest.raises(TdslCallError, match="is a weak integer: expected a Python int"):
        kernel(t, 2.5)
    # a Python int beyond the int32 it meets: NumPy 2's OverflowError, a TdslCallError
    for call in (lambda: kernel(t, 2**40), lambda: jit("t * n", t=t, n=-(2**31) - 1)):
        with pytest.raises(TdslCallError, match=r"in \[-2147483648, 2147483647\], got -?\d+"):
            call()
    wide = t.astype(np.int64)
    np.testing.assert_array_equal(jit("t * n", t=wide, n=2**40), wide * 2**40)


def test_a_python_int_beyond_int64_meeting_an_integer_array_is_refused(
    jit: JITTensorKernel,
) -> None:
    """tdsl types a Python int beyond int64 as a weak float; where it meets an integer
    array (itself or through arithmetic with literals) NumPy 2 raises OverflowError, so
    the call is refused, where it returned floats (found by fuzzing).  Meeting floats, or
    as a ``where`` condition, it is the float NumPy makes of it."""
    u = np.array([0, 255, 7], np.uint8)
    t = np.array([7, -7, 3], np.int32)
    b = np.array([True, False, True])
    for text, values in (
        ("a + s", {"a": u, "s": 2**70}),
        ("a + s * 2", {"a": t, "s": 2**63}),
        ("a - s", {"a": b, "s": -(2**63) - 1}),
    ):
        with pytest.raises(OverflowError):
            eval(text, {}, dict(values))
        with pytest.raises(TdslCallError, match="meets an integer array: tdsl would take"):
            jit(text, **values)
    # a declared weak float meeting integers: floats, and ints within int64
    kernel = jit.compile("a + s", {"a": (3,)}, {"a": "u8", "s": float})
    np.testing.assert_array_equal(kernel(u, 2), u + 2.0)
    with pytest.raises(TdslCallError, match="meets an integer array"):
        kernel(u, 2**63)
    with pytest.raises(TdslCallError, match="expected a Python int or float, got a value of"):
        kernel(u, "2")
    f = np.array([1.5, -2.0, 0.0], np.float32)
    for text, values in (
        ("f + s", {"f": f, "s": 2**70}),
        ("where(s > 0, a, a + 1) + f", {"a": u, "f": f, "s": 2**80}),
    ):
        want = eval(text.replace("where", "np.where"), {"np": np}, dict(values))
        got = jit(text, **values)
        assert got.dtype == want.dtype, text
        np.testing.assert_array_equal(got, want)


def test_a_python_int_beyond_the_dtype_compares_exactly(jit: JITTensorKernel) -> None:
    """NumPy 2 compares an integer array with a Python int beyond its dtype (where
    arithmetic with it is an OverflowError): so does tdsl, given at run time or written
    (it was a call error, and a literal a compile error)."""
    t = np.array([7, -7, 2**31 - 1, -(2**31)], np.int32)
    u = np.array([0, 255, 7, 1], np.uint8)
    text = "(x < n) & (n != x) | (x >= n) ^ (x == n)"
    for x, n in ((t, 2**40), (t, -(2**31) - 1), (u, -1), (u, 300), (u, 200)):
        kernel = jit.compile(text, {"x": x.shape}, {"x": x.dtype, "n": int})
        np.testing.assert_array_equal(kernel(x, n), eval(text, {}, {"x": x, "n": n}))
        np.testing.assert_array_equal(jit(f"x <= {n}", x=x), x <= n)  # a literal
    with pytest.raises(TdslCallError, match=r"in \[0, 255\], got 300"):
        jit.compile("x + n", {"x": (4,)}, {"x": "u8", "n": int})(u, 300)  # arithmetic


def test_a_weak_scalar_takes_the_dtype_of_each_tensor_it_meets(
    jit: JITTensorKernel, matches: Any
) -> None:
    A, B = array(np.float16), array(np.float32, seed=1)
    matches(jit("A * s + B * s", A=A, B=B, s=0.1), A * 0.1 + B * 0.1)
    matches(jit("(A + s) * (B - s)", A=A, B=B, s=1e-3), (A + 1e-3) * (B - 1e-3))
    fn = jit.compile(
        "A * s + B * s", {"A": (3, 4), "B": (3, 4)}, {"A": "f16", "B": "f32", "s": float}
    )
    casts = fn.ir["tensordsl"].count("tensordsl.cast %s")
    assert casts == 2  # once per dtype it meets


def test_weak_and_strong_scalars_are_different_kernels(jit: JITTensorKernel) -> None:
    A = array(np.float16)
    weak = jit("A * s", A=A, s=2.0)
    strong = jit("A * s", A=A, s=np.float32(2.0))
    weak_again = jit("A * s", A=A, s=2.0)
    assert (weak.dtype, strong.dtype, weak_again.dtype) == (np.float16, np.float32, np.float16)
    assert jit.cache_info().misses == 2
    k_weak = jit.compile("A * s", {"A": (3, 4)}, {"A": "f16", "s": float})
    k_f64 = jit.compile("A * s", {"A": (3, 4), "s": ()}, {"A": "f16", "s": "f64"})
    assert k_weak is not k_f64
    assert k_weak.signature == "main(A: f16[3, 4], s: float) -> f16[3, 4]"
    assert k_f64.signature == "main(A: f16[3, 4], s: f64[]) -> f64[3, 4]"
    assert [a.weak for a in k_weak.args] == [False, True]


def test_a_compiled_kernel_takes_scalars(jit: JITTensorKernel, matches: Any) -> None:
    A = array(np.float32)
    weak = jit.compile("A * s", {"A": (3, 4)}, {"A": "f32", "s": float})
    matches(weak(A, 2), A * 2)
    matches(weak(A=A, s=2.5), A * 2.5)
    strong = jit.compile("A * s", {"A": (3, 4), "s": ()}, "f32")
    for s in (np.float32(2.5), np.array(2.5, np.float32), 2.5, 2):
        matches(strong(A, s), A * np.float32(s))


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        (True, r"argument `s` of kernel `main` is a Python bool \(True\): expected"),
        (np.bool_(False), r"`s` of kernel `main` is a weak scalar: expected a Python int or float"),
        (
            np.float32(2),
            r"`s` of kernel `main` is a weak scalar: expected a Python int or float, got a value of type `float32`",
        ),
        (np.array(2.0), r"is a weak scalar: expected a Python int or float, got f64\[\]"),
        # (a subclass of float, but NumPy's scalar, strong: NumPy's `A * s` is float64,
        # where a weak s kept A's dtype; found by fuzzing)
        (np.float64(2), r"got a value of type `float64`, a NumPy scalar, which NumPy types"),
        (10**400, r"`s` of kernel `main` is too large for a float: an int of 401 digits"),
    ],
)
def test_weak_argument_errors(jit: JITTensorKernel, value: Any, pattern: str) -> None:
    fn = jit.compile("A * s", {"A": (2,)}, {"s": float})
    with pytest.raises(TdslCallError, match=pattern):
        fn(A=np.ones(2), s=value)


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        (True, r"argument `s` is a Python bool \(True\): pass np.bool_\(True\) or a bool array"),
        (
            "2.0",
            r"argument `s` must be a NumPy array or a Python int or float, got a value of type `str`",
        ),
        (2 + 1j, r"got a value of type `complex`"),
        (10**400, r"argument `s` of kernel `main` is too large for a float"),
    ],
)
def test_one_shot_scalar_errors(jit: JITTensorKernel, value: Any, pattern: str) -> None:
    with pytest.raises(TdslCallError, match=pattern):
        jit("A * s", A=np.ones(2), s=value)


@pytest.mark.parametrize(
    ("dtype", "value", "bounds"),
    [("i32", 2**40, "[-2147483648, 2147483647]"), ("u8", -1, "[0, 255]"), ("u8", 300, "[0, 255]")],
)
def test_a_python_int_beyond_a_0d_integer_input_says_its_range(
    jit: JITTensorKernel, dtype: str, value: int, bounds: str
) -> None:
    """(It said "too large for a float", of -1 too.)"""
    kernel = jit.compile("x * 2", {"x": ()}, dtype)
    with pytest.raises(TdslCallError) as err:
        kernel(value)
    assert f"is {dtype}[]: the Python int {value} does not fit in {bounds}" in str(err.value)


def test_arguments_bind_by_position_and_name_as_python_binds_them(
    jit: JITTensorKernel, matches: Any
) -> None:
    A = array(np.float32)
    fn = jit.compile("A * s - B", {"A": (3, 4), "B": (3, 4)}, {"A": "f32", "B": "f32", "s": float})
    assert fn.arg_names == ("A", "s", "B")
    want = A * np.float32(2.5) - A
    for args, kwargs in [
        ((A, 2.5, A), {}),
        ((A,), {"s": 2.5, "B": A}),
        ((A, 2.5), {"B": A}),
        ((), {"B": A, "A": A, "s": 2.5}),
    ]:
        matches(fn(*args, **kwargs), want)
        out = np.empty_like(A)
        assert fn(*args, **kwargs, out=out) is out
        matches(out, want)
    # a value given both ways (once a raw TypeError from Python's own binding)
    for args, kwargs, name in [((A, 2.5), {"s": 1.0, "B": A}, "s"), ((A,), {"A": A}, "A")]:
        with pytest.raises(TdslCallError, match=rf"got two values for argument `{name}`"):
            fn(*args, **kwargs)
    with pytest.raises(TdslCallError, match="takes 3 arguments"):
        fn(A, 2.5, A, A)
    with pytest.raises(TdslCallError, match="unexpected argument `C`"):
        fn(A, 2.5, B=A, C=A)
    with pytest.raises(TdslCallError, match="`s` of kernel `main` is a weak scalar"):
        fn(A, B=A, s=np.float32(2))


def test_a_numpy_integer_scalar_is_a_strong_integer_input(jit: JITTensorKernel) -> None:
    for a in (np.ones(2), np.arange(3, dtype=np.int32)):
        got = jit("A * s", A=a, s=np.int64(3))
        want = a * np.int64(3)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    with pytest.raises(TdslCallError, match="argument `s` has dtype uint16"):
        jit("A * s", A=np.ones(2), s=np.uint16(3))


# ------------------------------------------------------------------- out=

MLP = textwrap.dedent(
    """\
    def mlp(x: f32[40, 8], w: f32[8, 6], b: f32[6]):
        h = relu(x @ w + b)
        return softmax(h), h
    """
)


def softmax(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def strided(shape: tuple[int, ...], dtype: Any) -> np.ndarray[Any, Any]:
    base = np.full((*shape[:-1], 3 * shape[-1]), np.nan, dtype)
    view = base[..., ::3]
    assert not view.flags.c_contiguous
    return view


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("budget", [64, 1_000_000])
def test_out_receives_the_result(threads: int, budget: int, matches: Any) -> None:
    jit = JITTensorKernel(memory_budget=budget, threads=threads)
    A, B = array(np.float32, (50, 30)), array(np.float32, (50, 30), seed=1)
    want = np.maximum(A, 0) * B - A
    fn = jit.compile("relu(A) * B - A", {"A": A.shape, "B": B.shape}, "f32")
    for out in (np.empty_like(want), strided(want.shape, np.float32)):
        assert fn(A=A, B=B, out=out) is out
        matches(out, want)
        out[...] = np.nan
        assert fn(A, B, out=(out,)) is out  # a one-element tuple, as NumPy's ufuncs take
        matches(out, want)
    for _ in range(2):  # the one-shot call, then its fast path
        out = strided(want.shape, np.float32)
        assert jit("relu(A) * B - A", A=A, B=B, out=out) is out
        matches(out, want)
    out = np.empty_like(want)
    assert jit_tensor("relu(A) * B - A", A=A, B=B, out=out) is out
    matches(out, want)


def test_out_with_several_results(jit: JITTensorKernel, matches: Any) -> None:
    x, w, b = array(np.float32, (40, 8)), array(np.float32, (8, 6), 1), array(np.float32, (6,), 2)
    h = np.maximum(x @ w + b, 0)
    fn = jit.compile(MLP)
    outs = (strided((40, 6), np.float32), np.empty((40, 6), np.float32))
    assert fn(x, w, b, out=outs) is outs
    matches(outs[0], softmax(h))
    matches(outs[1], h)
    outs = (np.empty((40, 6), np.float32), np.empty((40, 6), np.float32))
    assert jit(MLP, x=x, w=w, b=b, out=outs) is outs
    matches(outs[1], h)


def test_out_when_the_result_is_an_input_or_a_view(jit: JITTensorKernel) -> None:
    program = "def k(x: f64[3, 2]):\n    return x, transpose(x), x\n"
    x = array(np.float64, (3, 2))
    outs = (np.empty((3, 2)), strided((2, 3), np.float64), np.empty((3, 2)))
    assert jit(program, x=x, out=outs) is outs
    for got, want in zip(outs, (x, x.T, x), strict=True):
        np.testing.assert_array_equal(got, want)
    assert not any(np.shares_memory(o, x) for o in outs)


_MLPS: dict[str, CompiledKernel] = {}


@pytest.fixture
def mlp(jit_target: str) -> CompiledKernel:
    """``MLP`` compiled once per default target: the tests that take it only call it with
    a bad ``out``, which it refuses before computing anything."""
    if jit_target not in _MLPS:
        _MLPS[jit_target] = JITTensorKernel(threads=1).compile(MLP)
    return _MLPS[jit_target]


def mlp_args() -> dict[str, np.ndarray[Any, Any]]:
    return {
        "x": array(np.float32, (40, 8)),
        "w": array(np.float32, (8, 6), 1),
        "b": array(np.float32, (6,), 2),
    }


def f32(*shape: int) -> np.ndarray[Any, Any]:
    return np.empty(shape, np.float32)


@pytest.mark.parametrize(
    ("make_out", "pattern"),
    [
        (
            lambda a: f32(40, 6),
            r"`out` of kernel `mlp` must be a tuple of 2 arrays \(f32\[40, 6\], f32\[40, 6\]\), got f32\[40, 6\]",
        ),
        (
            lambda a: [f32(40, 6), f32(40, 6)],
            r"must be a tuple of 2 arrays .*, got a value of type `list`",
        ),
        (lambda a: (f32(40, 6),), r"must be a tuple of 2 arrays .*, got a tuple of 1"),
        (
            lambda a: (f32(40, 6), f32(6, 40)),
            r"`out\[1\]` of kernel `mlp` has the wrong shape: expected f32\[40, 6\], got f32\[6, 40\]",
        ),
        (
            lambda a: (np.empty((40, 6)), f32(40, 6)),
            r"`out\[0\]` of kernel `mlp` has the wrong dtype: expected f32\[40, 6\], got f64\[40, 6\]",
        ),
        (
            lambda a: (f32(40, 6), [[0.0] * 6] * 40),
            r"`out\[1\]` of kernel `mlp` must be a NumPy array of f32\[40, 6\], got a value of type `list`",
        ),
        (lambda a: (f32(40, 6), np.zeros((40, 6), ">f4")), r"`out\[1\]` .* wrong dtype"),
        (
            lambda a: (np.frombuffer(bytes(960), np.float32).reshape(40, 6), f32(40, 6)),
            r"`out\[0\]` of kernel `mlp` is read-only",
        ),
        (  # rows that overlap: no array of results (it was accepted; found by fuzzing)
            lambda a: (np.lib.stride_tricks.as_strided(f32(60), (40, 6), (4, 4)), f32(40, 6)),
            r"`out\[0\]` of kernel `mlp` may overlap itself \(a broadcast or as_strided view\)",
        ),
        (
            lambda a: (f32(40, 6), np.broadcast_to(f32(6), (40, 6))),
            r"`out\[1\]` of kernel `mlp` is read-only",  # (NumPy makes broadcasts read-only)
        ),
    ],
)
def test_bad_out_says_what_was_expected(mlp: CompiledKernel, make_out: Any, pattern: str) -> None:
    args = mlp_args()
    with pytest.raises(TdslCallError, match=pattern):
        mlp(**args, out=make_out(args))


def test_out_may_not_share_memory(jit: JITTensorKernel) -> None:
    A = np.ones((4, 6))
    with pytest.raises(
        TdslCallError, match=r"`out` of kernel `main` shares memory with argument `A`"
    ):
        jit("relu(A) + B", A=A, B=np.ones((4, 6)), out=A)
    base = np.zeros((4, 12))
    with pytest.raises(TdslCallError, match=r"shares memory with argument `B`"):
        jit("relu(A) + B", A=A, B=base[:, ::2], out=base[:, 4:10])
    # interleaved views of one buffer share no element: allowed
    out = base[:, 1::2]
    jit("relu(A) + B", A=A, B=base[:, ::2], out=out)
    np.testing.assert_array_equal(out, np.ones((4, 6)))
    big = np.zeros((40, 12), np.float32)
    with pytest.raises(
        TdslCallError, match=r"`out\[0\]` and `out\[1\]` of kernel `mlp` share memory"
    ):
        jit(MLP, **mlp_args(), out=(big[:, :6], big[:, 3:9]))


# ------------------------------------------------------------------- what compile checks


def test_an_input_named_out_is_refused_at_its_name() -> None:
    jit = JITTensorKernel()
    with pytest.raises(TdslNameError, match=r"an input may not be named `out`") as err:
        jit.compile("relu(out) + A", {"out": (2,), "A": (2,)})
    loc = err.value.location
    assert loc is not None and (loc.line, loc.column, loc.length) == (1, 6, 3)
    with pytest.raises(TdslNameError, match=r"an input may not be named `out`") as err:
        jit.compile(
            "def k(x: f64[2],\n      out: f64[2]):\n    return x + out\n", filename="k.tdsl"
        )
    loc = err.value.location
    assert loc is not None and (loc.file, loc.line, loc.column) == ("k.tdsl", 2, 7)
    with pytest.raises(TdslNameError, match="may not be named `out`"):
        jit("out * 2", out=np.ones(2))


@pytest.mark.parametrize(
    ("shapes", "dtypes", "pattern"),
    [
        (
            {"A": (2,), "B": (2,), "b": (2,)},
            None,
            r"`shapes=` names `b`, which the expression does not use; did you mean `B`\? \(its inputs are `A`, `B`\)",
        ),
        (
            {"A": (2,), "B": (2,)},
            {"A": "f32", "C": "f64"},
            r"`dtypes=` names `C`, which the expression does not use \(its inputs are `A`, `B`\)",
        ),
        ({"A": (2,), "B": (2,), "s": ()}, None, r"`shapes=` names `s`"),
    ],
)
def test_names_an_expression_does_not_use(shapes: Any, dtypes: Any, pattern: str) -> None:
    with pytest.raises(TdslNameError, match=pattern):
        JITTensorKernel().compile("relu(A) + B", shapes, dtypes)


def test_names_an_expression_uses_may_come_in_any_order() -> None:
    fn = JITTensorKernel().compile("relu(A) + B", {"B": (2,), "A": (2,)}, {"B": "f32", "A": "f64"})
    assert fn.arg_names == ("A", "B")


KERNEL = "def k(x: f32[4, 3], s: f32[]):\n    return x * s\n"


@pytest.mark.parametrize(
    ("shapes", "dtypes", "error", "pattern"),
    [
        (
            {"x": (4, 3), "s": (1,)},
            None,
            TdslTypeError,
            r"parameter `s` of kernel `k` is f32\[\] in its signature, but `shapes=` gives \(1,\)",
        ),
        (
            {"x": (4, 3)},
            None,
            TdslNameError,
            r"`shapes=` gives no shape for parameter `s` of kernel `k` \(f32\[\] in its signature\)",
        ),
        (
            {"x": (4, 3), "s": (), "y": (2,)},
            None,
            TdslNameError,
            r"`shapes=` names `y`, which is not a parameter of kernel `k` \(its parameters are `x`, `s`\)",
        ),
        (
            None,
            "f64",
            TdslTypeError,
            r"parameter `x` of kernel `k` is f32\[4, 3\] in its signature, but `dtypes=` gives float64",
        ),
        (
            None,
            {"x": "f32"},
            TdslTypeError,
            r"parameter `s` of kernel `k` is f32\[\] in its signature, but `dtypes=` gives float64",
        ),
        (
            None,
            {"x": float, "s": "f32"},
            TdslTypeError,
            r"parameter `x` .* gives a Python float .*, which only a 0-d parameter takes",
        ),
        (
            None,
            {"x": "f32", "S": "f32"},
            TdslNameError,
            r"`dtypes=` names `S`, which is not a parameter of kernel `k`; did you mean `s`\?",
        ),
    ],
)
def test_a_program_signature_must_match_shapes_and_dtypes(
    shapes: Any, dtypes: Any, error: type[Exception], pattern: str
) -> None:
    with pytest.raises(error, match=pattern):
        JITTensorKernel().compile(KERNEL, shapes, dtypes)


def test_a_program_signature_matched_exactly(matches: Any) -> None:
    jit = JITTensorKernel()
    plain = jit.compile(KERNEL)
    assert jit.compile(KERNEL, {"s": (), "x": [4, 3]}, np.float32) is not None
    fn = jit.compile(KERNEL, {"x": (4, 3), "s": ()}, {"x": "float32", "s": float})
    assert fn.signature == plain.signature == "k(x: f32[4, 3], s: f32[]) -> f32[4, 3]"
    x = array(np.float32, (4, 3))
    matches(fn(x, 0.5), x * np.float32(0.5))
    matches(jit(KERNEL, x=x, s=0.5), x * np.float32(0.5))  # a Python scalar for a 0-d parameter


def test_jit_tensor_infers_or_takes_shapes(matches: Any) -> None:
    a, b = array(np.float32, (4,)), array(np.float32, (4,), 1)
    matches(jit_tensor("relu(A) + B * s", A=a, B=b, s=2.0), np.maximum(a, 0) + b * 2.0)
    matches(
        jit_tensor("relu(A) + B * s", {"A": (4,), "B": 4}, A=a, B=b, s=2), np.maximum(a, 0) + b * 2
    )
    with pytest.raises(
        TdslNameError, match=r"`shapes=` names `C`, which the expression does not use"
    ):
        jit_tensor("relu(A) + B", {"A": (4,), "B": (4,), "C": (4,)}, A=a, B=b)
    with pytest.raises(TdslCallError, match=r"unexpected argument `C`"):
        jit_tensor("relu(A) + B", {"A": (4,), "B": (4,)}, A=a, B=b, C=b)


def test_a_weak_int_beyond_int64_for_a_uint64_operand_says_what_to_declare(
    jit: JITTensorKernel,
) -> None:
    """(It said NumPy 2 raises OverflowError, which it does not: it computes in uint64.)"""
    kernel = jit.compile("A + s", {"A": (3,), "s": ()}, {"A": "u64", "s": int})
    with pytest.raises(TdslCallError, match="passed as int64: 9223372036854775808 does not fit"):
        kernel(np.ones(3, np.uint64), 2**63)
    strong = jit.compile("A + s", {"A": (3,), "s": ()}, {"A": "u64", "s": "u64"})
    got = strong(np.ones(3, np.uint64), np.uint64(2**63))
    assert got.dtype == np.uint64 and (got == np.ones(3, np.uint64) + 2**63).all()


def test_numpys_byte_codes_that_read_as_bits_are_refused_or_explained() -> None:
    """``i8`` is int64 to NumPy and an 8-bit integer to MLIR: refused, as in the frontend
    (``jit.compile`` took it as int64).  ``u8`` is tdsl's uint8, NumPy's uint64: a call
    with uint64 says so (found by fuzzing)."""
    jit = JITTensorKernel()
    with pytest.raises(TdslTypeError, match=r"dtype `i8` is ambiguous: NumPy's code for int64"):
        jit.compile("A + 1", {"A": (3,)}, "i8")
    kernel = jit.compile("A + 1", {"A": (3,)}, "u8")
    with pytest.raises(TdslCallError, match=r"got u64\[3\] \(tdsl's `u8` is uint8; NumPy's"):
        kernel(A=np.arange(3, dtype=np.uint64))


@pytest.mark.parametrize("shape", [(0, 4), (2, 0, 3)])
def test_an_empty_out_is_accepted(shape: tuple[int, ...]) -> None:
    """NumPy may give an array of no elements zero strides: it shares no memory, and the
    overlap test refused it (found by fuzzing)."""
    kernel = JITTensorKernel().compile("A * 2", {"A": shape}, "f32")
    out = np.empty(shape, np.float32)
    assert kernel(A=np.empty(shape, np.float32), out=out) is out
