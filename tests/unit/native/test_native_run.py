"""Loops-stage modules compiled with llvmlite and run on NumPy arrays, against NumPy."""

from __future__ import annotations

import ctypes
import re
import threading
from typing import Any

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from tdsl.runtime.compile import (
    NativeCompileError,
    bind_symbols,
    compile_llvm,
    host_info,
    llvm_ir,
    native_unavailable_reason,
)

from .kernels import chain_2d, compile_function, elementwise_1d, row_sum_exp

pytestmark = [
    pytest.mark.skipif(
        native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
    ),
    # (strided inputs get their variants however small: these tests run variants)
    pytest.mark.usefixtures("variants_at_any_size"),
]

RNG = np.random.default_rng(7)


def randn(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def test_elementwise_chain_matches_numpy_with_nan_and_inf() -> None:
    a, b, c, d = (randn(16, 24) for _ in range(4))
    a[0, :4] = [np.nan, -np.inf, np.inf, -0.0]
    b[1, 0] = np.nan
    f = compile_function(chain_2d(16, 24), "chain", noalias=True)
    out = np.empty_like(a)
    f(a, b, c, d, out)
    expected = np.maximum(a, 0) + b * c - d
    # no fast-math flags: NumPy's roundings exactly (no fused b * c - d)
    np.testing.assert_array_equal(out, expected)
    assert np.isnan(out[0, 0]) and np.isnan(out[1, 0])  # maximum propagates nan


def test_row_reduction_with_loop_carried_accumulator() -> None:
    a = randn(8, 1000)
    f = compile_function(row_sum_exp(8, 1000), "rowsum", noalias=True)
    out = np.empty(8, np.float32)
    f(a, out)
    expected = np.exp(a.astype(np.float64)).sum(axis=1)
    np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_strided_input_reads_a_numpy_view_without_copy() -> None:
    base = randn(6, 16)
    view = base[1:5, 3::2]  # strides (16, 2) elements, element 0 at offset 19
    text = """
func.func @f(%a: memref<4x7xf32, strided<[16, 2], offset: 19>>, %out: memref<4x7xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c7 = arith.constant 7 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c7 step %c1 {
      %v = memref.load %a[%i, %j] : memref<4x7xf32, strided<[16, 2], offset: 19>>
      %w = arith.mulf %v, %v : f32
      memref.store %w, %out[%i, %j] : memref<4x7xf32>
    }
  }
  func.return
}
"""
    f = compile_function(text)
    out = np.empty((4, 7), np.float32)
    f(view, out)  # view.ctypes.data is the address of view[0, 0]
    np.testing.assert_array_equal(out, view * view)


def test_subview_moves_to_the_view_origin() -> None:
    text = """
func.func @f(%a: memref<6x8xf64>, %out: memref<2x3xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %s = memref.subview %a[1, 2] [2, 3] [2, 1] : memref<6x8xf64> to memref<2x3xf64, strided<[16, 1], offset: 10>>
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c3 step %c1 {
      %v = memref.load %s[%i, %j] : memref<2x3xf64, strided<[16, 1], offset: 10>>
      memref.store %v, %out[%i, %j] : memref<2x3xf64>
    }
  }
  func.return
}
"""
    a = randn(6, 8, dtype=np.float64)
    out = np.empty((2, 3))
    compile_function(text)(a, out)
    np.testing.assert_array_equal(out, a[1:5:2, 2:5])


def test_f16_chain_rounds_every_op_like_numpy() -> None:
    a, b, c, d = (randn(8, 32, dtype=np.float16) * 4 for _ in range(4))
    f = compile_function(chain_2d(8, 32, "f16"), "chain", fastmath=("none",))
    out = np.empty_like(a)
    f(a, b, c, d, out)
    np.testing.assert_array_equal(out, np.maximum(a, np.float16(0)) + b * c - d)


def test_f16_f64_conversions_round_once() -> None:
    n = 4096
    # values near f16 rounding boundaries: halfway points plus or minus a tiny bit
    halves = np.frombuffer(RNG.integers(0, 0x7BFF, n, dtype=np.uint16).tobytes(), np.float16)
    mid = (
        halves.astype(np.float64) + np.nextafter(halves, np.float16(np.inf)).astype(np.float64)
    ) / 2
    x = mid + RNG.choice([-1.0, 0.0, 1.0], n) * np.abs(mid) * 2.0**-40
    x[:6] = [np.nan, np.inf, -np.inf, 1e300, -1e-300, 65520.0]
    narrow = compile_function(
        elementwise_1d("%r = arith.truncf %v0 : f64 to f16", n, ["f64"], "f16")
    )
    out = np.empty(n, np.float16)
    narrow(x, out)
    with np.errstate(over="ignore"):
        expected = x.astype(np.float16)
    np.testing.assert_array_equal(out, expected)
    widen = compile_function(elementwise_1d("%r = arith.extf %v0 : f16 to f64", n, ["f16"], "f64"))
    back = np.empty(n, np.float64)
    widen(out, back)
    np.testing.assert_array_equal(back, out.astype(np.float64))


PREDICATES = {"oeq": np.equal, "ogt": np.greater, "oge": np.greater_equal, "olt": np.less,
              "ole": np.less_equal, "une": np.not_equal}  # fmt: skip


@pytest.mark.parametrize("predicate", [*PREDICATES, "one", "ord", "uno", "ueq", "ugt", "ult"])
def test_compare_into_bool_memref(predicate: str) -> None:
    n = 64
    x = np.array([0.0, -0.0, 1.0, np.nan, np.inf, -np.inf, 2.0, 1.0] * 8, np.float32)
    y = np.roll(x, 3)
    f = compile_function(
        elementwise_1d(f"%r = arith.cmpf {predicate}, %v0, %v1 : f32", n, ["f32", "f32"], "i1")
    )
    out = np.empty(n, np.bool_)
    f(x, y, out)
    unordered = np.isnan(x) | np.isnan(y)
    expected = {
        "one": ~unordered & (x != y),
        "ord": ~unordered,
        "uno": unordered,
        "ueq": unordered | (x == y),
        "ugt": unordered | (x > y),
        "ult": unordered | (x < y),
    }.get(predicate)
    if expected is None:
        expected = PREDICATES[predicate](x, y)
    np.testing.assert_array_equal(out, expected)


def test_bool_select_and_boolean_ops() -> None:
    n = 40
    body = """%p = arith.cmpf ogt, %v0, %v1 : f64
    %q = arith.xori %p, %v2 : i1
    %s = arith.select %q, %v0, %v1 : f64
    %one = arith.uitofp %v2 : i1 to f64
    %r = arith.addf %s, %one : f64"""
    f = compile_function(elementwise_1d(body, n, ["f64", "f64", "i1"], "f64"))
    x, y = randn(n, dtype=np.float64), randn(n, dtype=np.float64)
    flags = RNG.random(n) < 0.5
    out = np.empty(n)
    f(x, y, flags, out)
    np.testing.assert_array_equal(out, np.where((x > y) ^ flags, x, y) + flags)


def test_external_function_bound_by_address() -> None:
    calls: list[tuple[int, float]] = []

    @ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_float)
    def scale(ptr: int, n: int, s: float) -> None:
        calls.append((n, s))
        array = np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)), (n,))
        array *= s

    text = """
func.func private @tdsl_test_scale(memref<8xf32>, index, f32)
func.func @f(%a: memref<8xf32>) {
  %n = arith.constant 8 : index
  %s = arith.constant 2.500000e+00 : f32
  func.call @tdsl_test_scale(%a, %n, %s) : (memref<8xf32>, index, f32) -> ()
  func.return
}
"""
    address = ctypes.cast(scale, ctypes.c_void_p).value
    assert address is not None
    from .kernels import lower

    compiled = compile_llvm(lower(text), symbols={"tdsl_test_scale": address})
    a = np.arange(8, dtype=np.float32)
    compiled.function("f")(a.ctypes.data)
    assert calls == [(8, 2.5)]
    np.testing.assert_array_equal(a, np.arange(8, dtype=np.float32) * 2.5)
    with pytest.raises(NativeCompileError, match="already bound"):
        bind_symbols({"tdsl_test_scale": address + 16})


