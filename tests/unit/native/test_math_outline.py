"""A math function is expanded once per module, in a private always-inline function, and
converted once per process (tdsl.backend.llvm.math_outline); it computes what the same
expansion written at each use computes."""

from __future__ import annotations

import re

import numpy as np
import pytest
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr

from tdsl.backend.llvm import convert_to_llvm, math_outline
from tdsl.runtime.compile import llvm_ir, native_unavailable_reason

from .kernels import compile_function, elementwise_1d, lower

needs_native = pytest.mark.skipif(
    native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
)

N = 4096


def two_of(name: str, t: str, once: str = "math.exp") -> str:
    """``name(a) + name(b) + once(a)``: ``name`` twice, ``once`` once."""
    return elementwise_1d(
        f"%x = math.{name} %v0 : {t}\n"
        f"    %y = math.{name} %v1 : {t}\n"
        f"    %z = {once} %v0 : {t}\n"
        f"    %s = arith.addf %x, %y : {t}\n"
        f"    %r = arith.addf %s, %z : {t}",
        N,
        [t, t],
        t,
    )


def functions(module: ModuleOp) -> dict[str, llvm.FuncOp]:
    return {op.sym_name.data: op for op in module.ops if isinstance(op, llvm.FuncOp)}


def calls_of(module: ModuleOp, name: str) -> int:
    return sum(
        1
        for op in module.walk()
        if isinstance(op, llvm.CallOp)
        and op.callee is not None
        and op.callee.string_value() == name
    )


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_a_repeated_function_is_expanded_once_in_an_internal_always_inline_function(
    t: str,
) -> None:
    module = lower(two_of("tanh", t))
    found = functions(module)
    name = f"__tdsl_math_tanh_{t}"
    assert set(found) == {"f", name, f"__tdsl_math_exp_{t}"}  # exp, used once, too
    outlined = found[name]
    assert outlined.linkage.linkage.data == "internal"
    assert outlined.passthrough == ArrayAttr([StringAttr("alwaysinline")])
    assert calls_of(module, name) == 2
    assert calls_of(module, f"__tdsl_math_exp_{t}") == 1
    # the expansion (a few dozen ops) is in the outlined function only
    assert sum(1 for _ in outlined.walk()) > 20
    ctype = "float" if t == "f32" else "double"
    assert f'define internal {ctype} @"{name}"({ctype} %".1") alwaysinline' in llvm_ir(module)


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_each_kind_is_converted_once_per_process_and_cloned(
    t: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(math_outline, "_CONVERTED", {})  # (other tests' kinds are there)
    made: list[str] = []
    convert = convert_to_llvm._approximate_and_convert

    def counted(module: ModuleOp) -> None:
        made.extend(op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp))
        convert(module)

    monkeypatch.setattr(convert_to_llvm, "_approximate_and_convert", counted)
    # sin's expansion calls the C library beyond its range: the clone brings the
    # declaration along
    text = two_of("sin", t, once="math.cos")
    first = lower(text)
    printed = str(first)
    for op in list(first.body.block.ops):  # a module's later edits stay its own
        op.detach()
    assert sorted(made) == [f"__tdsl_math_cos_{t}", f"__tdsl_math_sin_{t}"]
    cached = dict(math_outline._CONVERTED)
    second = lower(text)
    assert str(second) == printed
    assert len(made) == 2  # not converted again
    libm = "sinf" if t == "f32" else "sin"
    assert not functions(second)[libm].body.blocks  # the declaration the expansion calls
    ours = {op for op in second.walk()}
    assert not ours & {op for made in cached.values() for f in made for op in f.walk()}


def test_without_the_approximations_nothing_is_outlined() -> None:
    module = lower(two_of("tanh", "f32"), approximate_math=False)
    assert set(functions(module)) <= {"f", "tanhf", "expf"}


def test_the_outlined_name_avoids_the_modules_own() -> None:
    text = two_of("exp", "f32", once="math.tanh") + (
        "func.func private @__tdsl_math_exp_f32(%a: f32) -> f32 {\n  func.return %a : f32\n}\n"
    )
    found = functions(lower(text))
    assert {"__tdsl_math_exp_f32", "__tdsl_math_exp_f32_1"} <= set(found)


