"""Crashes of the native path (and of ``auto``, which must not hide them behind a
fallback): strided variants of tiny tiles, and long programs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from shallow_stack import shallow_stack

import tdsl
from tdsl.runtime.compile import native_unavailable_reason

pytestmark = [
    pytest.mark.skipif(
        native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
    ),
    # (strided inputs get their variants however small: these tests run variants)
    pytest.mark.usefixtures("variants_at_any_size"),
]

WHERE = "where(a | (b < 1.5), 1.0, 0.0)"
WHERE_SHAPES = {"a": (170, 13, 16), "b": (13, 16)}
WHERE_DTYPES = {"a": "bool", "b": "f32"}


def _where_kernel(target: str) -> Any:
    # a budget of 200 elements tiles b down to 1x1: a strided tile of one element
    jit = tdsl.JITTensorKernel(memory_budget=200, threads=1, target=target)
    return jit.compile(WHERE, WHERE_SHAPES, WHERE_DTYPES)


def _where_args() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.zeros((170, 13, 16), bool)
    a[::3, 2] = True
    b = np.asfortranarray(np.linspace(0, 3, 13 * 16, dtype=np.float32).reshape(13, 16))
    return a, b, np.where(a | (b < 1.5), 1.0, 0.0)


@pytest.mark.parametrize("target", ["native", "auto"])
def test_strided_variant_of_one_element_tiles_compiles(target: str) -> None:
    """A Fortran-order input tiled to 1x1 gets its strided variant (it lies contiguous
    along no dim of more than one element: nothing to pack), not an internal error."""
    kernel = _where_kernel(target)
    assert kernel.target == "native"
    a, b, want = _where_args()
    np.testing.assert_array_equal(kernel(a=a, b=b), want)
    variants = kernel.function.variants
    assert variants.failures == {}
    assert variants.compiled == [(None, (1, 13))]
    assert kernel.target == "native"
    assert kernel.target_reason is not None and "fell back" not in kernel.target_reason


def _break_variants(monkeypatch: pytest.MonkeyPatch) -> None:
    import tdsl.backend.llvm.lower_to_loops as loops

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a bug in the loops lowering")

    monkeypatch.setattr(loops, "lower_to_loops", broken)


@pytest.mark.fallback
def test_auto_falls_back_to_numpy_when_a_variant_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = _where_kernel("auto")
    assert kernel.target == "native"
    _break_variants(monkeypatch)
    a, b, want = _where_args()
    np.testing.assert_array_equal(kernel(a=a, b=b), want)
    assert kernel.target == "numpy"
    assert kernel.target_reason is not None
    assert "fell back at call time" in kernel.target_reason
    assert "RuntimeError: a bug in the loops lowering" in kernel.target_reason
    assert kernel.fallback == kernel.target_reason
    assert f"target=numpy (fell back: {kernel.target_reason})>" in repr(kernel)
    assert "tdsl-lower-to-loops" not in kernel.pipeline and kernel.llvm_ir is None
    # later calls, C-contiguous or strided, positional or with out=, run the numpy target
    np.testing.assert_array_equal(kernel(a, np.ascontiguousarray(b)), want)
    out = np.empty_like(want)
    assert kernel(a=a, b=b, out=out) is out
    np.testing.assert_array_equal(out, want)


@pytest.mark.fallback
def test_native_copies_when_a_variant_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = _where_kernel("native")
    _break_variants(monkeypatch)
    a, b, want = _where_args()
    np.testing.assert_array_equal(kernel(a=a, b=b), want)
    assert kernel.target == "native"
    (reason,) = kernel.function.variants.failures.values()
    assert "strides C, (1, 13)" in reason and "RuntimeError" in reason
    assert kernel.variant_failures == {(None, (1, 13)): reason}
    assert kernel.fallback is None  # still native code; only that input was copied


@pytest.mark.parametrize("target", ["native", "auto"])
def test_no_fallback_variable_makes_a_failing_variant_raise(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With $TDSL_NO_FALLBACK set (the suite sets it), the variant's internal error is a
    TdslNativeError naming the strides and the cause, not a quiet numpy run or copy."""
    kernel = _where_kernel(target)
    _break_variants(monkeypatch)
    a, b, _ = _where_args()
    instead = "the numpy target" if target == "auto" else "a copy of the input"
    with pytest.raises(tdsl.TdslNativeError, match=f"strides C, \\(1, 13\\).*{instead}") as info:
        kernel(a=a, b=b)
    assert "$TDSL_NO_FALLBACK is set" in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert kernel.target == "native" and kernel.fallback is None
    assert list(kernel.variant_failures) == [(None, (1, 13))]


