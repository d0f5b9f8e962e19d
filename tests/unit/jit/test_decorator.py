"""``@tdsl.function``: a body in the tdsl language, read from the source file, compiled
per call through the JIT's cache."""

from __future__ import annotations

import importlib.util
import pickle
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tdsl
from tdsl.errors import (
    TdslCallError,
    TdslError,
    TdslNameError,
    TdslOptionError,
    TdslSyntaxError,
)

MODULE = '''\
from typing import Annotated

import tdsl
from tdsl.lang import Array, f32, relu, softmax

JIT = tdsl.JITTensorKernel(threads=1)


@tdsl.function(jit=JIT)
def layer(x, w: f32[8, 4], b: Annotated[Array, "f32[4]"]):
    """A dense layer (the docstring is Python's, not tdsl's)."""
    h = relu(x @ w + b)  # a comment
    return softmax(h, axis=-1)


@tdsl.function(jit=JIT, memory_budget=64, target="numpy")
def scale(a, s: "f64[]"):
    return a * s, a + s


class Holder:
    @staticmethod
    @tdsl.function(jit=JIT)
    def nested(
        a,
        b,
    ):
        return maximum(a, b)


@tdsl.function(jit=JIT)
def unknown(x):
    return relu(y)
'''


def load(tmp_path: Path, text: str, name: str) -> ModuleType:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


@pytest.fixture
def mod(tmp_path: Path) -> ModuleType:
    return load(tmp_path, MODULE, "user_kernels")


def arrays(*shapes: tuple[int, ...], dtype: Any = np.float32) -> list[Any]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def test_compiles_and_matches_numpy_and_the_eager_body(mod: ModuleType) -> None:
    x, w, b = arrays((3, 8), (8, 4), (4,))
    y = mod.layer(x, w, b)
    h = np.maximum(x @ w + b, 0)
    e = np.exp(h - h.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=-1, keepdims=True), rtol=1e-5)
    assert y.dtype == np.float32
    np.testing.assert_allclose(mod.layer.python(x, w, b), y, rtol=1e-5)  # tdsl.lang, eagerly
    assert mod.layer.__doc__ == "A dense layer (the docstring is Python's, not tdsl's)."


def test_specializes_per_shape_and_dtype_through_the_jit_cache(mod: ModuleType) -> None:
    x, w, b = arrays((3, 8), (8, 4), (4,))
    (x5,) = arrays((5, 8))
    first = mod.layer.compile(x, w, b)
    assert first.signature == "layer(x: f32[3, 8], w: f32[8, 4], b: f32[4]) -> f32[3, 4]"
    assert mod.layer.compile(x, w, b) is first
    second = mod.layer.compile(x5, w, b)
    assert second.signature.startswith("layer(x: f32[5, 8]")
    assert mod.layer.kernels == (first, second)
    before = mod.JIT.cache_info()
    mod.layer(x, w=w, b=b)
    mod.layer(x5, w, b)
    assert mod.JIT.cache_info().misses == before.misses  # both were compiled already
    assert first.filename.endswith("user_kernels.py")


def test_typed_parameters_are_checked_at_the_call(mod: ModuleType) -> None:
    x, b = arrays((3, 8), (4,))
    (w64,) = arrays((8, 4), dtype=np.float64)
    with pytest.raises(TdslCallError, match="argument `w` of kernel `layer`"):
        mod.layer(x, w64, b)


def test_options_and_several_results(mod: ModuleType) -> None:
    a = np.arange(4.0)
    times, plus = mod.scale(a, 2.0)  # a typed 0-d parameter takes a Python number
    np.testing.assert_array_equal(times, a * 2)
    np.testing.assert_array_equal(plus, a + 2)
    kernel = mod.scale.compile(a, 2.0)
    assert (kernel.options.memory_budget, kernel.options.threads) == (64, 1)  # threads: JIT's
    assert (kernel.options.target, kernel.target) == ("numpy", "numpy")


def test_a_nested_function_keeps_its_columns(mod: ModuleType) -> None:
    a, b = arrays((2,), (2,))
    np.testing.assert_array_equal(mod.Holder.nested(a, b), np.maximum(a, b))
    with pytest.raises(TdslNameError) as info:
        mod.unknown(a)
    line = MODULE.splitlines().index("    return relu(y)") + 1
    assert str(info.value).startswith(f"{mod.__file__}:{line}:17: error: unknown name `y`")
    assert str(info.value).split("\n")[1] == "    return relu(y)"


def test_python_numbers_need_an_annotation(mod: ModuleType) -> None:
    (x,) = arrays((3, 8))
    with pytest.raises(TdslCallError, match="is a Python number: an untyped parameter"):
        mod.Holder.nested(x, 1.0)


def test_a_float_or_int_annotation_is_a_weak_scalar(tmp_path: Path) -> None:
    text = "import tdsl\n\n@tdsl.function\ndef f(x, s: float, n: int):\n    return x * s + n\n"
    f = load(tmp_path, text, "weak").f
    (x,) = arrays((3, 8), dtype=np.float32)
    for s, n in ((2.5, 3), (-1.0, 7)):
        got = f(x, s, n)
        assert got.dtype == np.float32  # NumPy 2: a Python number takes x's dtype
        np.testing.assert_array_equal(got, x * s + n)
    assert len(f.kernels) == 1  # new values, one kernel
    assert str(f.compile(x, 1.0, 1).signature).startswith("f(x: f32[3, 8], s: float, n: int)")


