"""``isnan``, ``isinf``, ``isfinite``, ``clip``, ``all`` and ``any``, NumPy's constants and
spellings, on every target against NumPy, special values element by element
(nan, +-inf, +-0, subnormals, the largest finite values)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from all_targets import TARGETS, run_on

from tdsl.errors import TdslNameError, TdslSyntaxError, TdslTypeError
from tdsl.frontend import to_tensordsl
from tdsl.jit import JITTensorKernel

Array = np.ndarray[Any, Any]
BUDGETS = [16, 10**6]
DTYPES = [np.float16, np.float32, np.float64]


def special(dtype: Any) -> Array:
    """Every special value of ``dtype`` and some ordinary ones, as a 4 x 8 array."""
    info = np.finfo(dtype)
    values = [
        np.nan,
        -np.nan,
        np.inf,
        -np.inf,
        0.0,
        -0.0,
        info.smallest_subnormal,
        -info.smallest_subnormal,
        info.max,
        -info.max,
        info.tiny,
        1.0,
        -1.0,
        0.5,
        2.5,
        -3.75,
    ]
    x = np.array(values * 2, dtype=dtype)
    return np.random.default_rng(0).permutation(x).reshape(4, 8)


run = run_on


def same(got: Array, want: Any) -> None:
    """Equal to NumPy's ``want`` element by element: dtype, nan, the sign of zero."""
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape)
    assert np.array_equal(got, want, equal_nan=want.dtype.kind == "f"), (got, want)
    if want.dtype.kind == "f":  # (NumPy does not define the sign of a nan)
        numbers = ~np.isnan(want)
        assert np.array_equal(np.signbit(got[numbers]), np.signbit(want[numbers])), (got, want)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite"])
