"""The JIT API: compile, call, one-shot calls, programs, call-time checks, introspection."""

from __future__ import annotations

import builtins
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

import tdsl
from tdsl.errors import (
    TdslCallError,
    TdslNameError,
    TdslOptionError,
    TdslSyntaxError,
    TdslTypeError,
)
from tdsl.jit import (
    CompiledKernel,
    JITTensorKernel,
    compile,
    default_jit,
    default_threads,
    jit_tensor,
)

MIXED = "matmul(A,relu(B))+softmax(C)"
MIXED_SHAPES = {"A": (8, 16), "B": (16, 8), "C": (8, 8)}


def softmax(x: np.ndarray[Any, Any], axis: int = -1) -> np.ndarray[Any, Any]:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def mixed_reference(A: Any, B: Any, C: Any) -> Any:
    return A @ np.maximum(B, 0) + softmax(C)


def test_public_names_are_reexported_by_tdsl() -> None:
    for name in ("JITTensorKernel", "CompiledKernel", "compile", "jit_tensor"):
        assert getattr(tdsl, name) is getattr(tdsl.jit, name)


def test_compile_and_call_by_keyword_and_position(rng: np.random.Generator, matches: Any) -> None:
    jit = JITTensorKernel(memory_budget=1_000_000)
    fn = jit.compile(MIXED, shapes=MIXED_SHAPES)
    A, B, C = (rng.standard_normal(s) for s in MIXED_SHAPES.values())
    matches(fn(A=A, B=B, C=C), mixed_reference(A, B, C))
    matches(fn(A, B, C), mixed_reference(A, B, C))
    matches(fn(A, B=B, C=C), mixed_reference(A, B, C))
    assert fn.arg_names == ("A", "B", "C")


def test_one_shot_call_takes_shapes_and_dtypes_from_arrays(
    rng: np.random.Generator, matches: Any
) -> None:
    jit = JITTensorKernel()
    a = rng.standard_normal(4).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    matches(jit("relu(A)+B", A=a, B=b), np.maximum(a, 0) + b)
    x = rng.standard_normal((3, 5))
    y = rng.standard_normal((3, 5))
    matches(jit("relu(A)+B", A=x, B=y), np.maximum(x, 0) + y)


def test_jit_tensor(rng: np.random.Generator, matches: Any) -> None:
    a, b = rng.standard_normal(4), rng.standard_normal(4)
    matches(jit_tensor("relu(A)+B", {"A": (4,), "B": (4,)}, A=a, B=b), np.maximum(a, 0) + b)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    out = jit_tensor("relu(A)+B", {"A": (4,), "B": (4,)}, A=a32, B=b32)
    matches(out, np.maximum(a32, 0) + b32)


def test_module_level_compile_uses_options(rng: np.random.Generator, matches: Any) -> None:
    small = compile("relu(A)+B", {"A": (300, 40), "B": (300, 40)}, "f32", memory_budget=200)
    large = compile("relu(A)+B", {"A": (300, 40), "B": (300, 40)}, "f32", memory_budget=10**6)
    assert small is not large
    assert small.options.memory_budget == 200
    assert compile("relu(A)+B", {"A": (300, 40), "B": (300, 40)}, "f32", memory_budget=200) is small
    a = rng.standard_normal((300, 40)).astype(np.float32)
    b = rng.standard_normal((300, 40)).astype(np.float32)
    for fn in (small, large):
        matches(fn(A=a, B=b), np.maximum(a, 0) + b)
    assert default_jit().cache_info().currsize >= 2


def test_dtypes_as_dict_and_single(rng: np.random.Generator) -> None:
    jit = JITTensorKernel()
    shapes = {"A": (3,), "B": (3,)}
    one = jit.compile("A+B", shapes, np.float32)
    assert [a.dtype for a in one.args] == [np.dtype(np.float32)] * 2
    per_name = jit.compile("A+B", shapes, {"A": "f32", "B": "float64"})
    assert [a.dtype for a in per_name.args] == [np.dtype(np.float32), np.dtype(np.float64)]
    default = jit.compile("A+B", shapes)
    assert [a.dtype for a in default.args] == [np.dtype(np.float64)] * 2
    # spellings of the same dtype share one kernel
    assert jit.compile("A+B", shapes, "f32") is one
    assert jit.compile("A+B", shapes, np.dtype("float32")) is one


