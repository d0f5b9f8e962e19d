"""Wrong arguments to the public API are TdslErrors naming the argument, never an
internal exception (AttributeError, TypeError, xDSL's VerifyException); NumPy
scalars are 0-d inputs of their dtype, as in NumPy (not weak, unlike a Python float)."""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pytest

import tdsl
from tdsl.errors import TdslCallError, TdslOptionError
from tdsl.jit import JITTensorKernel

ONE_DEFAULT_TARGET = pytest.mark.parametrize("jit_target", ["numpy"], indirect=True)
"""For a test that names its targets itself: the folder's default target
(``jit_target``) takes one value, not both, whose two runs were the same."""


@pytest.mark.parametrize(
    ("source", "pattern"),
    [
        (12345, r"source must be a str .* got a value of type `int`"),
        (b"relu(A)", r"source must be a str .* got a value of type `bytes`"),
        (["relu(A)"], r"source must be a str .* got a value of type `list`"),
    ],
)
def test_source_must_be_a_string(source: Any, pattern: str) -> None:
    jit = JITTensorKernel()
    with pytest.raises(TdslOptionError, match=pattern):
        jit.compile(source, {"A": (4,)})
    with pytest.raises(TdslOptionError, match=pattern):
        tdsl.compile(source, {"A": (4,)})
    with pytest.raises(TdslOptionError, match=pattern):
        jit(source, A=np.ones(4))
    with pytest.raises(TdslOptionError, match=pattern):
        tdsl.jit_tensor(source, A=np.ones(4))
    with pytest.raises(TdslOptionError, match=r"text must be a str"):
        jit.compile_ir(source)


def test_filename_and_kernel_must_be_strings() -> None:
    jit = JITTensorKernel()
    with pytest.raises(TdslOptionError, match=r"filename must be a str"):
        jit.compile("relu(A)", {"A": (4,)}, filename=3)  # type: ignore[arg-type]
    with pytest.raises(TdslOptionError, match=r"kernel must be a kernel's name"):
        jit.compile("relu(A)", {"A": (4,)}, kernel=3)  # type: ignore[arg-type]


@pytest.mark.parametrize("option", ["memory_budget", "tile_size", "threads"])
def test_integer_options_have_an_upper_bound(option: str) -> None:
    huge: dict[str, Any] = {option: 10**30}
    with pytest.raises(TdslOptionError, match=rf"{option} must be at most 2\*\*62"):
        JITTensorKernel(**huge)
    with pytest.raises(TdslOptionError, match=rf"{option} must be at most 2\*\*62"):
        tdsl.compile("relu(A)", {"A": (4,)}, **huge)
    with pytest.raises(TdslOptionError, match=r"tile_sizes must be at most 2\*\*62"):
        JITTensorKernel(tile_sizes=(4, 10**30))


@ONE_DEFAULT_TARGET
@pytest.mark.parametrize("target", ["numpy", "native", "auto"])
def test_the_largest_options_compile(target: str) -> None:
    """2**62 fits the IR's 64-bit integers (10**30 raised xDSL's VerifyException)."""
    big = 2**62
    jit = JITTensorKernel(memory_budget=big, tile_size=big, threads=big, target=target)
    a = np.linspace(-1, 1, 400)
    np.testing.assert_array_equal(jit("relu(A)", A=a), np.maximum(a, 0))


@pytest.mark.parametrize(
    ("shapes", "dtypes", "pattern"),
    [
        ([(4,)], None, r"shapes must be a mapping .* got a value of type `list`"),
        ("A", None, r"shapes must be a mapping .* got a value of type `str`"),
        ({1: (4,)}, None, r"the keys of shapes must be input names \(str\), got 1"),
        ({"A": (4,)}, {1: "f32"}, r"the keys of dtypes must be input names \(str\), got 1"),
        ({"A": (4,)}, ["f32"], r"dtypes must be a dtype .* got \['f32'\]"),
        ({"A": (4,)}, {"A": ["f32"]}, r"the dtype of `A` must be a dtype .* got \['f32'\]"),
    ],
)
def test_shapes_and_dtypes_are_checked(shapes: Any, dtypes: Any, pattern: str) -> None:
    with pytest.raises(TdslOptionError, match=pattern):
        JITTensorKernel().compile("relu(A)", shapes, dtypes)


def test_jit_tensor_checks_its_shapes() -> None:
    with pytest.raises(TdslOptionError, match=r"shapes must be a mapping"):
        tdsl.jit_tensor("relu(A)", cast(Any, [(4,)]), A=np.ones(4))


# --------------------------------------------------------------------------- NumPy scalars


@ONE_DEFAULT_TARGET
@pytest.mark.parametrize("target", ["numpy", "native", "auto"])
def test_a_numpy_bool_is_a_boolean_input(target: str) -> None:
    jit = JITTensorKernel(target=target)
    x = np.arange(3, dtype=np.float32)
    for flag in (True, False):
        want = np.where(np.bool_(flag), x, 0.0)
        for m in (np.bool_(flag), np.array(flag)):
            got = jit("where(m, x, 0.0)", m=m, x=x)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    kernel = jit.compile("where(m, x, 0.0)", {"m": (), "x": (3,)}, {"m": "bool", "x": "f32"})
    np.testing.assert_array_equal(kernel(m=np.bool_(False), x=x), np.zeros(3, np.float32))
    np.testing.assert_array_equal(kernel(np.bool_(True), x), x)


def test_a_python_bool_says_how_to_pass_a_boolean() -> None:
    with pytest.raises(TdslCallError, match=r"is a Python bool \(True\): pass np.bool_\(True\)"):
        tdsl.jit_tensor("where(m, x, 0.0)", m=True, x=np.ones(3))


@ONE_DEFAULT_TARGET
@pytest.mark.parametrize("target", ["numpy", "native", "auto"])
@pytest.mark.parametrize("scalar", [np.float16, np.float32, np.float64, np.bool_])
@pytest.mark.parametrize("array", [np.float16, np.float32, np.float64])
def test_numpy_scalars_promote_as_in_numpy(target: str, scalar: Any, array: Any) -> None:
    """A NumPy scalar is a 0-d input of its dtype, not weak: ``f32 array * np.float64``
    is float64, where ``* 2.0`` (a Python float) stays float32."""
    x = np.linspace(-2, 2, 5).astype(array)
    s = scalar(3)
    want = x * s
    got = JITTensorKernel(target=target)("x * s", x=x, s=s)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)
    weak = JITTensorKernel(target=target)("x * s", x=x, s=3.0)
    assert weak.dtype == (x * 3.0).dtype
