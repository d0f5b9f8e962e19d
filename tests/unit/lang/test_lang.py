"""``tdsl.lang``: one typed function per language function, computing eagerly what the
compiled kernel computes."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import tdsl
import tdsl.lang as lang
from tdsl.dialects import tensordsl as td
from tdsl.errors import TdslCallError, TdslTypeError
from tdsl.frontend.ir_gen import FUNCTIONS

DTYPE_NAMES = {"f16", "f32", "f64", "bool_"}


def lang_functions() -> dict[str, Any]:
    return {
        name: getattr(lang, name)
        for name in lang.__all__
        if inspect.isfunction(getattr(lang, name)) and not name.startswith("_")
    }


def test_lang_is_generated_from_the_function_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from tdsl.frontend import ir_gen
    from tdsl.tools.gen_reference import lang_path, render_lang

    current = lang_path().read_text(encoding="utf-8")
    assert render_lang(current) == current, "stale: run python -m tdsl.tools.gen_reference"
    # a new op in the table is a new function (and the checked-in file is then stale)
    softmax = ir_gen.FUNCTIONS["softmax"]
    table = {**ir_gen.FUNCTIONS, "softmax2": ir_gen.FunctionInfo("softmax2", softmax.op)}
    monkeypatch.setattr(ir_gen, "FUNCTIONS", table)
    text = render_lang(current)
    assert "def softmax2(x: Operand, axis: int = -1) -> Array:" in text
    assert '    return _call("softmax2", (x,), {"axis": axis})' in text
    assert '    "softmax2",' in text


def test_every_language_function_is_in_lang() -> None:
    # fails when an op with a FUNCTION is added to the dialect without its tdsl.lang function
    assert set(lang_functions()) == set(FUNCTIONS)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_signature_is_the_languages(name: str) -> None:
    info = FUNCTIONS[name]
    params = list(inspect.signature(lang_functions()[name]).parameters.values())
    if name == "einsum":  # the subscripts first, then one or two operands
        assert [p.name for p in params] == ["subscripts", "a", "b"]
        assert params[2].default is None and info.signature == "einsum(subscripts, a, b=None)"
        return
    tensors, keywords = params[: info.arity], params[info.arity :]
    assert len(tensors) == info.arity
    assert all(p.default is inspect.Parameter.empty for p in tensors)
    assert [(p.name, p.default) for p in keywords] == [
        (k.name, inspect.Parameter.empty if k.required else k.default) for k in info.params
    ]
    assert lang_functions()[name].__doc__


def _operands(name: str, rng: np.random.Generator) -> tuple[Any, ...]:
    info = FUNCTIONS[name]
    x = rng.uniform(0.1, 0.9, (3, 4)).astype(np.float32)
    if info.arity == 0:  # a creation function: its parameters only
        return ()
    if name == "matmul":
        return (x, rng.uniform(0.1, 0.9, (4, 2)).astype(np.float32))
    if name in ("logical_and", "logical_or"):
        return (x > 0.5, x < 0.7)
    if name == "logical_not":
        return (x > 0.5,)
    if name == "where":
        return (x > 0.5, x, rng.uniform(size=4).astype(np.float32))
    if name == "arccosh":
        return (x + 1,)
    if name in ("cumsum", "cumprod"):
        return (x.reshape(-1),)  # without an axis: 1-d
    if issubclass(info.op, td.NO_FLOATS):  # bit by bit: integers
        i = (x * 100).astype(np.int64)
        return (i, *((i[0] % 5) for _ in range(info.arity - 1)))
    return (x, *(rng.uniform(0.1, 0.9, 4).astype(np.float32) for _ in range(info.arity - 1)))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_eager_equals_the_compiled_kernel(name: str) -> None:
    """Two roads from the same text: the interpreter (eager) and the NumPy target (JIT)."""
    rng = np.random.default_rng(sum(map(ord, name)))
    operands = _operands(name, rng)
    if name == "einsum":
        a, b = operands
        eager = lang.einsum("ij,j->i", a, b)
        compiled = tdsl.JITTensorKernel(threads=1)("einsum('ij,j->i', a, b)", a=a, b=b)
        np.testing.assert_allclose(eager, compiled, rtol=1e-6)
        assert eager.dtype == compiled.dtype
        return
    if FUNCTIONS[name].op.SEQUENCE:  # a join: the operands as one tuple
        (a,) = operands
        eager = lang_functions()[name]((a, a * 2))
        compiled = tdsl.JITTensorKernel(threads=1)(f"{name}((a, a * 2))", a=a)
        np.testing.assert_allclose(eager, compiled, rtol=1e-6)
        assert eager.dtype == compiled.dtype and eager.shape == compiled.shape
        return
    if name == "take":  # a gather: integer indices
        (a, _) = operands
        indices = np.array([2, -1, 0])
        compiled = tdsl.JITTensorKernel(threads=1)("take(a, t, axis=0)", a=a, t=indices)
        np.testing.assert_array_equal(lang_functions()[name](a, indices, axis=0), compiled)
        return
    if FUNCTIONS[name].op.SEVERAL:  # a split: its parts
        (a,) = operands
        parts = lang_functions()[name](a, 2, axis=-1)
        compiled = tdsl.JITTensorKernel(threads=1)
        for k, part in enumerate(parts):
            want = compiled(f"{name}(a, 2, axis=-1)[{k}]", a=a)
            np.testing.assert_array_equal(part, want)
        assert len(parts) == 2
        return
    required: dict[str, object] = {  # axis 1, a shape or size of 1, a float for a number
        p.name: 1.5
        if p.kind == "number"
        else -1
        if p.kind == "new_shape"
        else (2, 3, 4)  # broadcast_to: a shape the (3, 4) operands broadcast to
        if name == "broadcast_to"
        else "float16"
        if p.kind == "dtype"
        else 1
        for p in FUNCTIONS[name].params
        if p.required
    }
    eager = lang_functions()[name](*operands, **required)
    names = ["a", "b", "c"][: len(operands)]
    jit = tdsl.JITTensorKernel(threads=1)
    call = ", ".join([*names, *(f"{k}={v}" for k, v in required.items())])
    compiled = jit(f"{name}({call})", **dict(zip(names, operands, strict=True)))
    assert isinstance(eager, np.ndarray)
    assert eager.dtype == compiled.dtype and eager.shape == compiled.shape
    np.testing.assert_allclose(eager, compiled, rtol=1e-6, atol=1e-6)


def test_semantics_are_numpys_with_weak_python_numbers() -> None:
    x = np.linspace(-1, 1, 6, dtype=np.float16).reshape(2, 3)
    assert lang.maximum(x, 0.5).dtype == np.float16  # a Python float is weak
    assert lang.maximum(x, np.float32(0.5)).dtype == np.float32  # a NumPy scalar is not
    assert lang.exp(2.0).dtype == np.float64
    np.testing.assert_allclose(lang.softmax(x, axis=0).astype(np.float32).sum(axis=0), 1, atol=1e-3)
    assert lang.sum(x, axis=1, keepdims=True).shape == (2, 1)
    assert lang.layernorm(x.astype(np.float32), eps=1e-3).dtype == np.float32
    assert lang.mean([1.0, 2.0, 4.0]).item() == pytest.approx(7 / 3)  # a list is an array


def test_python_ints_are_weak_integers_eagerly_as_when_compiled() -> None:
    """A Python ``int`` is a weak integer (every function crashed on one: "type object
    'int' has no attribute 'name'"; found by fuzzing), checked against the integer dtype
    it meets as a compiled kernel's call checks it (NumPy 2's ``OverflowError``)."""
    t = np.arange(6, dtype=np.int32)
    for got, want in [
        (lang.maximum(t, 2), np.maximum(t, 2)),
        (lang.remainder(t, 3), np.remainder(t, 3)),
        (lang.left_shift(t, 3), np.left_shift(t, 3)),
        (lang.where(t > 2, t, 7), np.where(t > 2, t, 7)),
        (lang.clip(t, 1, 3), np.clip(t, 1, 3)),
        (lang.power(t.astype(np.float32), 2), np.power(t.astype(np.float32), 2)),
    ]:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    with pytest.raises(
        TdslCallError, match=r"argument 2 of `maximum` is a weak integer.*2147483647"
    ):
        lang.maximum(t, 2**40)


def test_refusals_are_the_compilers() -> None:
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TdslTypeError, match="`relu` of booleans"):
        lang.relu(x > 0)
    with pytest.raises(TdslTypeError, match="axis 2 is out of range for `sum` of f32"):
        lang.sum(x, axis=2)
    with pytest.raises(TdslTypeError, match=r"`power` of integers \(i64\[3\], i64\[3\]\)"):
        lang.power(np.ones(3, np.int64), np.ones(3, np.int64))
    with pytest.raises(TdslCallError, match="has dtype uint16"):
        lang.relu(np.ones(3, np.uint16))


def test_dtype_annotations_at_run_time() -> None:
    assert repr(lang.f32[4, 8]) == "f32[4, 8]"
    assert repr(lang.f16[()]) == "f16[]"
    assert repr(lang.bool_[3]) == "bool[3]"
    assert lang.f64[2] == lang.TensorSpec("f64", (2,))
    with pytest.raises(TypeError, match="non-negative integer dims"):
        lang.f32[4, -1]


def test_import_does_not_load_xdsl() -> None:
    import subprocess
    import sys

    code = "import sys, tdsl.lang; print(any(m.startswith('xdsl') for m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