@needs_native
@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("name", ["tanh", "exp", "log1p", "erf", "sin", "cos"])
def test_outlined_code_is_inlined_vectorized_and_computes_the_expansions_values(
    name: str, t: str
) -> None:
    dtype = np.float32 if t == "f32" else np.float64
    rng = np.random.default_rng(7)
    a = (rng.standard_normal(N) * 6).astype(dtype)
    b = (rng.standard_normal(N) * 0.01).astype(dtype)
    a[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 88.0, -1e30]
    twice = compile_function(two_of(name, t))
    optimized = twice.compiled.optimized_ir  # type: ignore[attr-defined]
    # inlined, and the internal function deleted (inlined blocks keep its name in labels)
    assert not re.search(r"(call|define)[^\n]*@\"?__tdsl_math", optimized)
    assert "vector.body" in optimized
    once = compile_function(elementwise_1d(f"%r = math.{name} %v0 : {t}", N, [t], t))
    exp = compile_function(elementwise_1d(f"%r = math.exp %v0 : {t}", N, [t], t))
    got, fa, fb, ea = (np.empty(N, dtype) for _ in range(4))
    with np.errstate(all="ignore"):
        twice(a, b, got)
        once(a, fa)
        once(b, fb)
        exp(a, ea)
        want = fa + fb + ea
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def many_of(name: str, t: str, k: int, n: int) -> str:
    """``f(v0 + 0/8) + f(v0 + 1/8) + ...`` over ``k`` terms (``f(., v1)`` for ``powf``)."""
    second = ", %v1" if name == "powf" else ""
    lines, acc = [], ""
    for i in range(k):
        lines += [
            f"%k{i} = arith.constant {i / 8} : {t}",
            f"%a{i} = arith.addf %v0, %k{i} : {t}",
            f"%f{i} = math.{name} %a{i}{second} : {t}",
        ]
        if acc:
            lines.append(f"%s{i} = arith.addf {acc}, %f{i} : {t}")
        acc = f"%s{i}" if acc else f"%f{i}"
    lines.append(f"%r = arith.addf {acc}, %k0 : {t}")  # (+0.0)
    return elementwise_1d("\n    ".join(lines), n, [t, t] if second else [t], t)


@needs_native
@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("name", ["tanh", "exp", "log1p", "erf", "sin", "powf"])
def test_a_function_called_many_times_is_called_through_vector_variants(name: str, t: str) -> None:
    """Called MANY_CALLS times, a math function is kept whole and called through vector
    variants of itself (tdsl.runtime.vector_math), not inlined at each call; the loop
    still vectorizes, and each call computes the bits the expansion at one use does,
    special values and the scalar remainder (n = 1027) included."""
    from tdsl.runtime.vector_math import MANY_CALLS

    n, k = 1027, MANY_CALLS
    dtype = np.float32 if t == "f32" else np.float64
    rng = np.random.default_rng(11)
    a = (rng.standard_normal(n) * 4).astype(dtype)
    b = (rng.standard_normal(n) * 2).astype(dtype)
    a[-12:] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 88.0, -1e30, 1e5, -0.999, 700, -3]
    b[-12:] = [2.0, -np.inf, 0.5, np.nan, -0.0, 3.0, 1e-3, 2.0, -1.0, 0.0, 1.5, np.inf]
    many = compile_function(many_of(name, t, k, n))
    optimized = many.compiled.optimized_ir  # type: ignore[attr-defined]
    assert re.search(rf'call[^\n]*@"?__tdsl_math_{name}_{t}_v(4|8|16)"?\(', optimized)
    assert "vector.body" in optimized
    second = "%v0, %v1" if name == "powf" else "%v0"
    once = compile_function(
        elementwise_1d(f"%r = math.{name} {second} : {t}", n, [t, t] if name == "powf" else [t], t)
    )
    got, out = np.empty(n, dtype), np.empty(n, dtype)
    with np.errstate(all="ignore"):
        many(a, b, got) if name == "powf" else many(a, got)
        want = np.zeros(n, dtype)
        for i in range(k):
            x = a + dtype(i / 8)
            once(x, b, out) if name == "powf" else once(x, out)
            want = out.copy() if i == 0 else want + out
        want = want + dtype(0.0)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@needs_native
def test_fewer_calls_are_inlined() -> None:
    from tdsl.runtime.vector_math import MANY_CALLS

    fewer = compile_function(many_of("tanh", "f32", MANY_CALLS - 1, 64))
    optimized = fewer.compiled.optimized_ir  # type: ignore[attr-defined]
    assert not re.search(r"(call|define)[^\n]*@\"?__tdsl_math", optimized)
    assert "vector.body" in optimized