def test_simple_loop_is_vectorized() -> None:
    if not host_info().triple.startswith("x86_64"):
        pytest.skip("checks x86 vector registers")
    from .kernels import lower

    compiled = compile_llvm(lower(chain_2d(64, 64), noalias=True))
    assembly = compiled.assembly()
    # the full width: 512-bit registers with AVX-512 (machine_features turns off the
    # 256-bit preference of LLVM's tuning for Intel's AVX-512 cores), else 256-bit
    vector = "zmm" if "avx512f" in host_info().features else "ymm"
    packed = [line for line in assembly.splitlines() if "ps\t" in line and f"%{vector}" in line]
    assert len(packed) > 8, "no packed single-precision instructions on vector registers"


def test_threads_call_compiled_code_concurrently() -> None:
    f = compile_function(row_sum_exp(64, 512), "rowsum", noalias=True)
    arrays = [randn(64, 512) for _ in range(4)]
    outs = [np.empty(64, np.float32) for _ in arrays]
    threads = [threading.Thread(target=f, args=(a, o)) for a, o in zip(arrays, outs, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, o in zip(arrays, outs, strict=True):
        np.testing.assert_allclose(o, np.exp(a.astype(np.float64)).sum(axis=1), rtol=1e-5)


def test_the_same_ir_compiles_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from tdsl.runtime import compile as native_compile

    from .kernels import lower

    text = llvm_ir(lower(chain_2d(3, 5)))
    first = compile_llvm(text)
    assert compile_llvm(text) is first  # the same text and options: the same code
    assert compile_llvm(text, vectorize=False) is not first
    assert compile_llvm(text + "\n; another module") is not first
    # the cache keeps the most recently used modules only
    monkeypatch.setattr(native_compile, "COMPILED_CACHE_SIZE", 3)
    for k in range(3):
        compile_llvm(text + f"\n; module {k}", speed_level=0, vectorize=False)
    assert compile_llvm(text) is not first
    # two kernels of one expression under budgets that plan alike share their code
    from tdsl.jit import JITTensorKernel

    a, b = (
        JITTensorKernel(memory_budget=budget, target="native").compile(
            "exp(x) * 2", {"x": (8,)}, {"x": "f32"}
        )
        for budget in (1 << 20, 1 << 21)
    )
    assert a.llvm_ir == b.llvm_ir
    assert a.function.code.compiled is b.function.code.compiled
    # ... and their lowering, run once: the kernels share its modules, and whoever asks
    # for their IR objects gets copies, so a change there reaches no kernel
    from tdsl.jit import stages

    real = stages.run_pipeline
    lowerings: list[str] = []

    def counted(spec: str, *args: Any, **kwargs: Any) -> Any:
        if spec == stages.LOWER_PASSES:
            lowerings.append(spec)
        return real(spec, *args, **kwargs)

    monkeypatch.setattr(stages, "run_pipeline", counted)
    c, d = (
        JITTensorKernel(memory_budget=budget, target="native").compile(
            "exp(x) * 5", {"x": (8,)}, {"x": "f32"}
        )
        for budget in (1 << 20, 1 << 21)
    )
    assert lowerings == [stages.LOWER_PASSES]
    for stage in ("loops", "llvm"):
        assert c.ir.module(stage) is not d.ir.module(stage)
        assert c.ir[stage] == d.ir[stage]
    assert set(d.compile_time) >= {"tdsl-lower-to-loops", "tdsl-convert-to-llvm"}
    texts = {stage: str(d.ir.module(stage)) for stage in ("loops", "llvm")}
    for stage in ("loops", "llvm"):
        given = c.ir.module(stage)
        given.body.block.erase_op(given.body.block.last_op)  # a user's change
        assert str(c.ir.module(stage)) == texts[stage] == str(d.ir.module(stage))
    e = JITTensorKernel(memory_budget=1 << 22, target="native").compile(
        "exp(x) * 5", {"x": (8,)}, {"x": "f32"}
    )
    assert lowerings == [stages.LOWER_PASSES]
    assert {stage: e.ir[stage] for stage in texts} == texts
    x = np.linspace(-2, 2, 8, dtype=np.float32)
    np.testing.assert_allclose(e(x), np.exp(x) * 5, rtol=1e-6)


def test_a_lowering_that_warned_is_lowered_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lowering whose passes warned is not remembered: its warnings name the
    kernel's source, and each compile gives them again.  (The passes warn through
    ``tdsl.errors.warn``, which the lowering collects in its own thread.)"""
    from tdsl.errors import TdslWarning, warn
    from tdsl.jit import JITTensorKernel, stages

    def planned(source: str) -> Any:
        kernel = JITTensorKernel(target="native").compile(source, {"x": (8,)}, {"x": "f32"})
        return kernel.ir.module("planned")

    quiet, loud = planned("exp(x) * 3"), planned("exp(x) * 4")
    monkeypatch.setattr(stages, "_LOWERED", type(stages._LOWERED)())  # forget them
    real = stages.run_pipeline
    runs: list[str] = []

    class Noisy(TdslWarning):
        pass

    def counted(*args: Any, **kwargs: Any) -> Any:
        runs.append("run")
        if len(runs) > 1:  # the first lowering is quiet, the later ones warn
            warn(Noisy("a lowering's warning"), stacklevel=1)
        return real(*args, **kwargs)

    monkeypatch.setattr(stages, "run_pipeline", counted)
    first = stages.lower_planned(quiet)
    again = stages.lower_planned(quiet)  # no warning: remembered, and shared
    assert len(runs) == 1 and again["llvm"] is first["llvm"]
    for n in (2, 3):  # each time: the warning, and a lowering of its own
        with pytest.warns(Noisy, match="a lowering's warning"):
            assert set(stages.lower_planned(loud)) == {"loops", "llvm"}
        assert len(runs) == n


def test_unknown_function_is_an_error() -> None:
    from .kernels import lower

    compiled = compile_llvm(lower(chain_2d(2, 2)))
    with pytest.raises(NativeCompileError, match="no function"):
        compiled.function("nope")


def test_scf_if_with_results_and_index_arithmetic() -> None:
    # out[i] = a[i] for even i below lo + 5, else -a[n - 1 - i]
    body = """
func.func @f(%a: memref<16xf32>, %out: memref<16xf32>, %lo: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  %n = arith.constant 16 : index
  %last = arith.subi %n, %c1 : index
  %bound = arith.addi %lo, %c5 : index
  scf.for %i = %c0 to %n step %c1 {
    %half = arith.divui %i, %c2 : index
    %twice = arith.muli %half, %c2 : index
    %even = arith.cmpi eq, %twice, %i : index
    %below = arith.cmpi slt, %i, %bound : index
    %both = arith.andi %even, %below : i1
    %v = scf.if %both -> (f32) {
      %x = memref.load %a[%i] : memref<16xf32>
      scf.yield %x : f32
    } else {
      %j = arith.subi %last, %i : index
      %y = memref.load %a[%j] : memref<16xf32>
      %z = arith.negf %y : f32
      scf.yield %z : f32
    }
    memref.store %v, %out[%i] : memref<16xf32>
  }
  func.return
}
"""
    a = randn(16)
    out = np.empty(16, np.float32)
    compile_function(body)(a, out, 3)
    i = np.arange(16)
    np.testing.assert_array_equal(out, np.where((i % 2 == 0) & (i < 8), a, -a[15 - i]))


def test_tiles_split_over_threads_only_with_a_mebibyte_per_thread() -> None:
    from tdsl.jit import JITTensorKernel
    from tdsl.runtime import native as runtime

    def split(n: int) -> list[int]:
        kernel = JITTensorKernel(threads=2, target="native").compile(
            "relu(A) + B", dict.fromkeys("AB", (n, n)), "f32"
        )
        function = kernel.function
        assert isinstance(function, runtime.NativeFunction)
        return [t for t, c in zip(function._threads, function.calls, strict=True) if c.group]

    assert runtime.MIN_BYTES_PER_THREAD == 1 << 20
    assert split(64) == [1]  # 16 KiB per array: a split would cost more than it saves
    assert split(1024) == [2]  # 4 MiB: 2 MiB per thread
    a, b = (np.random.default_rng(0).standard_normal((1024, 1024), np.float32) for _ in "AB")
    kernel = JITTensorKernel(threads=2, target="native").compile(
        "relu(A) + B", dict.fromkeys("AB", (1024, 1024)), "f32"
    )
    np.testing.assert_array_equal(kernel(A=a, B=b), np.maximum(a, 0) + b)


def test_kernels_split_their_tiles_over_the_processs_one_pool() -> None:
    # each native kernel once kept a pool of its own, whose idle worker lived as long as
    # the kernel: a JIT's cache of kernels held a thread per kernel
    import threading

    from tdsl.jit import JITTensorKernel
    from tdsl.runtime import native as runtime

    def workers() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name.startswith("tdsl")}

    before = workers()
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((1024, 1024), np.float32) for _ in "AB")
    jit = JITTensorKernel(threads=2, target="native")
    kernels = [
        jit.compile(f"relu(A) {op} B", dict.fromkeys("AB", (1024, 1024)), "f32") for op in "+-*"
    ]
    for kernel, want in zip(kernels, (np.add, np.subtract, np.multiply), strict=True):
        function = kernel.function
        assert isinstance(function, runtime.NativeFunction)
        assert [t for t, c in zip(function._threads, function.calls, strict=True) if c.group] == [2]
        np.testing.assert_array_equal(kernel(A=a, B=b), want(np.maximum(a, 0), b))
    pools = {
        id(k.function.code.pool())
        for k in kernels
        if isinstance(k.function, runtime.NativeFunction)
    }
    assert len(pools) == 1
    # the pool of one worker, made here unless an earlier test made it
    assert len(workers() - before) <= 1, workers() - before


def test_one_intrinsic_in_two_float_types() -> None:
    # cos(3) folds to an f64 constant computed at run time, cos(b) is f32: both
    # llvm.cos.f64 and llvm.cos.f32 in one module (xDSL's untyped llvm.cos clashed)
    from tdsl.jit import JITTensorKernel

    b = np.linspace(-3, 3, 100, dtype=np.float32)
    kernel = JITTensorKernel(target="native").compile(
        "(cos(3) + 5) * abs(cos(b)) + sqrt(abs(b)) + copysign(b, -1.0) ** 2",
        {"b": b.shape},
        "f32",
    )
    want = (np.cos(3.0) + 5) * np.abs(np.cos(b)) + np.sqrt(np.abs(b)) + np.copysign(b, -1) ** 2
    np.testing.assert_allclose(kernel(b=b), want.astype(np.float32), rtol=1e-6)


def test_strided_inputs_run_in_variants_without_copies() -> None:
    import tracemalloc

    from tdsl.jit import JITTensorKernel

    rng = np.random.default_rng(3)
    x = rng.standard_normal((300, 200)).astype(np.float32)
    b = rng.standard_normal((200, 300)).astype(np.float32)
    kernel = JITTensorKernel(threads=2, target="native").compile(
        "softmax(relu(A) + B)", dict.fromkeys("AB", (200, 300)), "f32"
    )

    def want(a: Any, b: Any) -> Any:
        z = np.maximum(a, 0) + b
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    views = {
        "transpose": x.T,
        "column step": np.repeat(x.T, 2, axis=1)[:, ::2],
        "broadcast row": np.broadcast_to(x[0, :200][:, None], (200, 300)),
    }
    for what, a in views.items():
        assert not a.flags.c_contiguous
        np.testing.assert_allclose(kernel(A=a, B=b), want(a, b), rtol=2e-6, atol=1e-7, err_msg=what)
    variants = kernel.function.variants
    assert variants is not None and len(variants.compiled) == 3
    # a variant reads the view where it lies: no copy of A (240 KB) is allocated
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        out = kernel(A=x.T, B=b)
        extra = tracemalloc.get_traced_memory()[1] - before - out.nbytes
    finally:
        tracemalloc.stop()
    assert extra < x.nbytes // 4, extra
    # negative strides get no variant: copied, still right
    np.testing.assert_allclose(kernel(A=x.T[::-1], B=b), want(x.T[::-1], b), rtol=2e-6, atol=1e-7)
    assert len(variants.compiled) == 3


def test_small_strided_inputs_are_copied_rather_than_compiled_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Strided inputs of fewer than MIN_VARIANT_BYTES together are copied (microseconds)
    rather than given a variant (a compile of about 100 ms); from that size on they get
    their variant, counted over all strided inputs of the call."""
    from tdsl.jit import JITTensorKernel
    from tdsl.runtime import native

    monkeypatch.setattr(native, "MIN_VARIANT_BYTES", 1 << 16)  # the default
    kernel = JITTensorKernel(target="native").compile(
        "relu(A) + B", dict.fromkeys("AB", (64, 128)), "f32"
    )
    rng = np.random.default_rng(4)
    # 64x128 f32 views: 32 KiB each
    a = rng.standard_normal((128, 64)).astype(np.float32).T
    b = rng.standard_normal((128, 64)).astype(np.float32).T
    c = rng.standard_normal((64, 128)).astype(np.float32)
    variants = kernel.function.variants
    assert variants is not None
    np.testing.assert_array_equal(kernel(A=a, B=c), np.maximum(a, 0) + c)
    assert variants.compiled == []  # 32 KiB strided: copied
    np.testing.assert_array_equal(kernel(A=a, B=b), np.maximum(a, 0) + b)
    assert variants.compiled == [((1, 64), (1, 64))]  # 64 KiB strided: a variant


@pytest.mark.parametrize("m, n", [(3, 4), (17, 33)])
def test_rows_that_repeat_or_overlap_reach_blas_copied(m: int, n: int) -> None:
    """BLAS reads a matrix's rows a leading dimension apart, at least a row's length: a
    broadcast view (row stride 0) or an overlapping window is copied for the call.  Read
    in place, ``A.T @ A`` of a broadcast row made BLAS refuse the call ("parameter number
    8 had an illegal value") and return an output it never wrote (found by fuzzing
    ``tdsl.trace``)."""
    from tdsl.jit import JITTensorKernel

    row = np.arange(n + m, dtype=np.float32)
    views = {
        "broadcast row": np.broadcast_to(row[:n], (m, n)),
        "overlapping rows": np.lib.stride_tricks.as_strided(row, (m, n), (4, 4)),
    }
    jit = JITTensorKernel(target="native")
    for what, a in views.items():
        assert not a.flags.c_contiguous
        for text, want in [
            ("matmul(transpose(A), A)", a.T @ a),
            ("matmul(A, transpose(A))", a @ a.T),
        ]:
            np.testing.assert_array_equal(jit(text, A=a), want, err_msg=f"{what}: {text}")


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_a_product_over_an_empty_contraction_is_zeros(dtype: Any) -> None:
    """``x.T @ x`` of a ``(0, 3)`` ``x``: BLAS called over an empty contraction, whose
    operand's row stride is 0, with a leading dimension of 1 (the native compile refused
    it after the leading dimension was checked; found by fuzzing)."""
    from tdsl.jit import JITTensorKernel

    x = np.zeros((0, 3), dtype)
    text = "transpose(astype(x, float64)) @ astype(x, float64)"
    for _ in range(3):
        junk = np.full((3, 3), 12345.0)  # memory a result left unwritten would show
        del junk
        got = JITTensorKernel(target="native")(text, x=x)
        np.testing.assert_array_equal(got, np.zeros((3, 3)))


@pytest.mark.parametrize("budget", [16, 4096, 1_000_000])
@pytest.mark.parametrize("shape", [(2, 1), (3, 5), (64, 300)])
def test_softmax_of_f32_into_an_f64_result(shape: tuple[int, int], budget: int) -> None:
    """softmax's ``exp`` staged in an output row of a wider type is stored widened and
    read back narrowed: an f32 row of ``exp`` in the f64 result of ``x1 +
    softmax(x0)`` was once read back as f64 (found by the Dask property test)."""
    from tdsl.jit import JITTensorKernel

    x0 = randn(*shape)
    x1 = np.array(0.25)
    e = np.exp(x0 - x0.max(axis=-1, keepdims=True))
    soft = e / e.sum(axis=-1, keepdims=True)
    jit = JITTensorKernel(memory_budget=budget, threads=1, target="native")
    for text, want in [("x1 + softmax(x0)", x1 + soft), ("x1 / softmax(x0)", x1 / soft)]:
        got = jit(text, x0=x0, x1=x1)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=text)