def test_several_results_come_back_as_a_tuple(rng: np.random.Generator, matches: Any) -> None:
    program = textwrap.dedent(
        """\
        def mlp(x: f32[4, 8], w: f32[8, 3], b: f32[3]):
            h = relu(x @ w + b)
            return softmax(h), h
        """
    )
    fn = JITTensorKernel().compile(program)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w = rng.standard_normal((8, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    out = fn(x=x, w=w, b=b)
    assert isinstance(out, tuple) and len(out) == 2
    h = np.maximum(x @ w + b, 0)
    matches(out[0], softmax(h))
    matches(out[1], h)
    assert fn.name == "mlp"
    assert "-> (f32[4, 3], f32[4, 3])" in fn.signature


def test_program_kernel_selection(rng: np.random.Generator, matches: Any) -> None:
    program = textwrap.dedent(
        """\
        def first(x: f64[5]):
            return relu(x)

        def second(x: f64[5], y: f64[5]):
            return x - y
        """
    )
    jit = JITTensorKernel()
    x, y = rng.standard_normal(5), rng.standard_normal(5)
    last = jit.compile(program)
    assert last.name == "second"
    matches(last(x, y), x - y)
    first = jit.compile(program, kernel="first")
    assert first.name == "first"
    matches(first(x=x), np.maximum(x, 0))
    with pytest.raises(TdslNameError, match=r"no kernel named `third`.*`first`, `second`"):
        jit.compile(program, kernel="third")


def test_program_argument_names_keep_digit_suffixes(rng: np.random.Generator) -> None:
    # xDSL name hints drop a `_<digits>` suffix; the call signature must not.
    program = "def k(x_1: f64[3], x_2: f64[3]):\n    return x_1 - x_2\n"
    fn = JITTensorKernel().compile(program)
    assert fn.arg_names == ("x_1", "x_2")
    a, b = rng.standard_normal(3), rng.standard_normal(3)
    np.testing.assert_array_equal(fn(x_1=a, x_2=b), a - b)


def test_expression_arguments_in_order_of_first_use() -> None:
    fn = JITTensorKernel().compile("B * A + B", {"A": (2,), "B": (2,)})
    assert fn.arg_names == ("B", "A")


# ------------------------------------------------------------------- call-time checks


@pytest.fixture
def kernel() -> CompiledKernel:
    return JITTensorKernel().compile(
        "relu(A)+B", {"A": (4, 3), "B": (4, 3)}, {"A": "f32", "B": "f32"}
    )


def f32(*shape: int) -> np.ndarray[Any, Any]:
    return np.ones(shape, dtype=np.float32)


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda k: k(A=f32(4, 3)), r"missing argument `B`.*expected an array of f32\[4, 3\]"),
        (lambda k: k(f32(4, 3)), r"missing argument `B`"),
        (
            lambda k: k(A=f32(4, 3), B=f32(4, 3), C=f32(4, 3)),
            r"unexpected argument `C`; its arguments are `A`, `B`",
        ),
        (lambda k: k(f32(4, 3), f32(4, 3), f32(4, 3)), r"takes 2 arguments \(`A`, `B`\), got 3"),
        (
            lambda k: k(A=f32(4, 3), B=f32(3, 4)),
            r"argument `B`.*wrong shape: expected f32\[4, 3\], got f32\[3, 4\]",
        ),
        (
            lambda k: k(A=np.ones((4, 3)), B=f32(4, 3)),
            r"argument `A`.*wrong dtype: expected f32\[4, 3\], got f64\[4, 3\]",
        ),
        (
            lambda k: k(A=[[1.0] * 3] * 4, B=f32(4, 3)),
            r"argument `A`.*must be a NumPy array of f32\[4, 3\], got a value of type `list`",
        ),
        (
            lambda k: k(A=f32(4, 3), B=np.float32(1.0)),
            r"argument `B`.*NumPy array.*got a value of type `float32`",
        ),
    ],
)
def test_call_errors_name_the_argument(kernel: CompiledKernel, call: Any, pattern: str) -> None:
    with pytest.raises(TdslCallError, match=pattern):
        call(kernel)