def test_classifications_are_numpys(target: str, dtype: Any, name: str) -> None:
    x = special(dtype)
    same(run(target, 10**6, f"{name}(x)", x=x), getattr(np, name)(x))
    # booleans are 0 and 1: never nan nor infinite
    b = x > 0
    same(run(target, 10**6, f"{name}(b)", b=b), getattr(np, name)(b))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_clip_is_numpys_with_special_values_and_bounds(
    target: str, budget: int, dtype: Any
) -> None:
    x = special(dtype)
    rng = np.random.default_rng(1)
    lo = np.array([-1.0, 0.0, -0.0, np.nan, -np.inf, 2.0, 0.5, -3.0], dtype=dtype)
    hi = rng.permutation(np.array([1.0, 0.0, -0.0, np.inf, np.nan, 1.0, 3.0, -4.0], dtype=dtype))
    same(run(target, budget, "clip(x, lo, hi)", x=x, lo=lo, hi=hi), np.clip(x, lo, hi))
    # literal bounds take x's dtype (weak), and -0.0 / 0.0 keep x where it equals them
    want = np.clip(x, dtype(-0.0), dtype(0.0))
    same(run(target, budget, "clip(x, -0.0, 0.0)", x=x), want)
    same(run(target, budget, "clip(x, 3, 1)", x=x), np.clip(x, dtype(3), dtype(1)))
    # one-element bounds that are arrays take NumPy's scalar-bounds loop too
    lo1, hi1 = np.array([[-0.0]], dtype=dtype), np.array([0.0], dtype=dtype)
    same(run(target, budget, "clip(x, lo, hi)", x=x, lo=lo1, hi=hi1), np.clip(x, lo1, hi1))
    lo2 = np.full((4, 1), 0.0, dtype=dtype)
    same(run(target, budget, "clip(x, lo, 0.0)", x=x, lo=lo2), np.clip(x, lo2, dtype(0.0)))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("text", "first"), [("clip(2, x, 2.5)", 2), ("clip(2.5, x, u)", 2.5), ("clip(2, u, 3)", 2)]
)
def test_a_number_clipped_is_an_array_of_numpys_dtype(target: str, text: str, first: Any) -> None:
    # np.clip makes an array of its first argument (int64 or float64), so a Python number
    # there is strong, where the bounds stay weak (found by fuzzing: float32 before)
    x = np.array([1.0, 3.0, -np.inf], dtype=np.float32)
    u = np.array([1, 3, 250], dtype=np.uint8)
    used = {k: v for k, v in {"x": x, "u": u}.items() if re.search(rf"\b{k}\b", text)}
    _, lo, hi = (v.strip() for v in text[5:-1].split(","))
    want = np.clip(first, *(used[b] if b in used else eval(b) for b in (lo, hi)))
    same(run(target, 1_000_000, text, **used), want)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize(
    "call,axis,keepdims",
    [
        ("all", None, False),
        ("any", None, False),
        ("all", 1, False),
        ("any", 0, True),
        ("all", -1, True),
        ("any", 1, False),
    ],
)
def test_all_and_any_are_numpys(
    target: str, budget: int, call: str, axis: int | None, keepdims: bool
) -> None:
    x = np.concatenate([special(np.float32), special(np.float32)[::-1]]).reshape(2, 4, 8)
    kw = "" if axis is None else f", axis={axis}"
    kw += ", keepdims=true" if keepdims else ""
    fn = getattr(np, call)
    # booleans, a float (nonzero is true, nan included), and a fused comparison
    b = x > 0
    same(run(target, budget, f"{call}(b{kw})", b=b), fn(b, axis=axis, keepdims=keepdims))
    same(run(target, budget, f"{call}(x{kw})", x=x), fn(x, axis=axis, keepdims=keepdims))
    got = run(target, budget, f"{call}(isfinite(x) & (x > -1){kw})", x=x)
    same(got, fn(np.isfinite(x) & (x > -1), axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("target", TARGETS)
def test_all_of_nothing_is_true_and_any_false(target: str) -> None:
    b = np.zeros((3, 0), dtype=bool)
    same(run(target, 10**6, "all(b, axis=1)", b=b), np.all(b, axis=1))
    same(run(target, 10**6, "any(b, axis=1)", b=b), np.any(b, axis=1))
    same(run(target, 10**6, "all(b)", b=b), np.all(b))


@pytest.mark.parametrize("target", TARGETS)
def test_constants_are_numpys_literals(target: str) -> None:
    x = special(np.float32)
    with np.errstate(all="ignore"):
        want = (x * np.float32(np.pi) - np.float32(np.e)) / np.float32(np.inf) + np.float32(np.nan)
    same(run(target, 10**6, "(x * pi - e) / inf + nan", x=x), want)
    same(run(target, 10**6, "where(isnan(x), -inf, x)", x=x), np.where(np.isnan(x), -np.inf, x))
    same(run(target, 10**6, "np.maximum(x, np.pi)", x=x), np.maximum(x, np.float32(np.pi)))


def test_a_name_in_scope_shadows_a_constant() -> None:
    e = np.array([1.0, 2.0])
    jit = JITTensorKernel(target="numpy")
    fn = jit.compile("e * 2", shapes={"e": (2,)})
    same(fn(e=e), e * 2)
    program = "def f(x: f64[2]):\n    pi = x + 1\n    return pi * 2\n"
    same(jit.compile(program)(x=e), (e + 1) * 2)
    # without a shape, `pi` is the constant: the kernel has no input
    fn = jit.compile("pi * 2")
    same(fn(), np.float64(np.pi * 2))


@pytest.mark.parametrize(
    "text,message",
    [
        ("argsort(x)", "unknown function `argsort`: NumPy's `argsort` is not in the language"),
        ("np.sort(x)", "unknown function `sort`: NumPy's `sort` is not in the language"),
        ("amax(x)", "unknown function `amax`: the language spells NumPy's `amax` as `max`"),
        ("nansum(x)", "use sum(where(isnan(x), 0.0, x))"),
        ("exx(x)", "unknown function `exx`; did you mean `exp`?"),
    ],
)
def test_a_missing_function_is_named_with_the_nearest_way(text: str, message: str) -> None:
    with pytest.raises(TdslNameError) as info:
        to_tensordsl(text, shapes={"x": (4,)})
    assert message in str(info.value)
    assert "did you mean `max`" not in str(info.value)


def test_the_transpose_attribute_and_other_attributes() -> None:
    q = np.arange(6.0).reshape(2, 3)
    k = np.arange(12.0).reshape(4, 3)
    fn = JITTensorKernel(target="numpy").compile(
        "-q.T.T @ (k + 1).T", shapes={"q": q.shape, "k": k.shape}
    )
    same(fn(q=q, k=k), -q @ (k + 1).T)
    with pytest.raises(
        TdslSyntaxError, match=r"`\.shape` is not in the language; shapes are static"
    ):
        to_tensordsl("x.shape", shapes={"x": (4,)})
    with pytest.raises(TdslSyntaxError, match=r"attribute `\.Tx` is not in the language"):
        to_tensordsl("x.Tx", shapes={"x": (4,)})


def test_the_tables_of_numpy_names_are_documented_and_disjoint_from_the_functions() -> None:
    from pathlib import Path

    from tdsl.frontend.functions import FUNCTIONS, NUMPY_ALIASES, NUMPY_MISSING

    assert not set(NUMPY_ALIASES) & set(FUNCTIONS)
    assert not set(NUMPY_MISSING) & set(FUNCTIONS)
    assert not set(NUMPY_ALIASES) & set(NUMPY_MISSING)
    page = (Path(__file__).parents[3] / "docs" / "from-numpy.md").read_text()
    for name in [*NUMPY_ALIASES, *NUMPY_MISSING]:
        assert f"`np.{name}`" in page, name


def test_all_and_any_over_dask_chunks() -> None:
    da = pytest.importorskip("dask.array")
    x = special(np.float64).reshape(2, 16)
    chunked = da.from_array(x, chunks=(1, 4))
    jit = JITTensorKernel(target="numpy", memory_budget=64)
    for call in ("all", "any"):
        fn = jit.compile(f"{call}(x > -1, axis=1)", shapes={"x": x.shape})
        same(np.asarray(fn(x=chunked).compute()), getattr(np, call)(x > -1, axis=1))


BOOL_M = np.random.default_rng(1).random((5, 4)) < 0.5
BOOL_N = np.random.default_rng(2).random((5, 4)) < 0.5
BOOL_M[0], BOOL_M[:, 1] = True, False  # a row all true, a column all false


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "text",
    [
        "m + n",
        "m * n",
        "maximum(m, n)",
        "minimum(m, n)",
        "max(m)",
        "min(m, axis=0)",
        "max(m, axis=1, keepdims=True)",
        "min(m, axis=(0, 1))",
        "abs(m)",
        "max(m + n, axis=0) * minimum(m, n)",
    ],
)
def test_arithmetic_of_booleans_keeps_booleans_as_numpy(target: str, text: str) -> None:
    """``+``/``maximum`` of booleans are ``|``, ``*``/``minimum`` are ``&``, ``max`` is
    ``any`` and ``min`` is ``all``, ``abs`` is the value: NumPy's booleans."""
    names = {f: getattr(np, f) for f in ("maximum", "minimum", "max", "min", "abs")}
    arrays = {k: v for k, v in {"m": BOOL_M, "n": BOOL_N}.items() if re.search(rf"\b{k}\b", text)}
    want = np.asarray(eval(text, names, dict(arrays)))
    got = run_on(target, 8, text, **arrays)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_array_equal(got, want)


def test_the_negative_of_booleans_is_numpys_error() -> None:
    with pytest.raises(TdslTypeError, match=r"<expr>:1:1: .*negative of booleans .* use `~`"):
        to_tensordsl("-m", shapes={"m": (2,)}, dtypes={"m": "bool"})