@pytest.mark.parametrize("budget", [16, 1_000_000])
@pytest.mark.parametrize("m, k, n", [(1, 2, 1), (33, 17, 9)])
def test_f32_matmul_cast_to_an_f64_output(m: int, k: int, n: int, budget: int) -> None:
    """BLAS writes an f32 matmul in place only into an output of its element type:
    ``-relu(x1 @ x2)`` cast to f64 for the outer matmul was written as f32 bits into
    f64 memory (found by the Dask property test)."""
    from tdsl.jit import JITTensorKernel

    x0 = randn(n, 3, dtype=np.float64)
    x1, x2 = randn(m, k), randn(k, n)
    jit = JITTensorKernel(memory_budget=budget, threads=1, target="native")
    got = jit("matmul(-relu(matmul(x1, x2)), x0)", x0=x0, x1=x1, x2=x2)
    want = (-np.maximum(x1 @ x2, 0)).astype(np.float64) @ x0
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    got = jit("s + relu(matmul(x1, x2))", s=np.array(0.5), x1=x1, x2=x2)
    np.testing.assert_allclose(got, 0.5 + np.maximum(x1 @ x2, 0), rtol=1e-5)


PACKED_PROGRAMS: list[tuple[str, Any]] = [
    ("relu(A) + B", lambda a, b: np.maximum(a, 0) + b),
    ("A * B - A", lambda a, b: a * b - a),
    ("sum(A * B, axis=1)", lambda a, b: (a * b).sum(axis=1)),
    ("sum(A * B, axis=0)", lambda a, b: (a * b).sum(axis=0)),
    ("max(A + B)", lambda a, b: (a + b).max()),
    (
        "softmax(A + B)",
        lambda a, b: (
            np.exp(a + b - (a + b).max(-1, keepdims=True))
            / np.exp(a + b - (a + b).max(-1, keepdims=True)).sum(-1, keepdims=True)
        ),
    ),
    (
        "softmax(A - B, axis=0)",
        lambda a, b: (
            np.exp(a - b - (a - b).max(0, keepdims=True))
            / np.exp(a - b - (a - b).max(0, keepdims=True)).sum(0, keepdims=True)
        ),
    ),
]