def test_call_accepts_ndarray_subclasses_and_views(kernel: CompiledKernel) -> None:
    class Sub(np.ndarray[Any, Any]):
        pass

    base = np.arange(24, dtype=np.float32).reshape(8, 3) - 10
    a = base[::2]  # a strided view
    b = np.ones((4, 3), dtype=np.float32).view(Sub)
    out = kernel(A=a, B=b)
    np.testing.assert_array_equal(out, np.maximum(a, 0) + 1)
    assert type(out) is np.ndarray
    # an equal but non-native-order dtype is a different dtype
    with pytest.raises(TdslCallError, match="wrong dtype"):
        kernel(A=a.astype(">f4"), B=b)


def test_inputs_are_never_written(kernel: CompiledKernel) -> None:
    a = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    b = np.ones((4, 3), dtype=np.float32)
    a0, b0 = a.copy(), b.copy()
    a.flags.writeable = False
    b.flags.writeable = False
    out = kernel(A=a, B=b)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)
    assert out.flags.writeable and not np.shares_memory(out, a) and not np.shares_memory(out, b)


def test_one_shot_rejects_non_arrays_and_takes_integer_arrays() -> None:
    jit = JITTensorKernel()
    with pytest.raises(TdslCallError, match="argument `B` must be a NumPy array"):
        jit("A+B", A=np.ones(3), B=[1.0, 2.0, 3.0])
    # an integer array is a value, promoted as NumPy does
    got = jit("A+B", A=np.arange(3, dtype=np.int64), B=np.ones(3, np.float32))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, np.arange(3) + np.ones(3, np.float32))


def test_one_shot_missing_input_is_a_name_error() -> None:
    with pytest.raises(TdslNameError, match="no shape given for input `B`"):
        JITTensorKernel()("A+B", A=np.ones(3))


def test_source_errors_propagate() -> None:
    with pytest.raises(TdslSyntaxError):
        JITTensorKernel().compile("relu(A", {"A": (2,)})
    with pytest.raises(TdslNameError, match="sofmax"):
        JITTensorKernel().compile("sofmax(A)", {"A": (2,)})


@pytest.mark.parametrize(
    "kwargs",
    [
        {"memory_budget": 0},
        {"memory_budget": -5},
        {"memory_budget": 1.5},
        {"threads": 0},
        {"tile_size": 0},
        {"tile_sizes": (4, 0)},
        {"tile_sizes": 5},  # not a sequence (was a raw TypeError; found by fuzzing)
        {"cache_size": 0},
    ],
)
def test_bad_options(kwargs: dict[str, Any]) -> None:
    with pytest.raises(TdslOptionError):
        JITTensorKernel(**kwargs)


def test_options_of_one_kernel_must_be_jit_options() -> None:
    # (an int was a raw AttributeError from inside the cache key; found by fuzzing)
    with pytest.raises(TdslOptionError, match=r"options must be a tdsl\.jit\.JitOptions"):
        JITTensorKernel().compile("x + 1", {"x": (3,)}, options=5)  # type: ignore[arg-type]


def test_bad_shapes_argument() -> None:
    with pytest.raises(TdslOptionError, match="shape of `A`"):
        JITTensorKernel().compile("relu(A)", {"A": (2, -1)})
    with pytest.raises(TdslOptionError, match="shape of `A`"):
        JITTensorKernel().compile("relu(A)", {"A": "2x3"})
    fn = JITTensorKernel().compile("relu(A)", {"A": 3})  # an int is a 1-D shape
    assert fn.args[0].shape == (3,)


# ------------------------------------------------------------------- what was done