def test_python_annotations_and_bare_dtypes(tmp_path: Path) -> None:
    text = (
        "import numpy as np\nimport tdsl\nfrom tdsl.lang import Array, f32, relu\n\n"
        "@tdsl.function\ndef f(x: Array, y: f32):\n    return relu(x) + y\n"
    )
    f = load(tmp_path, text, "annotated").f
    x64, y32 = np.ones(3), np.ones(3, np.float32)
    assert f.compile(x64, y32).signature == "f(x: f64[3], y: f32[3]) -> f64[3]"
    with pytest.raises(TdslCallError, match="`y` of `f` is declared f32, got an array of f64"):
        f(x64, x64)


def test_call_errors(mod: ModuleType) -> None:
    a, b = arrays((2,), (2,))
    with pytest.raises(TdslCallError, match="missing argument `b`"):
        mod.Holder.nested(a)
    with pytest.raises(TdslCallError, match="has no parameter `c`"):
        mod.Holder.nested(a, b, c=a)


@pytest.mark.parametrize(
    ("source", "kind", "message"),
    [
        ("def f(x: 'f32[4'):\n    return x\n", TdslSyntaxError, "expected `,` or `]`"),
        ("def f(x=1):\n    return x\n", TdslSyntaxError, "must be plain names"),
        ("def f(x): return x\n", TdslSyntaxError, "must start on the line after"),
        ("def f(x: 'f33[4]'):\n    return x\n", TdslError, "unknown dtype `f33`"),
        (
            "def f(x):\n    y = x if x else x\n    return y\n",
            TdslSyntaxError,
            "expected end of line",
        ),
    ],
)
def test_errors_at_decoration(
    tmp_path: Path, source: str, kind: type[TdslError], message: str
) -> None:
    text = "import tdsl\nfrom tdsl.lang import relu\n\n@tdsl.function\n" + source
    with pytest.raises(kind, match=message) as info:
        load(tmp_path, text, "bad_kernel")
    assert str(info.value).startswith(str(tmp_path / "bad_kernel.py") + ":")


def test_unreadable_source_says_so() -> None:
    namespace: dict[str, Any] = {"tdsl": tdsl}
    code = textwrap.dedent(
        """
        @tdsl.function
        def f(x):
            return x
        """
    )
    with pytest.raises(TdslError, match=r"cannot read the source of `f` \(defined in <typed>\)"):
        exec(compile(code, "<typed>", "exec"), namespace)


def test_a_decorated_function_is_named_and_pickled_as_the_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As numba's and jax.jit's: its name, module and docstring are the function's, and
    it pickles by reference (a worker process imports it), its kernels left out."""
    mod = load(tmp_path, MODULE, "user_kernels_pickled")
    monkeypatch.setitem(sys.modules, "user_kernels_pickled", mod)
    named = (mod.layer.__name__, mod.layer.__qualname__, mod.layer.__module__)
    assert named == ("layer", "layer", "user_kernels_pickled")
    assert mod.Holder.nested.__qualname__ == "Holder.nested"
    mod.layer(*arrays((3, 8), (8, 4), (4,)))
    assert pickle.loads(pickle.dumps(mod.layer)) is mod.layer
    assert pickle.loads(pickle.dumps(mod.Holder.nested)) is mod.Holder.nested


@pytest.mark.parametrize(
    ("jit", "message"),
    [
        (3, "jit= must be a tdsl.JITTensorKernel (or None: the default JIT), got int 3"),
        ("numpy", "got str 'numpy'; for a target, give target='numpy'"),
    ],
)
def test_a_jit_that_is_not_one_is_an_error_when_decorating(jit: Any, message: str) -> None:
    for decorator in (tdsl.function, tdsl.trace):
        with pytest.raises(TdslOptionError) as err:
            decorator(jit=jit)
        assert message in str(err.value)


def test_what_is_not_a_def_function_is_refused_as_such() -> None:
    """(3 and np.exp were "typed at the REPL"; a traced function's repr was parsed as
    its `def` line.)"""
    traced = tdsl.trace(lambda x: x * 2.0)
    for obj, tail in [(3, "got int 3"), (np.exp, "use tdsl.trace"), (traced, "got Traced")]:
        with pytest.raises(TdslCallError, match="takes a function defined with `def`") as err:
            tdsl.function(obj)  # pyright: ignore[reportArgumentType, reportCallIssue]
        assert tail in str(err.value)


def test_a_tdsl_function_inside_a_traced_function_says_what_to_do(mod: ModuleType) -> None:
    traced = tdsl.trace(lambda x: mod.scale(x, 2.0)[0] + 1.0)
    with pytest.raises(TdslCallError, match="is called inside a traced function") as err:
        traced(np.ones(3))
    assert "decorate it with @tdsl.trace" in str(err.value)


def test_a_function_keeps_as_many_kernels_as_its_jit(tmp_path: Path) -> None:
    """It kept every kernel it compiled, one per signature, without bound (found by
    fuzzing); it keeps its JIT's ``cache_size``, the least recently called dropped."""
    source = """
import tdsl
from tdsl.lang import *

JIT = tdsl.JITTensorKernel(cache_size=2)


@tdsl.function(jit=JIT)
def double(x):
    return x * 2
"""
    module = load(tmp_path, source, "kept_kernels")
    for n in (1, 2, 1, 3):  # (1 called again: 2 is the least recent)
        np.testing.assert_array_equal(module.double(np.ones(n)), np.full(n, 2.0))
    assert sorted(k.args[0].shape for k in module.double.kernels) == [(1,), (3,)]