# each dtype runs with one thread count, and each thread count with one dtype: half the
# native compiles of the full product, every value of each axis
@pytest.mark.parametrize(("dtype", "threads"), [("f32", 1), ("f64", 2)])
@pytest.mark.parametrize("shape", [(256, 256), (200, 333), (1024, 70), (65, 1024)])
@pytest.mark.parametrize("text, ref", PACKED_PROGRAMS, ids=[t for t, _ in PACKED_PROGRAMS])
def test_transposed_inputs_read_through_packed_blocks(
    text: str, ref: Any, shape: tuple[int, int], dtype: str, threads: int
) -> None:
    """A transposed input (and a broadcast-free strided one) runs in its strided
    variant, which packs blocks of it where :meth:`_Group._packed` says; every
    program equals NumPy on the same views, for every shape (tiles and blocks that
    divide the extents or not)."""
    from tdsl.jit import JITTensorKernel

    rng = np.random.default_rng(11)
    np_dtype = np.float32 if dtype == "f32" else np.float64
    a = rng.standard_normal(shape[::-1]).astype(np_dtype).T
    b = rng.standard_normal(shape).astype(np_dtype)
    kernel = JITTensorKernel(threads=threads, target="native").compile(
        text, dict.fromkeys("AB", shape), dtype
    )
    rtol = 2e-5 if dtype == "f32" else 1e-12
    for x, y in [(a, b), (a, b.T.copy().T), (np.ascontiguousarray(a), b)]:
        # a sum may add in another order than NumPy's: its error is relative to the
        # sum of the magnitudes (cancellation makes it large relative to the result)
        scale = max(1.0, float(np.max(np.abs(ref(np.abs(x), np.abs(y))))))
        np.testing.assert_allclose(kernel(A=x, B=y), ref(x, y), rtol=rtol, atol=rtol * scale)