def test_introspection(jit_target: str) -> None:
    fn = JITTensorKernel(memory_budget=4096).compile(MIXED, shapes=MIXED_SHAPES)
    assert fn.target == jit_target
    if jit_target == "native":
        assert set(fn.ir) == {
            "tensordsl",
            "canonical",
            "fused",
            "tiled",
            "planned",
            "loops",
            "llvm",
        }
        assert "scf.for" in fn.ir["loops"] and "llvm.func" in fn.ir["llvm"]
        assert fn.llvm_ir is not None and 'define void @"main"(' in fn.llvm_ir
        assert fn.target_reason == "target='native' was asked for"
    else:
        assert set(fn.ir) == {"tensordsl", "canonical", "fused", "tiled"}
        assert fn.llvm_ir is None and fn.target_reason == "target='numpy' was asked for"
    assert "tensordsl.matmul" in fn.ir["tensordsl"]
    assert "kernel.fused" in fn.ir["fused"]
    assert "kernel.tile" in fn.ir["tiled"]
    assert fn.ir["tiled"] is fn.ir["tiled"]  # printed once
    builtins.compile(fn.source, "<tdsl>", "exec")
    assert "def main(" in fn.source
    assert fn.groups
    for group in fn.groups:
        assert group.ops and group.name in fn.ir["tiled"]
        assert group.tiles is not None and group.space is not None
        assert group.scratch is not None and group.scratch <= 4096
        assert str(group).startswith(group.name)
    text = repr(fn)
    assert "main(A: f64[8, 16], B: f64[16, 8], C: f64[8, 8]) -> f64[8, 8]" in text
    assert "memory_budget=4096" in text
    assert fn.expression == MIXED
    threads = default_threads()
    target = f", target={jit_target!r}"
    assert repr(JITTensorKernel()) == f"JITTensorKernel(threads={threads}{target})"
    assert repr(JITTensorKernel(10**6)) == (
        f"JITTensorKernel(memory_budget=1000000, threads={threads}{target})"
    )
    assert repr(JITTensorKernel(threads=1, target="auto")) == "JITTensorKernel(threads=1)"


def test_fusion_report_and_explain() -> None:
    fn = JITTensorKernel().compile(MIXED, shapes=MIXED_SHAPES)
    assert fn.fusion_report is not None
    assert isinstance(fn.explain(), str) and fn.explain()


# ------------------------------------------------------------------- import weight


