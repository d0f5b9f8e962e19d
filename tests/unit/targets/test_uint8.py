"""``uint8`` as a value: computed exactly with NumPy 2's results and promotion on every
target (unsigned division, comparison, shifts and conversions, wrapping arithmetic), a
gather by ``uint8`` indices, and NumPy's ``uint64`` sums refused with a located error
(tdsl has no ``uint64``).  The reference is NumPy evaluating the same text."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from all_targets import TARGETS, run_on

from tdsl import lang
from tdsl.errors import TdslCallError, TdslTypeError
from tdsl.frontend import to_tensordsl
from tdsl.jit import JITTensorKernel

Array = np.ndarray[Any, Any]

A = np.array([200, 7, 0, 255, 128, 3, 1, 100], np.uint8)
B = np.array([100, 0, 3, 9, 7, 255, 8, 2], np.uint8)
I32 = np.array([-5, 7, 300, -(2**31), 2**31 - 1, 1, 0, -1], np.int32)
F = np.array([300.0, -1.0, np.nan, 255.9, -3.7, 1e10, -np.inf, 2.0**31])
W = np.arange(512.0).reshape(256, 2)

CASES = [
    "a + b",
    "a - b",
    "a * b",
    "a // b",
    "a % b",
    "fmod(a, b)",
    "-a",
    "abs(a) + sign(a)",
    "square(a)",
    "maximum(a, b) - minimum(a, b)",
    "(a > b) | (a <= 100) & (a == b)",
    "a >> b",
    "a << b",
    "a >> 3",
    "~a ^ (a & b | 16)",
    "a * 3 + 1",
    "a - 1",
    "relu(a)",
    "clip(a, b, 250)",
    "max(a) + min(a)",
    "argmax(a) + argmin(a)",
    "exp(a)",
    "a / b",
    "mean(a)",
    "var(a)",
    "a + i",
    "a * i",
    "a // i",
    "a > i",
    "astype(f, uint8)",
    "astype(i, uint8)",
    "astype(a, float32) * 0.5",
    "astype(a, int32) - 1",
    "where(a > b, a, b)",
    "a + 0.5",
    "a @ b",
    "floor(a)",
    "w[a]",
    "take(w, a, axis=0)",
]

NAMES: dict[str, Any] = {
    **{f: getattr(np, f) for f in ("exp", "max", "min", "mean", "var", "where", "take")},
    **{f: getattr(np, f) for f in ("maximum", "minimum", "abs", "sign", "square", "floor")},
    **{f: getattr(np, f) for f in ("argmax", "argmin", "clip", "fmod")},
    "relu": lambda x: np.maximum(x, 0),
    "astype": lambda x, d: x.astype(d),
    **{d: getattr(np, d) for d in ("uint8", "int32", "float32")},
}


def _uses(text: str, name: str) -> bool:
    import re

    return re.search(rf"\b{name}\b", text) is not None


@pytest.mark.parametrize("budget", [16, 10**6])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("text", CASES)
def test_uint8_is_numpys(target: str, text: str, budget: int) -> None:
    arrays = {k: v for k, v in {"w": W, "a": A, "b": B, "i": I32, "f": F}.items() if _uses(text, k)}
    with np.errstate(all="ignore"):
        want = np.asarray(eval(text, NAMES, dict(arrays)))
    got = run_on(target, budget, text, **arrays)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    if text == "var(a)":  # a float sum, added in another order than NumPy's
        np.testing.assert_allclose(got, want, rtol=1e-13)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sum(a)", "`sum` of uint8 (u8[8]) is not supported: NumPy's result is uint64"),
        ("cumprod(a)", "`cumprod` of uint8 (u8[8]) is not supported: NumPy's result is uint64"),
        ("a + 256", "the integer 256 is out of bounds for uint8 ([0, 255])"),
        ("a - -1", "the integer -1 is out of bounds for uint8"),
    ],
)
def test_what_uint8_cannot_do_is_a_located_error(text: str, message: str) -> None:
    with pytest.raises(TdslTypeError, match="1:") as err:
        to_tensordsl(text, shapes={"a": (8,)}, dtypes={"a": "uint8"})
    assert message in str(err.value)


def test_uint8_prints_parses_and_round_trips() -> None:
    module = to_tensordsl(
        "(a // 3 >> 1) + astype(a > 100, uint8)", shapes={"a": (8,)}, dtypes={"a": "u8"}
    )
    printed = str(module)
    assert "tensor<8xui8>" in printed and "tensordsl.cast" in printed
    import io

    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.parser import Parser
    from xdsl.printer import Printer

    from tdsl.dialects.tensordsl import TensorDSL

    ctx = Context()
    for dialect in (Builtin, Func, TensorDSL):
        ctx.load_dialect(dialect)
    parsed = Parser(ctx, printed).parse_module()
    parsed.verify()
    assert str(parsed) == printed
    generic = io.StringIO()
    Printer(generic, print_generic_format=True).print_op(parsed)
    again = Parser(ctx, generic.getvalue()).parse_module()
    assert str(again) == printed


def test_a_python_int_meets_uint8_as_numpy_2() -> None:
    jit = JITTensorKernel(target="numpy")
    got = jit("a * s", a=A, s=3)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, A * 3)
    with pytest.raises(TdslCallError, match=r"expected a Python int in \[0, 255\], got 300"):
        jit("a * s", a=A, s=300)
    assert jit("a + b", a=A, b=I32).dtype == np.int32


def test_lang_and_annotations_take_uint8() -> None:
    import tdsl
    from tdsl.lang import u8

    np.testing.assert_array_equal(lang.right_shift(A, B % 9), A >> (B % 9))

    def brighten(img: u8[8]):  # type: ignore[no-untyped-def]
        return where(img > 200, 255, img + 50)  # type: ignore[name-defined]  # noqa: F821

    fn = tdsl.function(brighten)
    small = np.minimum(A, 205).astype(np.uint8)
    got = fn(small)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, np.where(small > 200, 255, small + 50))
    assert repr(lang.u8[4, 2]) == "u8[4, 2]"


def test_dask_computes_uint8_through_its_own_arrays() -> None:
    da = pytest.importorskip("dask.array")
    a = (np.arange(1024) * 37 % 256).astype(np.uint8).reshape(32, 32)
    fn = JITTensorKernel(target="numpy").compile(
        "max(a // 3 + (a >> 2), axis=0)", shapes={"a": a.shape}, dtypes={"a": "uint8"}
    )
    got = fn(da.from_array(a, chunks=(8, 32)))
    assert isinstance(got, da.Array)
    np.testing.assert_array_equal(got.compute(), np.max(a // 3 + (a >> 2), axis=0))