def test_a_transposed_input_is_packed_in_blocks() -> None:
    """The strided variant of ``relu(A) + B`` for a transposed f32 ``A`` copies blocks
    of it into a stack buffer (``memref.alloca``), reading it down its columns, and
    the sweep reads the buffer; a row-major variant has no buffer, nor have broadcast
    views, nor has an f64 transpose whose row length does not alias (5 KB rows of
    625 doubles)."""
    import tdsl
    from tdsl.backend.llvm.lower_to_loops import BLOCK, lower_to_loops

    def loops(n: int, dtype: str, strides: list[tuple[int, ...] | None]) -> str:
        source = f"def f(A: {dtype}[{n}, {n}], B: {dtype}[{n}, {n}]):\n    return relu(A) + B\n"
        module = tdsl.tile(tdsl.fuse(tdsl.to_tensordsl(source)))
        lower_to_loops(module, {"f": strides})
        module.verify()
        return str(module)

    text = loops(512, "f32", [(1, 512), None])
    found = re.search(
        rf"(%\w+) = memref.alloca\(\) {{alignment = 64 : i64}} : memref<{BLOCK}x8xf32>", text
    )
    assert found is not None
    packed = found.group(1)
    assert f"memref.load {packed}[" in text  # the sweep reads the buffer
    assert "memref.load %A[" in text.split(f"memref.load {packed}[")[0]  # after the copy
    assert "alloca" not in loops(512, "f32", [None, None])
    # broadcast views (a stride of 0) read one element along it: nothing to pack
    assert "alloca" not in loops(512, "f32", [(0, 1), None])
    assert "alloca" not in loops(512, "f32", [(1, 0), None])
    assert "alloca" not in loops(625, "f64", [(1, 625), None])
    assert "alloca" in loops(512, "f64", [(1, 512), None])