def test_import_is_light() -> None:
    code = (
        "import sys, tdsl, tdsl.jit\n"
        "heavy = sorted(m for m in sys.modules if m.startswith(('xdsl', 'tdsl.transforms', 'tdsl.backend')))\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_compiling_never_imports_interpreters() -> None:
    code = (
        "import sys, tdsl.jit\n"
        "tdsl.jit.compile('relu(A)+B', {'A': (4,), 'B': (4,)})\n"
        "print(sorted(m for m in sys.modules if 'interpreter' in m))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_only_the_chosen_kernel_of_a_program_is_compiled() -> None:
    program = textwrap.dedent(
        """\
        def big(x: f64[2, 1000]):
            return softmax(x)

        def small(y: f64[4]):
            return relu(y)
        """
    )
    jit = JITTensorKernel(memory_budget=64)
    fn = jit.compile(program)
    assert fn.name == "small" and "@big" not in fn.ir["tensordsl"]
    np.testing.assert_array_equal(fn(np.array([-1.0, 2.0, -3.0, 4.0])), [0.0, 2.0, 0.0, 4.0])
    big = jit.compile(program, kernel="big")  # rows of 1000 over a budget of 64
    assert big.name == "big" and "@small" not in big.ir["tensordsl"]
    x = np.linspace(-3, 3, 2000).reshape(2, 1000)
    np.testing.assert_allclose(big(x), softmax(x), rtol=1e-12)


def test_one_shot_refuses_non_native_byte_order() -> None:
    jit = JITTensorKernel(threads=1)
    swapped = np.arange(4.0).astype(np.dtype(np.float64).newbyteorder())
    with pytest.raises(TdslCallError, match=r"argument `A` has non-native byte order"):
        jit("relu(A)", A=swapped)
    np.testing.assert_array_equal(jit("relu(A)", A=swapped.astype(np.float64)), [0, 1, 2, 3])
    # a traced function's argument too (it was a parse error of the dtype, `>`)
    with pytest.raises(TdslCallError, match=r"argument `q` has non-native byte order \(>f8\)"):
        tdsl.trace(lambda q: q * 2)(swapped)


@pytest.mark.parametrize("dtype", [">f4", ">i8", np.dtype(">f8")], ids=str)
def test_a_compile_for_non_native_byte_order_is_refused(dtype: Any) -> None:
    """``dtypes=">f4"`` compiled for ``<f4``, and the call with the ``>f4`` array it named
    then failed with "wrong dtype" (found by fuzzing the API): it is refused, saying
    what to name and how to convert."""
    with pytest.raises(TdslTypeError, match=r"non-native byte order .*name `(float|int)"):
        tdsl.compile("x + 1", {"x": (4,)}, dtype)


def test_a_float_budget_is_refused_saying_an_int_is_needed() -> None:
    with pytest.raises(TdslOptionError, match=r"an int, not the float 100000.0: write 100000"):
        JITTensorKernel(memory_budget=1e5)
    with pytest.raises(TdslOptionError, match=r"must be a positive number of elements, not 0.5"):
        JITTensorKernel(memory_budget=0.5)


def test_input_names_may_shadow_builtins() -> None:
    jit = JITTensorKernel(threads=1)
    a = np.arange(4.0) - 2
    for _ in range(2):  # the second call takes the one-shot fast path
        np.testing.assert_array_equal(jit("relu(len) + abs", len=a, abs=a), np.maximum(a, 0) + a)


def test_a_compiled_kernel_does_not_pickle_and_says_what_to_send_instead() -> None:
    import pickle

    kernel = tdsl.compile("relu(A) + 1", shapes={"A": (3,)})
    with pytest.raises(tdsl.TdslCallError, match="does not pickle") as err:
        pickle.dumps(kernel)
    assert "send the @tdsl.function or tdsl.trace function" in str(err.value)


def test_a_shape_of_more_elements_than_an_array_can_have_names_the_input() -> None:
    """(It was an error about the ``fallback-budget`` option, which no one had given.)"""
    with pytest.raises(tdsl.TdslOptionError) as err:
        tdsl.compile("A * 2.0", shapes={"A": (2**40, 2**40)})
    assert "the shape of `A`, (1099511627776, 1099511627776), has 1208925819614629174706176" in (
        str(err.value)
    )
    # a program's declared shapes as large: the default budget is capped, not refused
    kernel = tdsl.compile("def k(A: f32[1099511627776, 1099511627776]):\n    return A * 2.0\n")
    assert kernel.signature.startswith("k(A: f32[1099511627776, 1099511627776])")


def test_an_unknown_ir_stage_lists_the_stages() -> None:
    kernel = tdsl.compile("relu(A) + 1", shapes={"A": (3,)}, target="numpy")
    with pytest.raises(KeyError, match=r"no IR stage 'nope'; the stages: tensordsl, .*tiled"):
        kernel.ir["nope"]


def _fused() -> Any:
    return tdsl.fuse(tdsl.to_tensordsl("x + 1", shapes={"x": (4,)}))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: tdsl.compile("x+1", {"x": (4,)}, tile_sizes=4), "tile_sizes must be a sequence"),
        (
            lambda: tdsl.trace(lambda a: a + 1, tile_sizes=4)(np.ones(4)),
            "tile_sizes must be a sequence",
        ),
        (lambda: tdsl.function(tile_sizes=4), "tile_sizes must be a sequence"),
        (lambda: tdsl.tile(_fused(), tile_sizes=4), "`tile_sizes` (a size per dim) must be"),
        (lambda: tdsl.tile(None), "the module given to `tile` must be a ModuleOp"),
        (lambda: tdsl.parse(None), "the source given to `parse` must be a str"),
        (lambda: tdsl.to_tensordsl(None), "the source given to `to_tensordsl` must be"),
        (lambda: tdsl.to_tensordsl("x+1", shapes=[(4,)]), "`shapes` (input names to shapes)"),
        (lambda: tdsl.fuse(None), "the module given to `fuse` must be a ModuleOp"),
        (lambda: tdsl.emit_numpy(None), "the module given to `emit_numpy` must be"),
        (lambda: tdsl.fusion_report(None), "the module given to `fusion_report` must be"),
        (lambda: tdsl.explain_fusion("x"), "the module given to `explain_fusion` must be"),
        (
            lambda: tdsl.JITTensorKernel().compile_ir("func.func @main() {\n  func.return\n}", 5),
            "`shapes` (by input name or in order) must be a tuple or list",
        ),
    ],
)
def test_a_wrong_argument_type_is_an_option_error(call: Any, message: str) -> None:
    """Each was a bare TypeError or AttributeError from inside tdsl (found by fuzzing the
    library's API)."""
    with pytest.raises(TdslOptionError) as caught:
        call()
    assert message in str(caught.value)
