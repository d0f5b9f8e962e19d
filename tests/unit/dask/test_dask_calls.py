"""Compiled kernels called with Dask arrays, on the threaded scheduler.

Results are compared with NumPy; the graph is checked for what the plan
promises: task names that say which group runs, the multi-pass plan for rows
cut into chunks (no rechunk), a matmul's contraction made whole, kernels
compiled once per distinct chunk shape, and tasks that carry kernels as data.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import tdsl
from tdsl import JITTensorKernel, TdslCallError
from tdsl.dask import tasks
from tdsl.errors import TdslBudgetWarning, TdslIndexError
from tdsl.runtime.compile import native_unavailable_reason

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
key_split = pytest.importorskip("dask.utils").key_split

Array = np.ndarray[Any, Any]


@pytest.fixture(autouse=True)
def threads() -> Iterator[None]:
    with dask.config.set(scheduler="threads", num_workers=2):
        yield


JIT = JITTensorKernel(memory_budget=64, threads=1)


def rand(*shape: int, dtype: Any = np.float64, seed: int = 0) -> Array:
    return np.random.default_rng(seed + sum(shape)).uniform(-2, 2, shape).astype(dtype)


def softmax(x: Array, axis: int = -1) -> Array:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layernorm(x: Array) -> Array:
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5)


A, B, C, S = rand(10, 7, seed=1), rand(10, 7, seed=2), rand(10, 7, seed=3), rand(7, 7, seed=4)
W, b, v = rand(7, 5, seed=5), rand(5, seed=6), rand(7, seed=7)

CASES: list[tuple[str, dict[str, Array], Callable[[], Any]]] = [
    ("relu(A) + B * C - A", {"A": A, "B": B, "C": C}, lambda: np.maximum(A, 0) + B * C - A),
    ("softmax(A)", {"A": A}, lambda: softmax(A)),
    ("sum(exp(A) * B, axis=1)", {"A": A, "B": B}, lambda: np.sum(np.exp(A) * B, axis=1)),
    ("mean(A, axis=0)", {"A": A}, lambda: A.mean(axis=0)),
    ("relu(A @ W + b)", {"A": A, "W": W, "b": b}, lambda: np.maximum(A @ W + b, 0)),
    ("softmax(A @ W + b)", {"A": A, "W": W, "b": b}, lambda: softmax(A @ W + b)),
    ("layernorm(A) * v", {"A": A, "v": v}, lambda: layernorm(A) * v),
    ("log_softmax(A, axis=0)", {"A": A}, lambda: np.log(softmax(A, axis=0))),
    ("A - max(A, axis=0)", {"A": A}, lambda: A - A.max(axis=0)),
    ("sum(A)", {"A": A}, lambda: A.sum()),
    ("S + transpose(S)", {"S": S}, lambda: S + S.T),
    ("transpose(A) @ B", {"A": A, "B": B}, lambda: A.T @ B),
    # views, einsum and created arrays: the language of issue 18 over chunks
    ("swapaxes(A, 0, 1) @ A", {"A": A}, lambda: A.T @ A),
    ("sum(expand_dims(A, 1) * B, axis=0)", {"A": A, "B": B}, lambda: (A[:, None] * B).sum(0)),
    ("squeeze(mean(A, axis=1, keepdims=True), 1)", {"A": A}, lambda: A.mean(axis=1)),
    ("einsum('ij,kj->ik', A, B)", {"A": A, "B": B}, lambda: A @ B.T),
    ("einsum('ij,ij->j', A, B)", {"A": A, "B": B}, lambda: (A * B).sum(0)),
    ("softmax(S + (1 - tri(7)) * -1e10)", {"S": S}, lambda: softmax(S + (1 - np.tri(7)) * -1e10)),
    ("tril(A, 1) + arange(7.0)", {"A": A}, lambda: np.tril(A, 1) + np.arange(7.0)),
]

CHUNKINGS = {"rows": (4, 7), "columns": (10, 3), "both": (3, 2)}
"""Chunk sizes of the 2-d inputs (uneven last chunks); 1-d inputs take the second."""


def chunked(ins: dict[str, Array], chunks: tuple[int, int]) -> dict[str, Any]:
    return {k: da.from_array(x, chunks=chunks[-x.ndim :]) for k, x in ins.items()}


@pytest.mark.parametrize("chunking", sorted(CHUNKINGS))
@pytest.mark.parametrize(("expr", "ins", "ref"), CASES, ids=[c[0] for c in CASES])
def test_results_equal_numpy(
    expr: str, ins: dict[str, Array], ref: Callable[[], Any], chunking: str, matches: Any
) -> None:
    result = JIT(expr, **chunked(ins, CHUNKINGS[chunking]))
    assert isinstance(result, da.Array)
    want = np.asarray(ref())
    assert result.shape == want.shape and result.dtype == want.dtype
    matches(np.asarray(result.compute()), want)


def test_numpy_and_dask_inputs_mix(matches: Any) -> None:
    x = da.from_array(A, chunks=(3, 7))
    result = JIT("softmax(x @ w + b)", x=x, w=W, b=b)  # weights in memory, rows chunked
    assert result.chunks == ((3, 3, 3, 1), (5,))
    matches(result.compute(), softmax(A @ W + b))


def test_empty_blocks_are_dropped_before_the_groups_run(matches: Any) -> None:
    """Blocks of zero rows (Dask's slicing leaves them) are dropped: a `max` or `argmax`
    across blocks failed on one ("reduces zero elements", about the block; found by
    fuzzing)."""
    x = np.random.default_rng(0).standard_normal((37, 23))
    blocks = da.from_array(x, chunks=((0, 10, 0, 27), (23,)))
    jit = JITTensorKernel()
    for expr, want in (
        ("max(x, axis=0)", x.max(axis=0)),
        ("argmax(x, axis=0)", x.argmax(axis=0)),
        ("softmax(x, axis=0)", np.exp(x - x.max(0)) / np.exp(x - x.max(0)).sum(0)),
    ):
        matches(jit(expr, x=blocks).compute(scheduler="sync"), want)


def test_a_gather_with_an_empty_result_over_chunks() -> None:
    """A 2-d index array with no elements, or another axis of no elements: the result is
    empty, and an index out of range is still an error (Dask's reshape of no elements
    raised its own NotImplementedError; found by fuzzing)."""
    jit = JITTensorKernel()
    x = da.from_array(np.arange(12.0).reshape(4, 3), chunks=(2, 1))
    got = jit("take(x, i, axis=1)", x=x, i=np.zeros((0, 3), np.int64)).compute()
    assert got.shape == (4, 0, 3)
    empty = da.from_array(np.zeros((4, 0, 3)), chunks=(2, 1, 3))
    assert jit("take(x, i, axis=2)", x=empty, i=np.array([[2, 0]])).compute().shape == (4, 0, 1, 2)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 2 with size 3"):
        jit("take(x, i, axis=2)", x=empty, i=np.array([[5, 0]])).compute()


def test_empty_joins_and_gathers_over_chunks() -> None:
    """Values of no elements (found by fuzzing): a 0-d index into an empty operand (the
    empty result's reshape dropped no axis: "Provided chunks have 2 dims"); a join of
    empty parts beside another operand (a rechunk keeps none of its empty chunks, and a
    task read a block that did not exist); a gather from such a join (Dask's take of a
    Dask array of NumPy's indices lost a block)."""
    jit = JITTensorKernel(target="numpy")
    empty = np.zeros((2, 1, 0), np.float32)
    assert jit("x[:, i]", x=da.from_array(empty), i=np.array(0)).compute().shape == (2, 0)
    x, b = np.zeros(0, np.float32), np.zeros(0, np.float32)
    got = jit("concatenate((x, x)) + b", x=da.from_array(x), b=da.from_array(b)).compute()
    assert got.shape == (0,) and got.dtype == np.float32
    rows = da.from_array(np.zeros((0, 2), np.float32))
    got = jit("concatenate((x, x))[:, i]", x=rows, i=np.array([1, 0])).compute()
    assert got.shape == (0, 2)
    v = np.ones((2, 3), np.float32)
    got = jit("concatenate((x, x)) @ v + 1", x=rows, v=v).compute()
    assert got.shape == (0, 3)


@pytest.mark.parametrize("chunked", [False, True])
def test_a_gathers_bad_index_is_located_in_its_source(chunked: bool) -> None:
    """As on NumPy arrays: ``file:line:col``, the line and a caret, whether the indices are
    known when the graph is built (NumPy's) or only when a task runs (chunked Dask
    indices); the error had no location at all."""
    kernel = tdsl.compile("def f(x: f32[8, 4], i: i64[3]):\n    return take(x, i, axis=0) * 2\n")
    x = da.from_array(np.ones((8, 4), np.float32), chunks=(4, 4))
    i = np.array([0, 9, 1])
    with pytest.raises(TdslIndexError) as info:
        kernel(x, da.from_array(i, chunks=2) if chunked else i).compute(scheduler="sync")
    assert str(info.value) == (
        "<expr>:2:12: error: index 9 is out of bounds for axis 0 with size 8\n"
        "    return take(x, i, axis=0) * 2\n"
        "           ^^^^^^^^^^^^^^^^^^"
    )


def test_the_result_is_lazy_until_computed() -> None:
    expr = "tanh(A) * 3 - B"
    x = da.from_array(rand(11, 6, seed=11), chunks=(5, 4))
    y = da.from_array(rand(11, 6, seed=12), chunks=(5, 4))
    before = tasks.cache_info().misses
    result = JIT(expr, A=x, B=y)
    assert tasks.cache_info().misses == before, "no chunk kernel compiles before compute"
    assert result.chunks == ((5, 5, 1), (4, 2))
    result.compute()
    assert tasks.cache_info().misses == before + 4  # (5, 4), (5, 2), (1, 4), (1, 2)


def test_each_chunk_shape_compiles_once() -> None:
    x = da.from_array(rand(9, 9, seed=13), chunks=(4, 4))
    result = JIT("sigmoid(A) + A", A=x)
    result.compute()
    after = tasks.cache_info()
    result.compute()
    again = tasks.cache_info()
    assert again.misses == after.misses and again.hits == after.hits + 9  # 9 chunks
    assert again.currsize == again.misses, "no kernel was compiled twice"


def layer_names(result: Any) -> set[str]:
    return {key_split(key) for key in dict(result.__dask_graph__())}


def tdsl_layers(result: Any) -> set[str]:
    return {name for name in layer_names(result) if name.startswith("tdsl")}


def test_task_names_say_which_group_runs() -> None:
    whole_rows = JIT("softmax(A) * 2", A=da.from_array(A, chunks=(4, 7)))
    assert tdsl_layers(whole_rows) == {"tdsl_g0"}
    cut_rows = JIT("softmax(A) * 2", A=da.from_array(A, chunks=(4, 3)))
    assert tdsl_layers(cut_rows) == {
        "tdsl_g0_pass1",  # the row maxima's partials
        "tdsl_g0_pass1_max",
        "tdsl_g0_pass1_max-aggregate",
        "tdsl_g0_pass3",  # sums of exp(x - max)
        "tdsl_g0_pass3_sum",
        "tdsl_g0_pass3_sum-aggregate",
        "tdsl_g0_pass5",  # the normalizing map
    }


def test_rows_cut_into_chunks_run_the_multi_pass_plan_without_rechunking(matches: Any) -> None:
    x = da.from_array(rand(6, 40, seed=14), chunks=(3, 8))
    result = JIT("softmax(x)", x=x)
    assert result.chunks == x.chunks
    assert not any("rechunk" in name for name in layer_names(result))
    matches(result.compute(), softmax(x.compute()))


def test_only_the_contraction_is_made_whole(matches: Any) -> None:
    x = da.from_array(A, chunks=(4, 3))
    w = da.from_array(W, chunks=(3, 2))
    result = JIT("relu(x @ w + b)", x=x, w=w, b=b)
    # rows follow x, columns follow w: only the contraction (7) is one chunk
    assert result.chunks == ((4, 4, 2), (2, 2, 1))
    graph = dict(result.__dask_graph__())
    kernels = [k for k in graph if key_split(k) == "tdsl_g0"]
    assert len(kernels) == 9  # one task per block of rows and columns
    matches(result.compute(), np.maximum(A @ W + b, 0))


def test_softmax_of_a_matmul_with_columns_cut_runs_in_parts(matches: Any) -> None:
    x = da.from_array(A, chunks=(5, 7))
    w = da.from_array(W, chunks=(7, 2))
    result = JIT("softmax(x @ w + b)", x=x, w=w, b=b)
    names = tdsl_layers(result)
    # the matmul is never computed twice: the first part keeps it, the second
    # normalizes its result over column chunks
    assert {"tdsl_g0.0_pass1", "tdsl_g0.1_pass1", "tdsl_g0.1_pass3"} <= names
    assert result.chunks == ((5, 5), (2, 2, 1))
    matches(result.compute(), softmax(A @ W + b))


def test_float16_sums_and_means_accumulate_in_float32() -> None:
    x = np.array([[60000, 1], [60000, 2], [1, 3]], dtype=np.float16)
    mean = JIT("mean(x, axis=0)", x=da.from_array(x, chunks=(1, 2))).compute()
    assert mean.dtype == np.float16
    np.testing.assert_array_equal(mean, np.mean(x, axis=0))  # 40000, not inf
    y = rand(64, 3, dtype=np.float16, seed=15)
    total = JIT("sum(y, axis=0)", y=da.from_array(y, chunks=(5, 3))).compute()
    want = np.sum(y.astype(np.float32), axis=0).astype(np.float16)
    np.testing.assert_allclose(total.astype(np.float32), want.astype(np.float32), rtol=1e-3)


def test_scalars_and_zero_d_arrays() -> None:
    x = da.from_array(A, chunks=(4, 4))
    np.testing.assert_allclose(JIT("x * s + 1", x=x, s=2.5).compute(), A * 2.5 + 1)
    np.testing.assert_allclose(JIT("x * s", x=x, s=np.float64(3)).compute(), A * 3)
    zero_d = da.from_array(np.array(4.0))
    np.testing.assert_allclose(JIT("x - s", x=x, s=zero_d).compute(), A - 4.0)
    total = JIT("sum(x)", x=x)
    assert total.shape == () and total.chunks == ()
    np.testing.assert_allclose(total.compute(), A.sum())


def test_a_program_with_several_results() -> None:
    program = textwrap.dedent(
        """\
        def stats(x: f64[10, 7]):
            p = softmax(x)
            return p, sum(p * x, axis=0), x
        """
    )
    kernel = JIT.compile(program)
    x = da.from_array(A, chunks=(3, 7))
    p, weighted, same = kernel(x)
    assert same is x
    np.testing.assert_allclose(p.compute(), softmax(A))
    np.testing.assert_allclose(weighted.compute(), np.sum(softmax(A) * A, axis=0))


def test_compute_persist_store_and_optimize_work(matches: Any) -> None:
    x = da.from_array(A, chunks=(4, 3))
    result = JIT("sum(exp(x) * x, axis=1)", x=x)
    want = np.sum(np.exp(A) * A, axis=1)
    (optimized,) = dask.optimize(result)
    matches(optimized.compute(), want)
    persisted = result.persist()
    matches(persisted.compute(), want)
    target = np.zeros_like(want)
    da.store(result, target)  # written chunk by chunk, as out of core
    matches(target, want)


def test_tasks_carry_kernels_as_data() -> None:
    x = da.from_array(A, chunks=(4, 3))
    result = JIT("softmax(x) + mean(x, axis=0)", x=x)
    graph = dict(result.__dask_graph__())
    specs = specs_of(result)
    assert specs and all(type(s.source) is str and "func.func @main" in s.source for s in specs)
    # the standard pickle, which cannot pickle the generated kernels' code: the graph
    # holds none, only data and functions importable by name
    blob = pickle.dumps(graph)
    assert b"CompiledKernel" not in blob
    rebuilt = pickle.loads(blob)
    assert set(rebuilt) == set(graph)


def specs_of(result: Any) -> list[tasks.KernelSpec]:
    """The kernel specs the tasks of ``result``'s graph carry."""
    specs: list[tasks.KernelSpec] = []

    def visit(value: Any) -> None:
        if isinstance(value, tasks.KernelSpec):
            specs.append(value)
        elif isinstance(value, tuple | list):
            for item in value:
                visit(item)
        elif hasattr(value, "args") and hasattr(value, "func"):  # partial, dask Task
            visit(value.func)
            visit(list(value.args))
            visit(list(getattr(value, "keywords", {}).values()))

    for task in dict(result.__dask_graph__()).values():
        visit(task)
    return specs


NATIVE_REASON = native_unavailable_reason()


@pytest.mark.parametrize(
    "target",
    [
        "numpy",
        pytest.param(
            "native",
            marks=pytest.mark.skipif(NATIVE_REASON is not None, reason=str(NATIVE_REASON)),
        ),
    ],
)
def test_tasks_run_the_target_the_jit_picked(target: str, matches: Any) -> None:
    jit = JITTensorKernel(memory_budget=64, threads=1, target=target)
    kernel = jit.compile("softmax(x) + mean(x, axis=0)", {"x": (10, 7)}, "f64")
    assert kernel.target == target
    result = kernel(da.from_array(A, chunks=(4, 3)))
    specs = specs_of(result)
    assert specs and {s.options.target for s in specs} == {target}
    assert {s.options.threads for s in specs} == {1}  # the scheduler runs tasks in parallel
    tasks.cache_clear()
    matches(result.compute(), softmax(A) + A.mean(axis=0))
    assert set(tasks.compiled_targets()) == {target}


@pytest.mark.skipif(NATIVE_REASON is not None, reason=str(NATIVE_REASON))
def test_auto_picks_once_for_the_whole_kernel() -> None:
    # 256x256 is native under auto; its 64x64 chunks alone would be numpy (4096 < 16384
    # elements), but every task runs what the JIT picked for the whole kernel
    x = rand(256, 256, seed=16)
    kernel = JITTensorKernel(threads=1, target="auto").compile("exp(x) * 2", {"x": x.shape}, "f64")
    assert kernel.target == "native"
    result = kernel(da.from_array(x, chunks=64))
    assert {s.options.target for s in specs_of(result)} == {"native"}
    np.testing.assert_allclose(result.compute(), np.exp(x) * 2)
    small = JITTensorKernel(threads=1, target="auto").compile("exp(x) * 2", {"x": (8, 8)}, "f64")
    assert small.target == "numpy"
    assert {s.options.target for s in specs_of(small(da.from_array(x[:8, :8], chunks=4)))} == {
        "numpy"
    }


def test_bad_arguments_are_call_errors() -> None:
    kernel = JIT.compile("relu(x) * s", {"x": (10, 7)}, {"x": "f64", "s": float})
    x = da.from_array(A, chunks=4)
    with pytest.raises(TdslCallError, match=r"wrong shape: expected f64\[10, 7\], got a Dask"):
        kernel(x[:5], 1.0)
    with pytest.raises(TdslCallError, match=r"wrong dtype: expected f64\[10, 7\], got a Dask"):
        kernel(x.astype(np.float32), 1.0)
    with pytest.raises(TdslCallError, match="weak scalar"):
        kernel(x, da.from_array(np.array(1.0)))
    with pytest.raises(TdslCallError, match="cannot be given with Dask arrays"):
        kernel(x, 1.0, out=np.empty((10, 7)))
    with pytest.raises(TdslCallError, match="unknown chunk sizes"):
        kernel(x[x[:, 0] > 0], 1.0)
    with pytest.raises(TdslCallError, match="unknown chunk sizes"):
        JIT("relu(x)", x=x[x[:, 0] > 0])
    with pytest.raises(TdslCallError, match="missing argument `s`"):
        kernel(x)


def test_import_tdsl_never_imports_dask() -> None:
    # a fresh process: importing tdsl, compiling and calling kernels on both targets, and
    # importing the Dask-free parts of tdsl.dask load no module of dask or distributed
    code = (
        "import sys, numpy as np, tdsl, tdsl.jit\n"
        "tdsl.jit.jit_tensor('relu(A) + B', A=np.ones(4), B=np.ones(4))\n"
        "from tdsl.runtime.compile import native_unavailable_reason\n"
        "native = () if native_unavailable_reason() else ('native',)\n"
        "for target in ('numpy', *native):\n"
        "    jit = tdsl.JITTensorKernel(target=target)\n"
        "    jit('softmax(A) + B', A=np.ones((200, 200)), B=np.ones((200, 200)))\n"
        "import tdsl.dask, tdsl.dask.plan, tdsl.dask.tasks\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_traced_function_runs_on_dask_arrays() -> None:
    """``tdsl.trace`` takes a Dask array as a leaf (its shape and dtype, not its values)
    and runs the kernel on it as any kernel runs on Dask arrays; a NumPy array of the
    same shape and dtype runs the same kernel."""
    import tdsl

    def centered(x, w, s):
        h = np.maximum(x @ w, 0) * s
        return h - h.mean(axis=-1, keepdims=True)

    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((200, 16)), rng.standard_normal((16, 8))
    traced = tdsl.trace(centered)
    got = traced(da.from_array(x, chunks=(50, 16)), w, 0.5)
    assert isinstance(got, da.Array)
    np.testing.assert_allclose(got.compute(), centered(x, w, 0.5), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(traced(x, w, 0.5), centered(x, w, 0.5), rtol=1e-12, atol=1e-12)
    assert len(traced.kernels) == 1


def standardized_argmax(x: Array) -> Array:
    d = x - x.mean(axis=0, keepdims=True)
    return (d / np.sqrt((d * d).mean(axis=0, keepdims=True) + 1e-5)).argmax(axis=1)


@pytest.mark.parametrize(
    ("budget", "chunks"), [(256, (59, 75)), (256, (59, 17)), (16, (59, 75)), (256, (20, 75))]
)
def test_a_later_pass_reads_the_sums_an_earlier_pass_made(
    budget: int, chunks: tuple[int, int]
) -> None:
    """A pass that needs a value an earlier pass computed from a sum over its block (the
    column means here) reads it instead of summing again: each step's kernel tiles its
    block under the budget by itself, so summing again may add in another order, and
    ``argmax``'s comparison of a value with its maximum then matches nothing (it gave
    the out-of-range index 75 for a quarter of the rows; found by a fuzzer)."""
    import tdsl

    for dtype in (np.float32, np.float64):
        x = np.random.default_rng(0).standard_normal((59, 75)).astype(dtype)
        traced = tdsl.trace(standardized_argmax, target="numpy", memory_budget=budget)
        with np.errstate(all="ignore"):
            got = traced(da.from_array(x, chunks=chunks)).compute()
        np.testing.assert_array_equal(got, standardized_argmax(x))


YIELDS_A_CONSTANT = (
    "func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {\n"
    '  %0, %1 = kernel.tile(%x) group "g0" space [4, 8] iterators ["parallel", "parallel"] tiles [4, 8] scratch [] sweeps [0]\n'
    "    ins [affine_map<(d0, d1) -> (d0, d1)>]\n"
    "    outs [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>] : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<f32>) {\n"
    "  ^bb0(%x1: tensor<4x8xf32>):\n"
    "    %2 = tensordsl.exp %x1 : tensor<4x8xf32>\n"
    "    %3 = tensordsl.constant dense<2.000000e+00> : tensor<f32>\n"
    "    kernel.yield %2, %3 : tensor<4x8xf32>, tensor<f32>\n"
    "  }\n"
    '  %4 = kernel.tile(%0, %1) group "g1" space [4, 8] iterators ["parallel", "parallel"] tiles [4, 8] scratch [] sweeps [0]\n'
    "    ins [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>]\n"
    "    outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32> {\n"
    "  ^bb0(%a: tensor<4x8xf32>, %c: tensor<f32>):\n"
    "    %5 = tensordsl.mul %a, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>\n"
    "    kernel.yield %5 : tensor<4x8xf32>\n"
    "  }\n"
    "  func.return %4 : tensor<4x8xf32>\n"
    "}\n"
)
YIELDS_ITS_INPUT = (
    "func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {\n"
    '  %0, %1 = kernel.tile(%x) group "g0" space [4, 8] iterators ["parallel", "parallel"] tiles [4, 8] scratch [] sweeps [0]\n'
    "    ins [affine_map<(d0, d1) -> (d0, d1)>]\n"
    "    outs [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>] : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {\n"
    "  ^bb0(%x1: tensor<4x8xf32>):\n"
    "    %2 = tensordsl.exp %x1 : tensor<4x8xf32>\n"
    "    kernel.yield %2, %x1 : tensor<4x8xf32>, tensor<4x8xf32>\n"
    "  }\n"
    "  func.return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>\n"
    "}\n"
)
YIELDS_TWICE = YIELDS_ITS_INPUT.replace("kernel.yield %2, %x1", "kernel.yield %2, %2")


@pytest.mark.parametrize("text", [YIELDS_A_CONSTANT, YIELDS_ITS_INPUT, YIELDS_TWICE])
def test_group_results_no_op_computes_are_passed_through(text: str) -> None:
    """A group that yields a constant (``tdsl-tile`` splits such groups), one of its
    inputs, or one value twice: Dask raised a KeyError (found by fuzzing)."""
    kernel = JITTensorKernel(target="numpy").compile_ir(text)
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    want = kernel(x)
    got = kernel(da.from_array(x, chunks=(2, 4)))
    for g, w in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, want)), strict=True):
        np.testing.assert_array_equal(g.compute(), w)


DIMS_SWAPPED = (
    "func.func @main(%x: tensor<40x24xf32>) -> tensor<40x24xf32> {\n"
    '  %0 = kernel.tile(%x) group "g0" space [24, 40] iterators ["parallel", "reduction"] tiles [24, 40] scratch [memref<24xf32>] sweeps [0, 0]\n'
    "    ins [affine_map<(d0, d1) -> (d1, d0)>]\n"
    "    outs [affine_map<(d0, d1) -> (d1, d0)>] : (tensor<40x24xf32>) -> tensor<40x24xf32> {\n"
    "  ^bb0(%x1: tensor<40x24xf32>):\n"
    "    %1 = tensordsl.mean %x1 axis = 0 : tensor<40x24xf32> -> tensor<24xf32>\n"
    "    %2 = tensordsl.sub %x1, %1 : (tensor<40x24xf32>, tensor<24xf32>) -> tensor<40x24xf32>\n"
    "    kernel.yield %2 : tensor<40x24xf32>\n"
    "  }\n"
    "  func.return %0 : tensor<40x24xf32>\n"
    "}\n"
)


def test_a_group_whose_dims_are_in_another_order_is_a_located_refusal() -> None:
    """(A raw PlanError; found by fuzzing.)  NumPy arrays run it as recorded."""
    from tdsl.errors import TdslIRError

    kernel = JITTensorKernel(target="numpy").compile_ir(DIMS_SWAPPED)
    x = np.random.default_rng(0).standard_normal((40, 24)).astype(np.float32)
    np.testing.assert_allclose(kernel(x), x - x.mean(axis=0), atol=1e-6)
    with pytest.raises(TdslIRError, match="tile the group again"):
        kernel(da.from_array(x, chunks=(20, 12)))


def test_a_plan_of_tiny_tiles_is_cut_into_at_most_64_blocks() -> None:
    """A flat argmax at budget 1000 runs the plan of least memory, whose tiles along the
    two reduction dims are a few elements: cut at them, one chunk of 40x40 made 10,240
    tasks (243k for 103x164: a minute to compute; found by fuzzing the Dask path).  The
    blocks are now at most 64 in all, each block's kernel tiling itself under the budget."""
    x = np.random.default_rng(0).random((40, 40)) < 0.5
    source = "argmax(astype(x, 'float64')[1:-1] * 2 - 1)"
    jit = JITTensorKernel(memory_budget=1000, target="numpy", threads=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)  # (no fusion plan fits 1000)
        want = jit(source, x=x)
        result = jit(source, x=da.from_array(x, chunks=x.shape))
    kernels = [k for k in dict(result.__dask_graph__()) if key_split(k).endswith("_pass3")]
    assert 1 < len(kernels) <= 64
    assert result.compute(scheduler="sync") == want == np.argmax(x[1:-1] * 2.0 - 1)


@pytest.mark.parametrize("source", ["var(x, axis=0)", "argmax(x)"])
def test_the_64_blocks_count_the_blocks_the_inputs_chunks_make(source: str) -> None:
    """``var(x, axis=0)`` of 1024x1024 in 64 column chunks at budget 4096: the plan's 64
    row blocks came on top of the chunks, 27,456 tasks and 3.3 s where one chunk took
    429 and 0.13 s (found by fuzzing Dask with edited plans).  The inputs' blocks count
    towards the 64 now."""
    x = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    jit = JITTensorKernel(memory_budget=4096, target="numpy", threads=1)
    one = jit(source, x=da.from_array(x, chunks=x.shape))
    columns = jit(source, x=da.from_array(x, chunks=(1024, 16)))
    assert len(dict(columns.__dask_graph__())) <= len(dict(one.__dask_graph__()))
    want = x.var(axis=0) if source.startswith("var") else np.argmax(x)
    np.testing.assert_allclose(columns.compute(scheduler="sync"), want, rtol=1e-4, atol=1e-6)


def test_a_masked_or_byte_swapped_dask_array_is_refused_at_the_call() -> None:
    """A Dask array of masked blocks was taken, and failed only when computed, naming an
    inner argument (`a0`); a big-endian one was said to be of the very dtype expected
    (found by fuzzing the API)."""
    kernel = JITTensorKernel(target="numpy", threads=1).compile("x + 1", {"x": (10, 7)}, "f64")
    x = da.from_array(A, chunks=(4, 7))
    with pytest.raises(TdslCallError, match=r"argument `x` .* numpy\.ma\.MaskedArray blocks"):
        kernel(da.ma.masked_greater(x, 1.0))
    with pytest.raises(TdslCallError, match=r"got a Dask array of >f8\[10, 7\] \(non-native"):
        kernel(x.astype(">f8"))
    np.testing.assert_array_equal(kernel(da.ma.filled(da.ma.masked_greater(x, 9.0), 0)), A + 1)