def test_alloca_is_a_stack_array() -> None:
    """``memref.alloca`` (static shape) is an ``llvm.alloca``: written and read back,
    here reversing a row through a stack buffer."""
    text = """
func.func @f(%x: memref<5xf32>, %out: memref<5xf32>) {
  %buf = memref.alloca() {alignment = 64 : i64} : memref<2x5xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  scf.for %i = %c0 to %c5 step %c1 {
    %v = memref.load %x[%i] : memref<5xf32>
    %j = arith.subi %c4, %i : index
    memref.store %v, %buf[%c1, %j] : memref<2x5xf32>
  }
  scf.for %i = %c0 to %c5 step %c1 {
    %v = memref.load %buf[%c1, %i] : memref<2x5xf32>
    memref.store %v, %out[%i] : memref<5xf32>
  }
  func.return
}
"""
    fn = compile_function(text)
    x = np.arange(5, dtype=np.float32)
    out = np.zeros(5, np.float32)
    fn(x, out)
    np.testing.assert_array_equal(out, x[::-1])


@pytest.mark.parametrize("budget", [64, 128, 300, 2000, 10**6])
def test_threads_share_the_scratch_the_plan_allows(budget: int) -> None:
    # each thread past the first gets a copy of its group's scratch: the runtime splits
    # a group over no more threads than the scratch its kernel.tile records holds
    import math

    from tdsl.jit import JITTensorKernel
    from tdsl.runtime import native as runtime

    text = "x - mean(x, axis=1, keepdims=true) + max(x, axis=1, keepdims=true)"
    kernel = JITTensorKernel(memory_budget=budget, threads=2, target="native").compile(
        text, {"x": (4096, 512)}, "f64"
    )
    function = kernel.function
    assert isinstance(function, runtime.NativeFunction)
    groups = [(t, c) for t, c in zip(function._threads, function.calls, strict=True) if c.group]
    assert groups
    for threads, call in groups:
        scratch = sum(
            math.prod(function.args[i].shape)
            for i in call.operands[2:]
            if isinstance(i, int) and function.args[i].role == "scratch"
        )
        assert call.scratch_limit is not None and scratch <= call.scratch_limit
        assert threads * scratch <= call.scratch_limit, (threads, scratch, call.scratch_limit)
    # at 64 the scratch of one thread is all the plan allows: no split
    if budget == 64:
        assert [t for t, _ in groups] == [1]
    x = np.random.default_rng(0).standard_normal((4096, 512))
    want = x - x.mean(axis=1, keepdims=True) + x.max(axis=1, keepdims=True)
    np.testing.assert_allclose(kernel(x=x), want, rtol=1e-12, atol=1e-12)