def _break_native_compile(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    import tdsl.runtime.native as runtime

    def broken(*args: Any, **kwargs: Any) -> None:
        raise error

    monkeypatch.setattr(runtime, "NativeProgram", broken)


SHAPES = {"A": (128, 128), "B": (128,)}


@pytest.mark.fallback
@pytest.mark.parametrize(
    ("error", "said"),
    [
        (tdsl.TdslIRError("a malformed loop nest"), "a malformed loop nest"),
        (
            AssertionError("a bug in the LLVM lowering"),
            "internal error: AssertionError: a bug in the LLVM lowering",
        ),
    ],
)
def test_auto_falls_back_when_the_native_compile_fails(
    error: Exception, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed native compile, a TdslError or an internal error, gives the numpy target
    under auto, with the reason on the kernel (target_reason, fallback, repr)."""
    _break_native_compile(monkeypatch, error)
    kernel = tdsl.JITTensorKernel(target="auto").compile("exp(A) + B", SHAPES, "f32")
    assert kernel.target == "numpy" and kernel.llvm_ir is None
    assert kernel.target_reason == f"the native compile failed: {said}"
    assert kernel.fallback == kernel.target_reason
    assert f"(fell back: {kernel.target_reason})" in repr(kernel)
    a = np.linspace(-1, 1, 128 * 128, dtype=np.float32).reshape(128, 128)
    b = np.linspace(0, 1, 128, dtype=np.float32)
    np.testing.assert_allclose(kernel(A=a, B=b), np.exp(a) + b, rtol=1e-6)
    # target="native" raises what stopped it, as it is
    with pytest.raises(type(error), match=r"a malformed|a bug"):
        tdsl.JITTensorKernel(target="native").compile("exp(A) + B", SHAPES, "f32")


def test_no_fallback_variable_makes_a_failed_native_compile_raise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _break_native_compile(monkeypatch, RuntimeError("a bug in the LLVM lowering"))
    with pytest.raises(
        tdsl.TdslNativeError,
        match=r"target='auto' would fall back to the numpy target \(\$TDSL_NO_FALLBACK is set\): "
        r"the native compile failed: internal error: RuntimeError: a bug in the LLVM lowering",
    ) as info:
        tdsl.JITTensorKernel(target="auto").compile("exp(A) + B", SHAPES, "f32")
    assert isinstance(info.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    ("value", "raises"), [("1", True), ("yes", True), ("0", False), ("", False)]
)
def test_no_fallback_variable_values(
    value: str, raises: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TDSL_NO_FALLBACK", value)
    _break_native_compile(monkeypatch, tdsl.TdslIRError("a malformed loop nest"))
    jit = tdsl.JITTensorKernel(target="auto")
    if raises:
        with pytest.raises(tdsl.TdslNativeError, match="a malformed loop nest"):
            jit.compile("exp(A) + B", SHAPES, "f32")
    else:
        assert jit.compile("exp(A) + B", SHAPES, "f32").fallback is not None


def test_no_fallback_variable_leaves_choices_alone() -> None:
    """The numpy target by choice (a small kernel the cost model finds faster there, or
    asked for) is no failure: no error,
    and no fallback recorded."""
    small = tdsl.JITTensorKernel(target="auto").compile("exp(A)", {"A": (4, 4)}, "f32")
    asked = tdsl.JITTensorKernel(target="numpy").compile("exp(A)", {"A": (128, 128)}, "f32")
    for kernel in (small, asked):
        assert kernel.target == "numpy" and kernel.target_reason is not None
        assert kernel.fallback is None and "fell back" not in repr(kernel)


CHAIN = 600


@pytest.mark.parametrize(("target", "shape"), [("native", (4, 6)), ("auto", (128, 128))])
def test_long_chain_compiles_natively(target: str, shape: tuple[int, int]) -> None:
    """No recursion follows the program's length (the loops lowering computed a value's
    operands recursively: about 490 chained ops overflowed Python's stack).  The chain
    compiles under a stack of 150 frames beyond the test's, so a recursion per op fails
    long before its 600 ops."""
    with shallow_stack():
        kernel = tdsl.JITTensorKernel(target=target).compile(
            "A" + " + A" * CHAIN, {"A": shape}, "f32"
        )
    assert kernel.target == "native", kernel.target_reason
    a = np.full(shape, 0.5, np.float32)
    np.testing.assert_array_equal(kernel(A=a), np.full(shape, 0.5 * (CHAIN + 1), np.float32))


def test_very_long_chain_on_numpy_target() -> None:
    n = 2_000
    with shallow_stack():
        kernel = tdsl.JITTensorKernel(target="numpy").compile("A" + " + A" * n, {"A": (3,)}, "f64")
    np.testing.assert_array_equal(kernel(A=np.ones(3)), np.full(3, n + 1.0))


@pytest.mark.fallback
def test_too_many_buffers_for_ctypes_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A function of more buffers than ctypes passes (1024; about 1000 reductions
    of one expression) is a TdslNativeError under native, and the numpy target
    under auto (here with the limit lowered, to keep the test fast)."""
    import tdsl.runtime.compile as native_compile

    monkeypatch.setattr(native_compile, "CTYPES_MAX_ARGS", 2, raising=False)
    expr = "A + B + C"
    shapes = dict.fromkeys("ABC", (1024, 1024))  # large enough for auto to try native code
    with pytest.raises(tdsl.TdslNativeError, match=r"takes \d+ arguments .* more than ctypes"):
        tdsl.JITTensorKernel(target="native").compile(expr, shapes, "f32")
    kernel = tdsl.JITTensorKernel(target="auto").compile(expr, shapes, "f32")
    assert kernel.target == "numpy"
    assert kernel.target_reason is not None and "ctypes" in kernel.target_reason


@pytest.mark.fallback
def test_a_variant_lowering_error_is_a_failure_not_a_quiet_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A TdslError from a variant's lowering (IR that does not verify, say) is a compiler
    bug like any other: recorded, and a TdslNativeError under $TDSL_NO_FALLBACK; only a
    strided BLAS operand is copied without a word."""
    import tdsl.backend.llvm.lower_to_loops as loops

    def broken(*args: Any, **kwargs: Any) -> None:
        raise tdsl.TdslIRError("internal error: the loops do not verify")

    kernel = _where_kernel("native")
    monkeypatch.setattr(loops, "lower_to_loops", broken)
    a, b, want = _where_args()
    np.testing.assert_array_equal(kernel(a=a, b=b), want)
    assert kernel.variant_failures == {
        (None, (1, 13)): "the variant for strides C, (1, 13) failed to compile "
        "(internal error: the loops do not verify)"
    }
    monkeypatch.setenv("TDSL_NO_FALLBACK", "1")
    wide = np.zeros((13, 32), np.float32)
    wide[:, ::2] = b
    with pytest.raises(tdsl.TdslNativeError, match=r"strides C, \(32, 2\).*do not verify"):
        kernel(a=a, b=wide[:, ::2])  # a new stride pattern: a new variant to compile


def test_a_strided_blas_operand_is_copied_without_a_failure() -> None:
    """$TDSL_NO_FALLBACK is set: copying a strided BLAS operand is the design, not a
    fallback, and raises nothing."""
    n = 128
    kernel = tdsl.JITTensorKernel(target="native", threads=1).compile(
        "relu(A @ B)", {"A": (n, n), "B": (n, n)}, "f64"
    )
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, n, n))
    np.testing.assert_allclose(kernel(A=a.T, B=b), np.maximum(a.T @ b, 0), rtol=1e-12)
    assert kernel.variant_failures == {} and kernel.function.variants.compiled == []
    assert kernel.target == "native"


def test_a_group_writing_many_strided_parts_is_planned_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A recurrence whose steps are stacked (an exponential moving average of 96 steps):
    one group writes each of its 96 rows in place, a strided part of the stack.  Its
    loops were planned once per part (a plan is linear in the group's ops, so the
    lowering was quadratic: 28 s at 192 steps); now once."""
    from tdsl.backend.llvm import loops_plan

    made: list[int] = []
    original = loops_plan._GroupPlan.__init__  # pyright: ignore[reportPrivateUsage]

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        made.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(loops_plan._GroupPlan, "__init__", counted)  # pyright: ignore[reportPrivateUsage]

    def ema(x: Any) -> Any:
        out = [x[0]]
        for t in range(1, x.shape[0]):
            out.append(0.9 * out[-1] + 0.1 * x[t])
        return np.stack(out)

    x = np.random.default_rng(0).standard_normal((96, 4))
    traced = tdsl.trace(ema, target="native")
    np.testing.assert_allclose(traced(x), ema(x), rtol=1e-12)
    tiles = str(traced.ir["tiled"]).count("kernel.tile(")
    assert tiles == 1 and 1 <= len(made) <= 2  # (the loops' plan, and its emission)


@pytest.mark.parametrize("dtype", ["f16", "u8"])
@pytest.mark.parametrize("text", ["x[::-1] * 1", "concatenate((x, x[::-1]), axis=0)"])
def test_a_copy_read_backwards_does_not_abort_the_process(dtype: str, text: str) -> None:
    """LLVM's loop vectorizer (built with assertions in llvmlite) aborted the process on
    these copies through a negative stride ("VPlan cost model and legacy cost model
    disagreed"; found by fuzzing the native target): such modules are optimized in a
    child process first, and without loop vectorization where it dies."""
    x = np.arange(31 * 4).reshape(31, 4).astype(np.float16 if dtype == "f16" else np.uint8)
    kernel = tdsl.JITTensorKernel(target="native", threads=1).compile(
        f"def main(x: {dtype}[31, 4]):\n    return {text}\n"
    )
    want = eval(text.replace("concatenate", "np.concatenate"), {"np": np, "x": x})
    np.testing.assert_array_equal(kernel(x), want)


@pytest.mark.fallback
def test_a_module_llvm_aborts_on_either_way_is_a_native_compile_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the probe's child dies with and without loop vectorization, the compile is
    a :class:`NativeCompileError` (``auto`` then runs the numpy target)."""
    from tdsl.runtime import compile as native_compile

    tried: list[bool] = []

    def dies(llvm: Any, text: str, level: int, vectorize: bool, unroll: bool) -> bool:
        tried.append(vectorize)
        return False

    monkeypatch.setattr(native_compile, "_survives", dies)
    text = "def main(x: f32[3000, 200]):\n    return exp(x[::-1]) * 2\n"
    with pytest.raises(tdsl.errors.TdslNativeError, match="LLVM aborted while optimizing"):
        tdsl.JITTensorKernel(target="native", threads=1, cache_dir=False).compile(text)
    assert tried == [True, False]
    fn = tdsl.JITTensorKernel(target="auto", threads=1, cache_dir=False).compile(text)
    assert fn.target == "numpy" and "LLVM aborted" in (fn.target_reason or "")