def test_the_lowered_function_keeps_the_source_location_of_the_kernel() -> None:
    """An error about a loops-stage function (the numpy target given one) points at the
    kernel's ``def`` in the source, as every error about the tensordsl function does."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import FileLineColLoc

    from tdsl.backend.llvm.lower_to_loops import lower_to_loops
    from tdsl.backend.numpy.target import emit_numpy
    from tdsl.errors import TdslIRError
    from tdsl.frontend import to_tensordsl
    from tdsl.transforms.fuse import fuse
    from tdsl.transforms.tile import tile

    source = "# a comment\ndef k(a: f32[4, 4]):\n    return relu(a) + 1\n"
    module = tile(fuse(to_tensordsl(source, filename="k.tdsl")))
    lower_to_loops(module)
    (fn,) = (op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "k")
    loc = fn.location
    assert isinstance(loc, FileLineColLoc)
    assert (loc.filename.data, loc.line.data, loc.column.data) == ("k.tdsl", 2, 1)
    with pytest.raises(TdslIRError, match="@k is loops-stage IR") as caught:
        emit_numpy(module)
    assert caught.value.op is fn


def test_a_users_function_named_like_a_helper_keeps_its_name() -> None:
    """``@main`` beside a user's ``@main_g0``: the group function of ``@main`` was named
    ``@main_g0`` too, and the loops did not verify ("Redefinition of symbol"; found by
    fuzzing the driver).  Helpers take a free name; both functions run."""
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin, ModuleOp
    from xdsl.dialects.func import Func
    from xdsl.parser import Parser

    from tdsl.dialects.kernel import Kernel
    from tdsl.dialects.tensordsl import TensorDSL
    from tdsl.runtime.native import NativeProgram
    from tdsl.transforms.fuse import fuse
    from tdsl.transforms.tile import tile

    text = (
        "func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {\n"
        "  %0 = tensordsl.relu %x : tensor<4x8xf32>\n"
        "  func.return %0 : tensor<4x8xf32>\n}\n"
        "func.func @main_g0(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {\n"
        "  %0 = tensordsl.exp %x : tensor<4x8xf32>\n"
        "  func.return %0 : tensor<4x8xf32>\n}\n"
    )
    ctx = Context()
    for dialect in (Builtin, Func, TensorDSL, Kernel):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text).parse_module()
    assert isinstance(module, ModuleOp)
    program = NativeProgram.from_tiled(tile(fuse(module)))
    x = np.linspace(-2, 2, 32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_array_equal(program.functions["main"](x), np.maximum(x, 0))
    np.testing.assert_allclose(program.functions["main_g0"](x), np.exp(x), rtol=1e-6)
